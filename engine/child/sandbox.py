"""Confine a worker child before it runs user code, with whatever this host allows.

What it does, each step best-effort and reported:
- a scrubbed environment (an allow-list: toolchain, torch/triton/CUDA settings; no secrets),
- a CPU-time limit (the caller enforces wall time and memory separately),
- a cap on processes through a pids cgroup (a fork bomb stops at the cap),
- no network: a fresh, empty network namespace,
- writes only below the run directory, the compile caches and /dev, through Landlock.
Reads are not confined: torch needs the interpreter's whole tree, so the manual says so (docs/running.md).
"""

from __future__ import annotations

import ctypes
import os
import resource
from dataclasses import dataclass
from pathlib import Path

_ENV_KEEP = ("PATH", "LANG", "LANGUAGE", "TZ", "HOME", "PYTHONPATH", "LD_LIBRARY_PATH", "CC", "CXX", "OMP_NUM_THREADS")
_ENV_PREFIXES = ("LC_", "TORCH", "PYTORCH_", "TRITON_", "CUDA_", "NVIDIA_", "MKL_", "OPENBLAS_", "KMP_", "GOMP_")
_PIDS_ROOT = Path("/sys/fs/cgroup/pids")
_CLONE_NEWNET = 0x40000000
_PR_SET_NO_NEW_PRIVS = 38
_SYS_LANDLOCK_CREATE_RULESET, _SYS_LANDLOCK_ADD_RULE, _SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446  # x86_64 and aarch64


@dataclass(frozen=True)
class Confinement:
    network_isolated: bool
    writes_confined: bool
    processes_capped: bool
    notes: tuple[str, ...]


def scrub_environment(tmp_dir: Path, cache_dir: str | None) -> None:
    kept = {k: v for k, v in os.environ.items() if k in _ENV_KEEP or k.startswith(_ENV_PREFIXES)}
    os.environ.clear()
    os.environ.update(kept)
    tmp_dir.mkdir(parents=True, exist_ok=True)
    os.environ["TMPDIR"] = str(tmp_dir)  # g++ and tempfile write here, inside the writable run directory
    import tempfile

    tempfile.tempdir = str(tmp_dir)  # the warm worker computed and cached its own already
    if cache_dir:
        os.environ.setdefault("TRITON_CACHE_DIR", str(Path(cache_dir) / "triton"))


def limit_cpu(seconds: int) -> None:
    resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 5))


def cgroup_for(pid: int) -> Path:
    return _PIDS_ROOT / "divergence-explorer" / str(pid)


def cap_processes(max_processes: int) -> bool:
    """Put this process in a pids cgroup of its own (v1 hierarchy); the zygote removes it after the exit."""
    group = cgroup_for(os.getpid())
    try:
        group.mkdir(parents=True, exist_ok=True)
        (group / "pids.max").write_text(str(max_processes))
        (group / "cgroup.procs").write_text(str(os.getpid()))
        return True
    except OSError:
        return False


def clean_up(pid: int) -> None:
    """After a child's exit: kill whatever it left behind (its process group, its cgroup) and drop the cgroup."""
    import signal

    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    group = cgroup_for(pid)
    for _ in range(50):
        try:
            leftovers = [int(p) for p in (group / "cgroup.procs").read_text().split()]
        except OSError:
            return
        for p in leftovers:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        try:
            group.rmdir()
            return
        except OSError:
            import time

            time.sleep(0.05)


def isolate_network() -> bool:
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.unshare(_CLONE_NEWNET) == 0


class _PathBeneath(ctypes.Structure):
    _pack_ = 1  # the kernel's struct landlock_path_beneath_attr is packed
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def confine_writes(writable: list[Path]) -> bool:
    """Landlock: every write-like access is denied outside `writable` (reads and execution are untouched)."""
    libc = ctypes.CDLL(None, use_errno=True)
    abi = libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    if abi < 1:
        return False
    write_like = sum(1 << bit for bit in (1, 4, 5, 6, 7, 8, 9, 10, 11, 12))  # write, remove, make-*
    if abi >= 2:
        write_like |= 1 << 13  # refer (rename/link across directories)
    if abi >= 3:
        write_like |= 1 << 14  # truncate
    handled = ctypes.c_uint64(write_like)
    ruleset = libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(handled), ctypes.c_size_t(8), ctypes.c_uint32(0))
    if ruleset < 0:
        return False
    try:
        for path in writable:
            if not path.exists():
                continue
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            try:
                rule = _PathBeneath(write_like, fd)
                if (
                    libc.syscall(
                        _SYS_LANDLOCK_ADD_RULE, ruleset, ctypes.c_int(1), ctypes.byref(rule), ctypes.c_uint32(0)
                    )
                    != 0
                ):
                    return False
            finally:
                os.close(fd)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return False
        return libc.syscall(_SYS_LANDLOCK_RESTRICT_SELF, ruleset, ctypes.c_uint32(0)) == 0
    finally:
        os.close(ruleset)


def _inductor_default_dir() -> Path | None:
    """Inductor keeps precompiled headers in its default cache dir whatever TORCHINDUCTOR_CACHE_DIR says."""
    try:
        from torch._inductor.runtime.cache_dir_utils import default_cache_dir

        path = Path(default_cache_dir())
        path.mkdir(parents=True, exist_ok=True)
        return path
    except (ImportError, OSError):
        return None


def confine(run_dir: Path, cache_dir: str | None, cpu_seconds: int, max_processes: int) -> Confinement:
    """Apply every confinement this host supports to the current process; say which ones took."""
    notes: list[str] = []
    inductor_default = _inductor_default_dir()  # before the temp dir moves: it is derived from it
    scrub_environment(run_dir / "tmp", cache_dir)
    limit_cpu(cpu_seconds)
    capped = cap_processes(max_processes)
    if not capped:
        notes.append("processes not capped (no writable pids cgroup)")
    isolated = isolate_network()
    if not isolated:
        notes.append("network not isolated (unshare(CLONE_NEWNET) was refused)")
    writable = [run_dir, Path("/dev"), *([inductor_default] if inductor_default else [])]
    if cache_dir:
        writable.append(Path(cache_dir))
    confined = confine_writes(writable)
    if not confined:
        notes.append("writes not confined (Landlock unavailable)")
    return Confinement(isolated, confined, capped, tuple(notes))
