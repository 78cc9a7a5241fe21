"""A run's per-element arrays on disk: uncompressed `.npy` files, read back memory-mapped.

Layout (`arrays/` in the run directory): `index.json` names each stored leaf's file stem; `<stem>.eager.npy`,
`<stem>.compiled.npy` and, with an fp64 reference, `<stem>.ref.npy` hold its values in the leaf's dtype
(bfloat16 as float32, which holds it exactly); `<stem>.summary.npz` the check's summary of it
(engine.judge.summary: pooled maps, worst elements, ULP histogram; a few hundred kB at most). No ULP
array: viewers compute distances from the values (engine.judge.views.ulp_distance). Disk per element:
twice the dtype's size plus 8 bytes for the reference, i.e. 16 B for float32 (8 B without fp64).

Writing is a plain copy to the page cache (no zlib over float noise, which took ~10 s per 16M elements);
reading one block touches only its pages. Everything is written into `arrays.tmp/` and renamed, so a
reader sees all of a run's arrays or none. Runs stored before this format (`arrays.npz`, compressed,
keys `<leaf>/<kind>`, with a `ulp` array) are still read.

No torch here: the app and the caller's side read runs with numpy alone.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

ARRAYS_DIR = "arrays"
INDEX_FILE = "index.json"
LEGACY_FILE = "arrays.npz"
FORMAT = 2
KINDS = ("eager", "compiled", "ref")


def write(run_dir: Path, leaves: Iterable[tuple[str, Mapping[str, np.ndarray], Mapping[str, np.ndarray]]]) -> int:
    """Store each leaf's (key, arrays by kind, summary by name), taken one at a time from `leaves` (so a
    caller can copy one leaf off a GPU at a time); returns the bytes written."""
    final = Path(run_dir) / ARRAYS_DIR
    tmp = Path(run_dir) / (ARRAYS_DIR + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    index: dict[str, dict[str, object]] = {}
    written = 0
    for n, (key, arrays, summary) in enumerate(leaves):
        stem = str(n)
        kinds = [k for k in KINDS if k in arrays]
        for kind in kinds:
            path = tmp / f"{stem}.{kind}.npy"
            np.save(path, np.ascontiguousarray(arrays[kind]), allow_pickle=False)
            written += path.stat().st_size
        if summary:
            path = tmp / f"{stem}.summary.npz"
            np.savez(path, **summary)  # type: ignore[arg-type]
            written += path.stat().st_size
        index[key] = {"stem": stem, "kinds": kinds, "summary": bool(summary)}
    (tmp / INDEX_FILE).write_text(json.dumps({"format": FORMAT, "leaves": index}, indent=1))
    shutil.rmtree(final, ignore_errors=True)
    tmp.replace(final)
    return written


def _entry(run_dir: Path, key: str) -> dict[str, object] | None:
    try:
        index = json.loads((Path(run_dir) / ARRAYS_DIR / INDEX_FILE).read_text())
    except (OSError, ValueError):
        return None
    entry = index.get("leaves", {}).get(key)
    return entry if isinstance(entry, dict) else None


def read(run_dir: Path, key: str) -> dict[str, np.ndarray]:
    """A leaf's stored arrays by kind (eager, compiled, ref; `ulp` too in a run of the old format),
    memory-mapped: nothing is read until it is used. {} when nothing was stored."""
    entry = _entry(run_dir, key)
    if entry is not None:
        folder = Path(run_dir) / ARRAYS_DIR
        return {kind: np.load(folder / f"{entry['stem']}.{kind}.npy", mmap_mode="r") for kind in entry.get("kinds", ())}  # type: ignore[union-attr]
    legacy = Path(run_dir) / LEGACY_FILE
    if not legacy.exists():
        return {}
    with np.load(legacy) as data:
        prefix = key + "/"
        return {k[len(prefix) :]: data[k] for k in data.files if k.startswith(prefix)}


def read_summary(run_dir: Path, key: str) -> dict[str, np.ndarray]:
    """The check's summary of a leaf ({} for a run of the old format, or a leaf without one)."""
    entry = _entry(run_dir, key)
    if entry is None or not entry.get("summary"):
        return {}
    with np.load(Path(run_dir) / ARRAYS_DIR / f"{entry['stem']}.summary.npz") as data:
        return {k: data[k] for k in data.files}


def stored(run_dir: Path) -> bool:
    """Whether the run has arrays in either format."""
    return (Path(run_dir) / ARRAYS_DIR / INDEX_FILE).exists() or (Path(run_dir) / LEGACY_FILE).exists()


def export(run_dir: Path, keys: list[str], target: Path) -> bool:
    """Every stored leaf's arrays in one uncompressed .npz (keys `<leaf>/<kind>`, as `arrays.npz` had)."""
    flat = {f"{key}/{kind}": value for key in keys for kind, value in read(run_dir, key).items()}
    if not flat:
        return False
    np.savez(target, **flat)  # type: ignore[arg-type]
    return True
