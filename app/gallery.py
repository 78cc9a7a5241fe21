"""The sample cases offered in the app's gallery, read from sample_cases/<slug>.toml (never executed here)."""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from engine import CheckOptions, OptionsError

SUMMARY_CHARS = 160


@dataclass(frozen=True)
class Case:
    slug: str
    title: str
    summary: str
    category: str
    kind: str
    explanation: str
    path: Path
    expected_cpu: str | None = None
    expected_cuda: str | None = None
    upstream: str | None = None
    cuda_only: bool = False
    slow: bool = False
    options: Mapping[str, Any] = field(default_factory=dict)
    variants: tuple[Mapping[str, Any], ...] = ()

    @property
    def one_line(self) -> str:
        text = " ".join(self.summary.split())
        return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1].rstrip() + "…"

    def source(self) -> str:
        return self.path.read_text()

    def check_options(self) -> CheckOptions:
        """The case's default run; raises OptionsError for a key CheckOptions does not know."""
        return CheckOptions.from_json(dict(self.options))


def default_dir() -> Path:
    configured = os.environ.get("DIVERGENCE_CASES")
    return Path(configured) if configured else Path(__file__).resolve().parent.parent / "sample_cases"


def load_cases(directory: Path | None = None) -> tuple[tuple[Case, ...], tuple[str, ...]]:
    """Every case with both files, sorted by category then title, and one problem line per unreadable toml."""
    directory = directory or default_dir()
    cases: list[Case] = []
    problems: list[str] = []
    for meta in sorted(directory.glob("*.toml")):
        snippet = meta.with_suffix(".py")
        if not snippet.exists():
            problems.append(f"{meta.name}: no {snippet.name} beside it")
            continue
        try:
            data = tomllib.loads(meta.read_text())
            cases.append(_case(meta.stem, snippet, data))
        except (tomllib.TOMLDecodeError, KeyError, TypeError, ValueError, OSError) as exc:
            problems.append(f"{meta.name}: {exc}")
    cases.sort(key=lambda c: (c.category, c.title))
    return tuple(cases), tuple(problems)


def _case(slug: str, path: Path, data: Mapping[str, Any]) -> Case:
    options = dict(data.get("options", {}))
    try:
        CheckOptions.from_json(options)
    except (OptionsError, TypeError) as exc:
        raise ValueError(f"[options]: {exc}") from None
    return Case(
        slug=slug,
        title=str(data["title"]),
        summary=str(data.get("summary", "")),
        category=str(data.get("category", "Uncategorised")),
        kind=str(data.get("kind", "")),
        explanation=str(data.get("explanation", "")),
        path=path,
        expected_cpu=data.get("expected_cpu"),
        expected_cuda=data.get("expected_cuda"),
        upstream=data.get("upstream"),
        cuda_only=bool(data.get("cuda_only", False)),
        slow=bool(data.get("slow", False)),
        options=options,
        variants=tuple(dict(v) for v in data.get("variants", ())),
    )
