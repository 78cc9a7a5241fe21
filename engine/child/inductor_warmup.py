"""Inductor's once-per-process set-up, done once in the warm worker instead of once in every check.

Every check runs in a fresh fork of the worker (engine/child/worker.py), so whatever Inductor caches per process
with `functools.cache` is paid again by every check that compiles or loads compiled code, cold cache or warm:
- probing which vector ISA the C++ compiler can build and load (`cpu_vec_isa.valid_vec_isa_list`): a test
  library built and then loaded by a Python subprocess per ISA, about 3 s on this 2-core machine;
- the pattern matcher's patterns (`joint_graph.lazy_init`, `post_grad.lazy_init`): every replacement pattern traced
  under fake tensors, about 2.5 s, paid wherever AOTAutograd traces (every compile, and every check that judges
  inside the program: engine/child/inside.py bypasses AOTAutograd's cache to see the graph Inductor receives);
- the hashes of torch's and Triton's source files that key Inductor's FX graph cache (`torch_key`, `triton_key`),
  about 1 s.
Done in the parent before it forks, each is inherited, already computed, by every child.

Only what touches no accelerator runs here: a parent that initialised CUDA could not fork usable children, so the
joint-graph patterns are made for the CPU device only (a CUDA check makes its own, as before), and nothing asks for
a device's properties. Each step is best effort: a torch whose internals moved skips it, and a check pays it as
before. None of it depends on a check's options: the ISA probe reads no config, the patterns are registered once and
filtered by config where they apply, and the pattern traces run on tensors too small to start a parallel region
(a parent that ran one could hang its children on OpenMP's thread pool).
"""

from __future__ import annotations

import time
from collections.abc import Callable


def _vector_isa() -> None:
    from torch._inductor import cpu_vec_isa

    cpu_vec_isa.valid_vec_isa_list()


def _patterns() -> None:
    import torch
    from torch._inductor.fx_passes import joint_graph, post_grad

    joint_graph.lazy_init(torch.device("cpu"))  # the key Inductor calls it with for a CPU graph (compile_fx)
    post_grad.lazy_init()


def _source_hashes() -> None:
    from torch._inductor import codecache

    codecache.torch_key()
    codecache.triton_key()


STEPS: list[tuple[str, Callable[[], None]]] = [
    ("vector ISA probe", _vector_isa),
    ("pattern matcher patterns", _patterns),
    ("torch and Triton source hashes", _source_hashes),
]


def warm() -> dict[str, float | str]:
    """Run every step once; per step, its seconds, or why it was skipped (never raises)."""
    done: dict[str, float | str] = {}
    for name, step in STEPS:
        started = time.monotonic()
        try:
            step()
        except Exception as exc:  # an internal that moved: the checks pay it as before
            done[name] = f"skipped: {type(exc).__name__}: {str(exc)[:120]}"
            continue
        done[name] = round(time.monotonic() - started, 3)
    return done
