"""How many of the minimizer's failing candidates its static check keeps from the worker, and what runnable ones it
refuses.

For each program, every candidate `delete_statements` proposes in its first round (runs of 1, 2, 4, ... statements of
every block deleted) that passed the old check (every name read is bound somewhere in the module) is run eagerly,
here, in this process: it runs (the entry point returns on its inputs) or fails. Each is then asked whether the
static check (`minimizer.syntax.keeps_style`: names by scope and order, deleted definitions the rest relies on,
input tuples that fit) lets it through. Printed per program: let through and runs / let through and fails (a
worker check spent on an error) / refused but runs (a candidate lost) / refused and fails (a check saved).

    PYTHONPATH=. nice -n 19 python benchmarks/minimize_static_check.py [PROGRAM.py ...]

Without arguments: the minimizer corpus's six original programs and its tuning part, and the two models of
benchmarks/static_check_models/ (written for this check); never the corpus's held-out part. Eager runs only, on the
programs' small inputs: a minute or two.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import io
import sys
from pathlib import Path

import tomllib

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from minimizer.passes import delete_statements  # noqa: E402
from minimizer.reducer import PredicateOracle, Problem, Reducer  # noqa: E402
from minimizer.syntax import canonical, defined_names, keeps_style, used_names  # noqa: E402

BUILTINS = frozenset(dir(builtins)) | {"__name__", "__file__"}


def default_programs() -> list[Path]:
    corpus = tomllib.loads((HERE / "minimize_corpus" / "corpus.toml").read_text())
    names = [name for name, meta in corpus.items() if meta.get("part", "tuning") == "tuning"]
    return [HERE / "minimize_corpus" / f"{n}.py" for n in names] + sorted((HERE / "static_check_models").glob("*.py"))


def runs(source: str) -> bool:
    """Does the program load and its entry point return on its inputs (eagerly, output swallowed)?"""
    namespace: dict[str, object] = {"__name__": "__candidate__"}
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            exec(compile(source, "candidate.py", "exec", dont_inherit=True), namespace)  # not our __future__
            made = namespace["inputs"]
            args = made() if callable(made) else made
            namespace["fn"](*args)  # type: ignore[operator]
    except Exception:
        return False
    return True


def candidates(source: str) -> list[str]:
    """delete_statements' first round: each run of statements of each block deleted, as the pass proposes them (an
    oracle that refuses everything, and no static filter, so that every one is asked)."""
    asked: dict[str, None] = {}
    oracle = PredicateOracle(lambda candidate: asked.setdefault(candidate) is not None)
    Reducer([delete_statements], max_rounds=1).run(Problem(source, oracle, plausible=lambda candidate: True))
    return list(asked)


def score(path: Path) -> dict[str, int]:
    source = canonical(path.read_text())
    plausible = keeps_style(source)
    counts = dict.fromkeys(("through, runs", "through, fails", "refused, runs", "refused, fails"), 0)
    for candidate in candidates(source):
        tree = ast.parse(candidate)
        if not used_names(tree) <= defined_names(tree) | BUILTINS:
            continue  # the old check refused it too
        key = f"{'through' if plausible(candidate) else 'refused'}, {'runs' if runs(candidate) else 'fails'}"
        counts[key] += 1
    return counts


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or default_programs()
    total = dict.fromkeys(("through, runs", "through, fails", "refused, runs", "refused, fails"), 0)
    print(f"{'program':<32} {'through, runs':>14} {'through, fails':>15} {'refused, runs':>14} {'refused, fails':>15}")
    for path in paths:
        counts = score(path)
        print(f"{path.stem:<32} " + " ".join(f"{v:>{len(k)}}" for k, v in counts.items()), flush=True)
        total = {k: total[k] + counts[k] for k in total}
    print(f"{'total':<32} " + " ".join(f"{v:>{len(k)}}" for k, v in total.items()))
    fails = total["through, fails"] + total["refused, fails"]
    print(
        f"of {fails} candidates that fail to run, the static check refuses {total['refused, fails']}; it refuses"
        f" {total['refused, runs']} of {total['through, runs'] + total['refused, runs']} that run"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
