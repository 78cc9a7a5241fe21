"""Where Divergence Explorer keeps its files: runs and the shared Inductor cache.

`DIVERGENCE_HOME` moves everything; the default is ~/.local/share/divergence-explorer.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path


def home() -> Path:
    configured = os.environ.get("DIVERGENCE_HOME")
    if configured:
        return Path(configured).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "divergence-explorer"


def runs_dir() -> Path:
    return home() / "runs"


def inductor_cache_dir() -> Path:
    """One Inductor cache shared by every check, so a repeated compile is a cache hit."""
    configured = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    return Path(configured) if configured else home() / "inductor-cache"


def new_run_dir() -> Path:
    run_id = time.strftime("%Y%m%d-%H%M%S") + "-" + uuid.uuid4().hex[:8]
    return runs_dir() / run_id
