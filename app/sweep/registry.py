"""Where the app finds sweeps: `$DIVERGENCE_HOME/sweeps/`, which holds the default sweep directories
and a symbolic link to each sweep run elsewhere with `-o`."""

from __future__ import annotations

import hashlib
from pathlib import Path

from app.sweep.state import STATE_FILE
from engine.paths import home


def sweeps_root() -> Path:
    return home() / "sweeps"


def register(sweep_dir: Path) -> None:
    """Make a sweep outside the root visible to the app (a link named after it); nothing for one inside."""
    root = sweeps_root()
    sweep_dir = sweep_dir.resolve()
    if sweep_dir.parent == root.resolve():
        return
    root.mkdir(parents=True, exist_ok=True)
    link = root / f"{sweep_dir.name}-{hashlib.sha256(str(sweep_dir).encode()).hexdigest()[:6]}"
    if not link.is_symlink() and not link.exists():
        try:
            link.symlink_to(sweep_dir, target_is_directory=True)
        except OSError:
            pass  # a file system without links: the sweep still works, only the app does not list it


def list_sweeps() -> list[Path]:
    """Every known sweep directory that holds a state file, the most recently written first."""
    root = sweeps_root()
    if not root.is_dir():
        return []
    found = [p for p in root.iterdir() if (p / STATE_FILE).is_file()]
    return sorted(found, key=lambda p: (p / STATE_FILE).stat().st_mtime, reverse=True)
