"""The sample cases: each `sample_cases/<slug>.py` program with a `<slug>.toml` of metadata beside it.

The one loader of the gallery, for the web app's gallery, the gallery's tests and the benchmarks. Reading a
case never runs its code, so the web app can list the gallery safely; an unreadable case is reported as a
problem line, not raised, so one bad file never empties the gallery.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomllib

from engine import CheckOptions, OptionsError, Verdict

KINDS = ("real-bug", "benign", "precision-cast", "rng", "teaching")
REQUIRED = ("title", "summary", "category", "kind", "explanation", "expected_cpu", "expected_cuda")
SUMMARY_CHARS = 160


class CaseError(ValueError):
    """A case's metadata is missing or malformed."""


@dataclass(frozen=True)
class Variant:
    """The same case under other options, with its own expectations."""

    options: CheckOptions
    settings: Mapping[str, Any]  # the variant's own [options] as written, for labels
    expected_cpu: Verdict
    expected_cuda: Verdict
    expected_cpu_torch: str | None = None  # see SampleCase
    expected_cuda_torch: str | None = None
    # a change to the program the case's text suggests ("change randint to randn"): (text, replacement), applied once
    replace: tuple[str, str] | None = None
    label: str = ""  # what the variant changes, in words, for its button ("randn instead of randint")

    def source(self, program: str) -> str:
        """The case's program with this variant's change made."""
        if self.replace is None:
            return program
        return program.replace(self.replace[0], self.replace[1], 1)


FIGURES = (
    "numel",
    "mismatches",
    "max_ulp",
    "max_abs",
    "max_rel",
    "nan_mismatches",
    "inf_mismatches",
    "signed_zero_mismatches",
    "eager_ref_rms",
    "compiled_ref_rms",
    "eager_ref_max",
    "compiled_ref_max",
    "eager_value",
    "compiled_value",
    "stride",
    "compiled_stride",
)


@dataclass(frozen=True)
class Measured:
    """One figure a case's text quotes (as `{name}`), the leaf and field of the check it is measured from, and its
    value.

    The text never carries a bare figure: it is formatted from these when the case loads, and the gallery's test
    compares each with the check on the torch the case's CPU expectation binds on (tests/test_sample_cases.py).
    """

    name: str
    leaf: str
    figure: str  # a LeafResult field (FIGURES)
    value: int | float | str

    def matches(self, measured: object) -> bool:
        """Integers and text exactly; a float to the significant digits it is written with (1.19e-07: three)."""
        if isinstance(measured, list):  # strides, read back from JSON
            measured = tuple(measured)
        if isinstance(self.value, bool) or not isinstance(self.value, (int, float)):
            return str(measured) == str(self.value)
        if isinstance(measured, str):  # a worst element's value, kept as text
            try:
                measured = float(measured)
            except ValueError:
                return False
        if not isinstance(measured, (int, float)):
            return False
        if isinstance(self.value, int):
            return measured == self.value
        # the significant digits of the value as written (TOML keeps no trailing zeros: 8.6e9 reads back as
        # 8600000000.0)
        digits = len(repr(self.value).lower().split("e")[0].replace("-", "").replace(".", "").strip("0")) or 1
        return float(f"{measured:.{digits}g}") == self.value


@dataclass(frozen=True)
class SampleCase:
    slug: str
    path: Path
    title: str
    summary: str
    category: str
    kind: str
    explanation: str
    expected_cpu: Verdict
    expected_cuda: Verdict
    options: CheckOptions
    settings: Mapping[str, Any]  # the case's [options] as written, for labels
    variants: tuple[Variant, ...] = ()
    # the torch version (major.minor) each expectation was measured on; None: never measured, a hypothesis
    expected_cpu_torch: str | None = None
    expected_cuda_torch: str | None = None
    upstream: str | None = None
    cuda_only: bool = False
    slow: bool = False
    measured_cpu: tuple[Measured, ...] = ()  # the figures summary and explanation quote, measured on expected_cpu_torch
    # what makes a run costly on CPU ("4.4 GB, 15 s"), past what CI gives one test; the CPU test runs it only
    # with DIVERGENCE_HEAVY_CASES=1, the app and sweeps as any case
    heavy: str = ""

    @property
    def one_line(self) -> str:
        text = " ".join(self.summary.split())
        return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1].rstrip() + "…"

    def source(self) -> str:
        return self.path.read_text()


def default_directory() -> Path:
    configured = os.environ.get("DIVERGENCE_CASES")
    return Path(configured) if configured else Path(__file__).resolve().parent.parent / "sample_cases"


def load_cases(directory: Path | None = None) -> tuple[tuple[SampleCase, ...], tuple[str, ...]]:
    """Every readable case, sorted by category then title, and one problem line per case that is not."""
    directory = directory or default_directory()
    cases: list[SampleCase] = []
    problems: list[str] = []
    for meta in sorted(directory.glob("*.toml")):
        try:
            cases.append(load_case(meta))
        except CaseError as exc:
            problems.append(str(exc))
    cases.sort(key=lambda c: (c.category, c.title))
    return tuple(cases), tuple(problems)


def load_case(toml_path: Path) -> SampleCase:
    snippet = toml_path.with_suffix(".py")
    if not snippet.exists():
        raise CaseError(f"{toml_path.name}: no {snippet.name} beside it")
    try:
        data = tomllib.loads(toml_path.read_text())
    except (tomllib.TOMLDecodeError, OSError, UnicodeDecodeError) as exc:
        raise CaseError(f"{toml_path.name}: {exc}") from None
    missing = [k for k in REQUIRED if k not in data]
    if missing:
        raise CaseError(f"{toml_path.name}: missing {', '.join(missing)}")
    if data["kind"] not in KINDS:
        raise CaseError(f"{toml_path.name}: kind must be one of {', '.join(KINDS)}")
    settings = dict(data.get("options", {}))
    variants = tuple(
        Variant(
            _options(toml_path, _merged(settings, dict(v.get("options", {})))),
            dict(v.get("options", {})),
            _verdict(toml_path, v.get("expected_cpu", data["expected_cpu"])),
            _verdict(toml_path, v.get("expected_cuda", data["expected_cuda"])),
            _torch_version(toml_path, v.get("expected_cpu_torch", data.get("expected_cpu_torch"))),
            _torch_version(toml_path, v.get("expected_cuda_torch", data.get("expected_cuda_torch"))),
            _replacement(toml_path, snippet, v.get("replace")),
            str(v.get("label", "")),
        )
        for v in data.get("variants", [])
    )
    measured = _measured(toml_path, data.get("measured_cpu", {}))
    return SampleCase(
        slug=toml_path.stem,
        path=snippet,
        title=str(data["title"]),
        summary=_quoting(toml_path, str(data["summary"]), measured),
        category=str(data["category"]),
        kind=str(data["kind"]),
        explanation=_quoting(toml_path, str(data["explanation"]).strip(), measured),
        expected_cpu=_verdict(toml_path, data["expected_cpu"]),
        expected_cuda=_verdict(toml_path, data["expected_cuda"]),
        options=_options(toml_path, settings),
        settings=settings,
        variants=variants,
        expected_cpu_torch=_torch_version(toml_path, data.get("expected_cpu_torch")),
        expected_cuda_torch=_torch_version(toml_path, data.get("expected_cuda_torch")),
        upstream=data.get("upstream"),
        cuda_only=bool(data.get("cuda_only", False)),
        slow=bool(data.get("slow", False)),
        measured_cpu=measured,
        heavy=str(data.get("heavy", "")),
    )


def _replacement(path: Path, snippet: Path, raw: Any) -> tuple[str, str] | None:
    """A variant's `replace = ["text in the program", "what replaces it"]`: the text must be in the program."""
    if raw is None:
        return None
    if not (isinstance(raw, list) and len(raw) == 2 and all(isinstance(x, str) for x in raw)):
        raise CaseError(f"{path.name}: a variant's replace must be [text, replacement]")
    if raw[0] not in snippet.read_text():
        raise CaseError(f"{path.name}: a variant replaces {raw[0]!r}, not in {snippet.name}")
    return raw[0], raw[1]


def _measured(path: Path, raw: Any) -> tuple[Measured, ...]:
    """`[measured_cpu]`: `name = { leaf = "out", figure = "mismatches", value = 375 }` per figure the text quotes."""
    if not isinstance(raw, dict):
        raise CaseError(f"{path.name}: [measured_cpu] must be a table")
    found = []
    for name, spec in raw.items():
        if not isinstance(spec, dict) or set(spec) != {"leaf", "figure", "value"} or spec["figure"] not in FIGURES:
            raise CaseError(
                f"{path.name}: measured_cpu.{name} must be {{ leaf = ..., figure = one of {', '.join(FIGURES)}, value ="
                " ... }"
            )
        found.append(Measured(name, str(spec["leaf"]), str(spec["figure"]), spec["value"]))
    return tuple(found)


def _quoting(path: Path, text: str, measured: tuple[Measured, ...]) -> str:
    """The text with its `{name}` placeholders filled from the measured figures (`{name:,}` and other formats too)."""
    try:
        return text.format(**{m.name: m.value for m in measured})
    except (KeyError, IndexError, ValueError) as exc:
        raise CaseError(f"{path.name}: the text quotes a figure [measured_cpu] does not have ({exc})") from None


def _merged(case: dict[str, Any], variant: dict[str, Any]) -> dict[str, Any]:
    """A variant's options over the case's; their Inductor configs merge key by key."""
    merged = {**case, **variant}
    if "inductor_config" in case and "inductor_config" in variant:
        merged["inductor_config"] = {**case["inductor_config"], **variant["inductor_config"]}
    return merged


def _verdict(path: Path, raw: Any) -> Verdict:
    try:
        return Verdict(raw)
    except ValueError:
        raise CaseError(f"{path.name}: {raw!r} is not a verdict ({', '.join(v.value for v in Verdict)})") from None


def _torch_version(path: Path, raw: Any) -> str | None:
    if raw is None or raw == "unmeasured":
        return None
    if not isinstance(raw, str) or minor_version(raw) != raw:
        raise CaseError(
            f'{path.name}: a torch version is written major.minor (e.g. "2.13") or "unmeasured", not {raw!r}'
        )
    return raw


def _options(path: Path, raw: dict[str, Any]) -> CheckOptions:
    try:
        return CheckOptions.parse(raw)
    except (OptionsError, TypeError, ValueError) as exc:
        raise CaseError(f"{path.name}: bad [options]: {exc}") from None


def minor_version(version: str) -> str:
    """'2.13.0+cpu' -> '2.13': verdicts are recorded per torch release line."""
    return ".".join(version.split("+")[0].split(".")[:2])
