"""`modules:[eval|train][:MODULE,...]`: every module input of PyTorch's own module_db, one program per module.

module_db (torch.testing._internal.common_modules) lists 114 `nn` modules with the inputs PyTorch's module
tests run (1,805 in eval mode on CPU for fp32). A program builds one instance per module input from its
own constructor arguments (an `nn.ModuleList`, so the engine sees every parameter and buffer) and calls
each on its forward input: one compile per module, each input's outputs its own leaves
(`out['input[2]']`). The samples are module_db's fp32 ones (only three modules declare a low precision on
CPU); the sweep's `--dtype bf16` casts the modules and inputs as a user would. `train` builds and runs
the modules in training mode (dropout, batch statistics), `eval` (the default) in eval mode. PyTorch's
check for these jobs is the harness's `same(tol=1e-3)` against fp64.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from app.sweep.pytorch_check import harness_rule
from app.sweep.sources.base import Selection, Source, ZooError, ZooProgram, missing, pick

MODES = ("eval", "train")

TEMPLATE = '''"""module_db: {what} of `{name}` in {mode} mode on CPU (fp32 samples), compiled as one program (torch {torch}).

Written by `divergence sweep {pattern}`; each module input's outputs are the leaves out['input[i]'].
"""
import torch
from torch.testing._internal.common_modules import module_db

INFO = next(m for m in module_db if m.name == {name!r})
CASES = INFO.module_inputs_func(INFO, device="cpu", dtype=torch.float32, requires_grad=False, training={training})
SAMPLES = {samples}  # None: every module input; a list of indices: those alone


class Modules(torch.nn.Module):
    """One instance per module input, built from its own constructor arguments."""

    def __init__(self):
        super().__init__()
        self.cases = torch.nn.ModuleList(INFO.module_cls(*c.constructor_input.args, **c.constructor_input.kwargs) for c in CASES)

    def forward(self, calls):
        return {{name: self.cases[i](*args, **kwargs) for name, (i, args, kwargs) in calls.items()}}


fn = Modules().train({training})


def inputs():
    return ({{f"input[{{i}}]": (i, list(c.forward_input.args), dict(c.forward_input.kwargs)) for i, c in enumerate(CASES) if SAMPLES is None or i in SAMPLES}},)
'''  # noqa: E501  (lines of the program it writes)


def _module_db() -> Any:
    try:
        import expecttest  # noqa: F401  (common_modules imports it)
    except ImportError:
        raise missing("expecttest", "modules") from None
    from torch.testing._internal.common_modules import module_db

    return module_db


def programs(selection: Selection) -> Sequence[ZooProgram]:
    import torch

    infos = {m.name: m for m in _module_db() if torch.float32 in m.dtypes}
    wanted = pick(list(infos), selection.items, "module_db module") if selection.items else list(infos)
    return [_program(infos[name], selection, torch.__version__, None) for name in wanted]


def _program(info: Any, selection: Selection, torch_version: str, sample: int | None) -> ZooProgram:
    training = selection.flavour == "train"
    text = TEMPLATE.format(
        what="every module input" if sample is None else f"module input {sample}",
        name=info.name,
        mode=selection.flavour,
        torch=torch_version,
        pattern=f"modules:{selection.flavour}:{info.name}",
        training=training,
        samples="None" if sample is None else f"[{sample}]",
    )
    data = {"module": info.name, "mode": selection.flavour} | ({} if sample is None else {"sample": sample})
    parts = None if sample is not None else partial(_parts, info, selection, torch_version)
    options = (
        {"timeout_s": 900.0} if sample is None else {}
    )  # one compile for every input of a module; one input alone: the default
    return ZooProgram(
        info.name if sample is None else f"{info.name}--input{sample}", text, harness_rule(), options, data, parts
    )


def _parts(info: Any, selection: Selection, torch_version: str) -> Sequence[ZooProgram]:
    import torch

    try:
        count = len(
            info.module_inputs_func(
                info, device="cpu", dtype=torch.float32, requires_grad=False, training=selection.flavour == "train"
            )
        )
    except Exception as exc:
        raise ZooError(f"{info.name}: its module inputs cannot be made ({type(exc).__name__}: {exc})") from None
    return [_program(info, selection, torch_version, i) for i in range(count)]


SOURCE = Source(
    prefix="modules",
    summary="every module input of PyTorch's module_db, one program per module: modules:[eval|train][:MODULE,...]",
    flavours=MODES,
    programs=programs,
    needs="expecttest",
)
