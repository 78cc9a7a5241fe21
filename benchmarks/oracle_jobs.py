"""The oracle's calibration and evaluation jobs: each one program checked as a user checks it.

A job names a program of one of four corpora, the part it belongs to (benchmarks/oracle_split.py), what the
oracle should say (a benign program: match, benign, precision-cast, rng or eager-inaccurate; a fault: divergent),
the input seed, and which of its outputs it returns:
- `ordinary`: benchmarks/ordinary_programs.py (and oracle_fresh.py's, oracle_eval3.py's), benign;
- `family`: the one-ULP fault families of benchmarks/oracle_corpus.py, oracle_fresh.py and oracle_eval3.py. The
  fault is written into Inductor (benchmarks/inductor_faults.py) for the compiled run only; the program is the
  clean variant, which eager computes exactly as the program as written. `final`: it returns its final output
  only, as users do; `own`: its final output and the value of the fault's own op (the figure of the old
  program-variant benchmark). Each has a clean twin (no fault installed), benign;
- `realistic`: oracle_corpus's benign programs of realistic size (blocks, conv nets, reductions), benign;
- `zoo`: transformers models from small configs in bf16/fp16 and GPT-2/Llama at their real vocabularies, benign.

`source(job)` is the snippet the check runs: it imports this module and calls `program(...)`, which builds the
program and, for a fault, the `compile_kwargs` that pass the fault to Inductor (a snippet's own compile options:
every compile of the check takes them, its re-checks' included).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

CORPORA = ("ordinary", "family", "realistic", "zoo")
FAULT_SEEDS = (0, 1)  # input seeds per fault program and per clean twin
BENIGN_SEEDS = (0,)  # per ordinary, realistic and zoo program


@dataclass(frozen=True)
class Job:
    corpus: str
    name: str  # the program's name in its corpus
    group: str  # what the split hashes
    part: str  # "calibration" or "evaluation"
    expect: str  # "benign" or "fault"
    seed: int
    output: str = "final"  # "final" (as users return) or "own" (final and the fault's own value)
    family: str = ""  # a fault's family (oracle_corpus.FAMILIES), "" for a benign program
    config: dict[str, Any] = field(default_factory=dict)  # Inductor config the check runs with

    @property
    def id(self) -> str:
        key = json.dumps([self.corpus, self.name, self.expect, self.seed, self.output], sort_keys=True)
        return hashlib.sha256(key.encode()).hexdigest()[:16]

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "id": self.id}


def jobs(parts: Iterable[str], corpora: Iterable[str] = CORPORA) -> list[Job]:
    """Every job of the given parts and corpora, in a fixed order."""
    from oracle_split import family_group, part

    wanted, corpora = set(parts), set(corpora)
    out: list[Job] = []
    if "ordinary" in corpora:
        from oracle_fresh import fresh_ordinary, fresh_part
        from ordinary_programs import ordinary_programs

        for p in ordinary_programs():
            out += [Job("ordinary", p.name, p.group, part(p.group).value, "benign", s) for s in BENIGN_SEEDS]
        for p in fresh_ordinary():
            out += [Job("ordinary", p.name, p.group, fresh_part(p.group), "benign", s) for s in BENIGN_SEEDS]
        from oracle_eval3 import eval3_ordinary, eval3_part

        for p in eval3_ordinary():
            out += [Job("ordinary", p.name, p.group, eval3_part(p.group), "benign", s) for s in BENIGN_SEEDS]
    if "family" in corpora:
        import oracle_corpus
        from oracle_fresh import fresh_cases, fresh_part

        for fault, _ in oracle_corpus.one_ulp_cases():
            group = family_group(fault.name)
            out += _family_jobs(fault, group, part(group).value, ("final", "own"))
        for fault, _ in fresh_cases():
            group = family_group(fault.name)
            out += _family_jobs(fault, group, fresh_part(group), ("final",))
        from oracle_eval3 import eval3_cases, eval3_part

        for fault, _ in eval3_cases():
            group = family_group(fault.name)
            out += _family_jobs(fault, group, eval3_part(group), ("final", "own"))
    if "realistic" in corpora:
        for name, group in _realistic_names():
            out += [Job("realistic", name, group, part(group).value, "benign", s) for s in BENIGN_SEEDS]
    if "zoo" in corpora:
        for name, group in _zoo_names():
            out += [Job("zoo", name, group, part(group).value, "benign", s) for s in BENIGN_SEEDS]
    return [j for j in out if j.part in wanted]


def _family_jobs(fault: Any, group: str, where: str, outputs: tuple[str, ...]) -> list[Job]:
    """A fault program's jobs: per seed, the fault returning each of `outputs`, and its clean twin (benign)."""
    config = dict(fault.options or {})
    out = []
    for seed in FAULT_SEEDS:
        out += [Job("family", fault.name, group, where, "fault", seed, o, fault.family, config) for o in outputs]
        out.append(Job("family", fault.name, group, where, "benign", seed, "own", "", config))
    return out


def _realistic_names() -> list[tuple[str, str]]:
    import oracle_corpus

    names = [p.name for p in oracle_corpus.benign_programs()] + [c.name for c in oracle_corpus.realistic_benign_cases()]
    return [(n, _realistic_group(n)) for n in names]


def _realistic_group(name: str) -> str:
    for kind in ("transformer block", "conv net", "softmax", "layer norm", "sums", "ill-conditioned"):
        if name.startswith(kind) or kind in name:
            return (
                "transformer block"
                if kind == "transformer block"
                else "conv net"
                if kind == "conv net"
                else "reductions"
            )
    return "reductions"


def _zoo_names() -> list[tuple[str, str]]:
    import oracle_corpus

    return [(c.name, " ".join(c.name.split()[:2])) for c in oracle_corpus.zoo_models()]


def source(job: Job) -> str:
    """The snippet a check runs for this job."""
    return (
        "import sys\n"
        f"sys.path.insert(0, {str(HERE)!r})\n"
        "from oracle_jobs import program\n\n"
        f"fn, inputs, compile_kwargs = program({job.corpus!r}, {job.name!r}, {job.expect!r}, {job.output!r})\n"
    )


def program(
    corpus: str, name: str, expect: str, output: str
) -> tuple[Callable[..., Any], Callable[[], Any], dict[str, Any]]:
    """The program of a job as (fn, inputs, compile_kwargs); a fault's compile_kwargs carry its Inductor pass."""
    if corpus == "ordinary":
        from oracle_eval3 import eval3_ordinary
        from oracle_fresh import fresh_ordinary
        from ordinary_programs import ordinary_programs

        snippet = next(p for p in [*ordinary_programs(), *fresh_ordinary(), *eval3_ordinary()] if p.name == name)
        namespace: dict[str, Any] = {"__name__": "ordinary_program"}
        # dont_inherit: compiled as the user's file would be, not under this module's `from __future__ import
        # annotations` (string annotations send a snippet's @dataclass looking for a module that is not there)
        exec(compile(snippet.source, f"<{name}>", "exec", dont_inherit=True), namespace)
        return namespace["fn"], namespace["inputs"], {}
    import oracle_corpus

    if corpus == "family":
        fault, clean = next((f, c) for f, c in _family_cases(name) if f.name == name)
        kwargs: dict[str, Any] = {}
        if expect == "fault":
            import inductor_faults

            kwargs = {"options": {"post_grad_custom_post_pass": inductor_faults.FaultPass(name)}}
        return _outputs(clean.compiled, name, output), clean.inputs, kwargs
    if corpus == "realistic":
        found = [p for p in oracle_corpus.benign_programs() if p.name == name]
        if found:
            return found[0].fn, found[0].inputs, {}
        case = next(c for c in oracle_corpus.realistic_benign_cases() if c.name == name)
        return case.fn, case.inputs, {}
    case = next(c for c in oracle_corpus.zoo_models() if c.name == name)
    return case.fn, case.inputs, {}


def _family_cases(name: str) -> list[Any]:
    """The corpus a family program is in (building one corpus only: each builds its models)."""
    import oracle_corpus
    from oracle_eval3 import eval3_cases
    from oracle_fresh import fresh_cases

    for cases in (fresh_cases, eval3_cases):
        found = cases()
        if any(f.name == name for f, _ in found):
            return found
    return oracle_corpus.one_ulp_cases()


def final_index(name: str) -> int:
    """Which output of a family program is its final output: the shifted head's activation is its last op (out[1])."""
    return 1 if name.startswith("block ->") or name.startswith("block, layer-scaled") else 0


def _outputs(module: Any, name: str, output: str) -> Callable[..., Any]:
    import torch

    index = final_index(name)

    class Final(torch.nn.Module):
        """The program as a user returns it: its final output only."""

        def __init__(self) -> None:
            super().__init__()
            self.inner = module

        def forward(self, *args: Any) -> Any:
            return self.inner(*args)[index]

    return Final() if output == "final" else module
