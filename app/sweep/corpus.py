"""The programs of a sweep: files, directories (searched recursively, KernelBench trees included), globs,
and zoo sources (`hf:`, `opinfo:`, `modules:`; app.sweep.sources), whose programs are written as files.

A file named outright is always a program, so one that fits no snippet style ends as an `error` row
that says why. Inside a directory only files whose style is recognised (statically, nothing runs) are
programs; the others (helpers, `__init__.py`) are listed as skipped, and a sweep's or a run's own
directory (which hold programs: snippets, minimized repros) is not searched. A gallery-style `<name>.toml`
beside a program contributes its `[options]` table as that program's base options, which is what
makes the bf16 cases of sample_cases/ diverge.

A zoo pattern's programs are written under the zoo folder (`$DIVERGENCE_HOME/zoo/<source>-<flavour>/`,
rewritten only when their text changes), so each job has a file that `divergence check` re-runs as the
job ran; they carry PyTorch's own check for their jobs (app.sweep.pytorch_check) and what the report shows
beside them (the op, its entries in PyTorch's lists).
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomllib

from app.sweep.pytorch_check import AccuracyRule, PyTorchReference
from app.sweep.sources.base import ZooError, ZooProgram
from app.sweep.sources.registry import is_zoo, parse
from app.sweep.state import STATE_FILE
from engine.options import CheckOptions, OptionsError
from engine.paths import home
from engine.result import RESULT_FILE
from engine.snippet import SnippetError, detect_style

_SKIP_NAMES = ("__init__.py", "conftest.py", "setup.py")


class CorpusError(ValueError):
    """A path matches nothing, a zoo pattern names something unknown, or the corpus holds no program."""


@dataclass(frozen=True)
class Program:
    path: Path  # resolved: the job key depends on it
    source: str
    options: Mapping[str, Any] = field(default_factory=dict)  # a sibling .toml's [options], as CheckOptions JSON
    accuracy: AccuracyRule | None = None  # PyTorch's own check for its jobs (zoo programs)
    info: Mapping[str, Any] = field(default_factory=dict)  # what the report shows beside its jobs (zoo programs)
    # a zoo program's smaller programs, to run when it ends in an error as a whole
    # (app.sweep.sources.base.ZooProgram.parts)
    parts: Callable[[], Sequence[Program]] | None = field(default=None, compare=False, repr=False)
    # PyTorch's own reference for its leaves (app.sweep.sources.base.ZooProgram.pytorch_reference)
    pytorch_reference: Callable[[], PyTorchReference] | None = field(default=None, compare=False, repr=False)


def zoo_dir() -> Path:
    """Where zoo programs are written."""
    return home() / "zoo"


@dataclass(frozen=True)
class Corpus:
    programs: tuple[Program, ...]
    skipped: tuple[str, ...] = ()  # "path: why", for files found in directories that are not programs


def _exists(path: Path) -> bool:
    """Whether a file or directory is there; a name the system refuses (a zoo list past 255 bytes) is not."""
    try:
        return path.exists()
    except OSError:
        return False


def find_programs(patterns: Sequence[str | Path]) -> Corpus:
    found: dict[Path, Program] = {}
    skipped: list[str] = []
    for pattern in patterns:
        text = str(pattern)
        path = Path(text).expanduser()
        if is_zoo(text) and not _exists(path):
            for program in zoo_programs(text):
                found.setdefault(program.path, program)
        elif path.is_file():
            _add(path, found, skipped, explicit=True)
        elif path.is_dir():
            _add_directory(path, found, skipped)
        else:
            matches = sorted(glob.glob(str(path), recursive=True))
            if not matches:
                raise CorpusError(f"{text}: no such file or directory, and no file matches it as a glob")
            for match in map(Path, matches):
                if match.is_dir():
                    _add_directory(match, found, skipped)
                elif match.suffix == ".py":
                    _add(match, found, skipped, explicit=True)
    if not found:
        where = ", ".join(map(str, patterns))
        raise CorpusError(
            f"no programs in {where}"
            + (f" ({len(skipped)} files skipped: {skipped[0]}{' ...' if len(skipped) > 1 else ''})" if skipped else "")
        )
    return Corpus(tuple(found.values()), tuple(skipped))


def zoo_programs(pattern: str, folder: Path | None = None) -> list[Program]:
    """A zoo pattern's programs, written as files under `folder` (default: the zoo folder)."""
    try:
        source, selection = parse(pattern)
        written = source.programs(selection)
    except ZooError as exc:
        raise CorpusError(str(exc)) from None
    return [_zoo_file(p, (folder or zoo_dir()) / source.folder(selection)) for p in written]


def _zoo_file(program: ZooProgram, folder: Path) -> Program:
    path = (folder / f"{program.name}.py").resolve()
    if not path.is_file() or path.read_text() != program.source:  # an unchanged program keeps its file (and mtime)
        folder.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(program.source)
        tmp.replace(path)
    parts = program.parts
    make_parts = None if parts is None else (lambda: [_zoo_file(p, folder) for p in parts()])
    return Program(
        path,
        program.source,
        dict(program.options),
        program.accuracy,
        dict(program.info),
        make_parts,
        program.pytorch_reference,
    )


def split(program: Program) -> list[Program]:
    """The smaller programs of a zoo program that ended in an error as a whole; [] when it has none."""
    if program.parts is None:
        return []
    try:
        return list(program.parts())
    except ZooError as exc:
        raise CorpusError(str(exc)) from None


def _add_directory(directory: Path, found: dict[Path, Program], skipped: list[str]) -> None:
    files: list[Path] = []
    for root, dirs, names in os.walk(directory):
        # hidden folders, caches, and what sweeps and checks write (a sweep's directory, a run's) are not corpus
        dirs[:] = [d for d in dirs if not d.startswith(".") and d != "__pycache__" and not _is_output(Path(root) / d)]
        files.extend(Path(root) / n for n in names if n.endswith(".py") and n not in _SKIP_NAMES)
    for path in sorted(files):
        _add(path, found, skipped, explicit=False)


def _is_output(folder: Path) -> bool:
    return (folder / STATE_FILE).exists() or (folder / RESULT_FILE).exists()


def _add(path: Path, found: dict[Path, Program], skipped: list[str], explicit: bool) -> None:
    resolved = path.resolve()
    if resolved in found:
        return
    try:
        source = resolved.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        skipped.append(f"{path}: unreadable ({exc})")
        return
    if not explicit:
        try:
            detect_style(source, str(path))
        except SnippetError as exc:
            skipped.append(f"{path}: {str(exc).removeprefix(str(path)).strip()}")
            return
    try:
        options = _sibling_options(resolved)
    except ValueError as exc:
        skipped.append(f"{path}: {exc}")
        return
    found[resolved] = Program(resolved, source, options)


def _sibling_options(path: Path) -> Mapping[str, Any]:
    toml = path.with_suffix(".toml")
    if not toml.is_file():
        return {}
    try:
        raw = tomllib.loads(toml.read_text()).get("options", {})
        CheckOptions.parse(raw)  # validated here, so a bad table is named before anything runs
    except (tomllib.TOMLDecodeError, OSError, UnicodeDecodeError, OptionsError, TypeError) as exc:
        raise ValueError(f"its {toml.name} has unusable [options] ({exc}); fix it or move it away") from None
    return dict(raw)
