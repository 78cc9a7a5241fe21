"""The gallery of sample cases: each `<slug>.py` snippet with a `<slug>.toml` of metadata beside it.

Reading a case never runs its code, so the app can list the gallery safely.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.judge.verdicts import Verdict
from engine.options import CheckOptions

KINDS = ("real-bug", "benign", "precision-cast", "rng", "teaching")


class CaseError(ValueError):
    """A case's metadata is missing or malformed."""


@dataclass(frozen=True)
class Variant:
    """The same case under other options, with its own expectations."""

    options: CheckOptions
    expected_cpu: Verdict
    expected_cuda: Verdict
    expected_cpu_torch: str | None = None  # see SampleCase
    expected_cuda_torch: str | None = None


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
    variants: tuple[Variant, ...] = ()
    # the torch version (major.minor) each expectation was measured on; None: never measured, a hypothesis
    expected_cpu_torch: str | None = None
    expected_cuda_torch: str | None = None
    upstream: str | None = None
    cuda_only: bool = False
    slow: bool = False

    def source(self) -> str:
        return self.path.read_text()


def default_directory() -> Path:
    return Path(__file__).resolve().parent.parent / "sample_cases"


def load_case(toml_path: Path) -> SampleCase:
    data = tomllib.loads(toml_path.read_text())
    snippet = toml_path.with_suffix(".py")
    if not snippet.exists():
        raise CaseError(f"{toml_path.name}: no snippet {snippet.name} beside it")
    missing = [k for k in ("title", "summary", "category", "kind", "explanation", "expected_cpu", "expected_cuda") if k not in data]
    if missing:
        raise CaseError(f"{toml_path.name}: missing {', '.join(missing)}")
    if data["kind"] not in KINDS:
        raise CaseError(f"{toml_path.name}: kind must be one of {', '.join(KINDS)}")
    options = _options(toml_path, data.get("options", {}))
    variants = tuple(
        Variant(
            _options(toml_path, {**data.get("options", {}), **v.get("options", {})}),
            Verdict(v.get("expected_cpu", data["expected_cpu"])),
            Verdict(v.get("expected_cuda", data["expected_cuda"])),
            _torch_version(toml_path, v.get("expected_cpu_torch", data.get("expected_cpu_torch"))),
            _torch_version(toml_path, v.get("expected_cuda_torch", data.get("expected_cuda_torch"))),
        )
        for v in data.get("variants", [])
    )
    return SampleCase(
        slug=toml_path.stem,
        path=snippet,
        title=data["title"],
        summary=data["summary"],
        category=data["category"],
        kind=data["kind"],
        explanation=data["explanation"].strip(),
        expected_cpu=Verdict(data["expected_cpu"]),
        expected_cuda=Verdict(data["expected_cuda"]),
        options=options,
        variants=variants,
        expected_cpu_torch=_torch_version(toml_path, data.get("expected_cpu_torch")),
        expected_cuda_torch=_torch_version(toml_path, data.get("expected_cuda_torch")),
        upstream=data.get("upstream"),
        cuda_only=bool(data.get("cuda_only", False)),
        slow=bool(data.get("slow", False)),
    )


def _torch_version(path: Path, raw: Any) -> str | None:
    if raw is None or raw == "unmeasured":
        return None
    if not isinstance(raw, str) or minor_version(raw) != raw:
        raise CaseError(f"{path.name}: a torch version is written major.minor (e.g. \"2.13\") or \"unmeasured\", not {raw!r}")
    return raw


def minor_version(version: str) -> str:
    """'2.13.0+cpu' -> '2.13': verdicts are recorded per torch release line."""
    return ".".join(version.split("+")[0].split(".")[:2])


def measured_here(measured_on: str | None, running_torch: str) -> bool:
    """Is an expectation measured on this torch release line (so a different verdict is a regression)?"""
    return measured_on is not None and measured_on == minor_version(running_torch)


def _options(path: Path, raw: dict[str, Any]) -> CheckOptions:
    try:
        return CheckOptions.from_json(raw)
    except (TypeError, ValueError) as exc:
        raise CaseError(f"{path.name}: bad [options]: {exc}") from None


def load_cases(directory: Path | None = None) -> list[SampleCase]:
    """Every case in the directory, sorted by slug."""
    directory = directory or default_directory()
    return [load_case(p) for p in sorted(directory.glob("*.toml"))]
