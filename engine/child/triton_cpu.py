"""Inductor's Triton backend for CPU tensors, on a host without a GPU.

PyPI's triton has no CPU driver, so code generation stops at "0 active drivers". Two patches get past
it: a constant backend hash for Inductor's cache keys, and a shim that sends `libdevice` calls to the
`tl.math` functions that Triton's interpreter implements. With TRITON_INTERPRET=1 the kernels then run
in Triton's numpy interpreter: slowly, and with its own numerics, so results are labelled interpreted
Triton, never GPU Triton. Everything that touches torch or triton internals is here, and is applied
only inside a worker child that runs nothing else.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import time
from collections.abc import Callable
from typing import Any

# versions on which the patches were checked; others are refused with a message, not guessed at
KNOWN_TORCH = ("2.13.",)
KNOWN_TRITON = ("3.9.",)
LABEL = "interpreted Triton on CPU (Triton's numpy interpreter, not GPU Triton)"


def unavailable_reason() -> str | None:
    """Why the Triton-on-CPU path cannot run here, or None when it can."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        return "this worker was not started with TRITON_INTERPRET=1 (use engine.api's Triton-on-CPU runner)"
    if importlib.util.find_spec("triton") is None:
        return "triton is not installed (pip install triton)"
    import torch
    import triton

    if not torch.__version__.startswith(KNOWN_TORCH):
        return (
            f"Triton on CPU is patched for torch {', '.join(v + 'x' for v in KNOWN_TORCH)}; this is torch "
            f"{torch.__version__}"
        )
    if not triton.__version__.startswith(KNOWN_TRITON):
        return (
            f"Triton on CPU is patched for triton {', '.join(v + 'x' for v in KNOWN_TRITON)}; this is triton "
            f"{triton.__version__}"
        )
    import torch._inductor.config as config
    import torch._inductor.runtime.triton_helpers as helpers
    import torch.utils._triton as torch_triton

    missing = [
        name
        for owner, name in ((torch_triton, "triton_hash_with_backend"), (helpers, "libdevice"), (config, "cpu_backend"))
        if not hasattr(owner, name)
    ]
    if missing:
        return f"torch internals this path patches are missing: {', '.join(missing)}"
    return None


class _LibdeviceShim:
    """Forward libdevice.<fn> to tl.math.<fn>, which the interpreter implements (tanh and pow it does not)."""

    def __getattr__(self, name: str) -> Any:
        import triton.language as tl

        return getattr(tl.math, name)


def enable(interpret: bool) -> None:
    """Patch this process for Triton codegen on CPU tensors; run kernels in the interpreter when asked."""
    import torch._inductor.config as config
    import torch._inductor.runtime.triton_helpers as helpers
    import torch.utils._triton as torch_triton

    # read lazily by triton's knobs when a kernel is defined; triton's and Inductor's own @triton.jit
    # helpers were defined at import, which is why this path needs a worker started with TRITON_INTERPRET=1
    os.environ["TRITON_INTERPRET"] = "1" if interpret else "0"
    torch_triton.triton_hash_with_backend = lambda: "0" * 64
    helpers.libdevice = _LibdeviceShim()
    config.cpu_backend = "triton"


class _Budget(BaseException):
    """Raised by the timer in the middle of an interpreted kernel (a BaseException: user code cannot catch it)."""


_LAUNCH: Any = None  # Inductor's own CachingAutotuner.run, once watch_launches has wrapped it


def watch_launches(
    on_kernel: Callable[[str], None], refuse: str | None, budget_s: float, stop: Callable[[str, bool], BaseException]
) -> None:
    """Follow every kernel launch of Inductor's Triton launcher in this (single-check) child.

    The interpreter runs a kernel for seconds to minutes, inside what is otherwise the compile stage, so
    each newly launched kernel is reported (`on_kernel(name)`: the live status names it). With `refuse`,
    the first launch stops the run: the kernels are generated (Inductor compiles them at load, which
    needs the interpreter on) but not run. After `budget_s` spent inside launches, a timer stops the run
    too, so that the check ends with its generated source instead of being killed at its time limit.
    Both raise `stop(message, timed_out)`. The timer runs only while a kernel does.
    """
    global _LAUNCH
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner

    if _LAUNCH is None:
        _LAUNCH = CachingAutotuner.run
    launch = _LAUNCH
    state: dict[str, Any] = {"kernel": None, "spent": 0.0}

    def expire(signum: int, frame: Any) -> None:
        raise _Budget()

    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        name = str(self.inductor_meta.get("kernel_name") or getattr(self.fn, "__name__", "a Triton kernel"))
        if refuse is not None:
            raise stop(refuse, False)
        if name != state["kernel"]:
            state["kernel"] = name
            on_kernel(name)
        left = budget_s - state["spent"]
        started = time.monotonic()
        previous = signal.signal(signal.SIGALRM, expire)
        signal.setitimer(signal.ITIMER_REAL, max(0.5, left))
        try:
            return launch(self, *args, **kwargs)
        except _Budget:
            raise stop(
                f"Triton's interpreter was still running {name} after "
                f"{state['spent'] + time.monotonic() - started:.0f} s of interpreting, so the run was stopped to keep "
                f"the generated source (the check's time limit left {budget_s:.0f} s for it). The interpreter is slow "
                "on reductions: smaller inputs or a longer time limit let it finish.",
                True,
            ) from None
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
            state["spent"] += time.monotonic() - started

    CachingAutotuner.run = run  # type: ignore[method-assign]
