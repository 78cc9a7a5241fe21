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
        return f"Triton on CPU is patched for torch {', '.join(v + 'x' for v in KNOWN_TORCH)}; this is torch {torch.__version__}"
    if not triton.__version__.startswith(KNOWN_TRITON):
        return f"Triton on CPU is patched for triton {', '.join(v + 'x' for v in KNOWN_TRITON)}; this is triton {triton.__version__}"
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


def set_interpret(interpret: bool) -> None:
    os.environ["TRITON_INTERPRET"] = "1" if interpret else "0"
