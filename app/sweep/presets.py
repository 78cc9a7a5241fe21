"""Inductor configurations users turn on, by name: the `configs=` axis of a sweep's matrix.

PyTorch's inductor OpInfo test compiles every op under one configuration (the defaults). Users do not: the
entries below are the ones tutorials, model servers and benchmark harnesses switch on (the dynamo benchmark
harness's `--freezing` and `--cpp-wrapper`, `mode="max-autotune"`, `coordinate_descent_tuning` in gpt-fast,
vectorization turned off to tell a SIMD bug from a scalar one). `--matrix configs=default,freezing,cpp_wrapper`
makes one job per preset; a finding's label names the preset it needs. A preset's entries are Inductor config
entries (`torch._inductor.config`), merged over the program's own and `--config`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Preset:
    name: str
    entries: Mapping[str, Any] = field(default_factory=dict)
    what: str = ""  # one line: what it changes on CPU


PRESETS: tuple[Preset, ...] = (
    Preset("default", {}, "torch's defaults"),
    Preset(
        "freezing",
        {"freezing": True},
        "parameters and buffers become constants: constant folding, and on CPU oneDNN weight prepacking and "
        "conv/linear fusions (inference only; a module's parameters, not op_db's inputs)",
    ),
    Preset("cpp_wrapper", {"cpp_wrapper": True}, "the wrapper that calls the kernels is C++, not Python"),
    Preset(
        "max_autotune",
        {"max_autotune": True},
        "mm/bmm/addmm/linear tried as C++ GEMM templates beside ATen's, the fastest kept (CPU: the CPP backend)",
    ),
    Preset(
        "coordinate_descent",
        {"coordinate_descent_tuning": True},
        "tunes Triton kernels' block sizes; the C++ kernels of a CPU compile do not read it",
    ),
    Preset("no_simd", {"cpp.simdlen": 1}, "C++ kernels without vectorization: the scalar path of every kernel"),
    Preset("aggressive_fusion", {"aggressive_fusion": True}, "fuses nodes that share no memory too"),
    Preset(
        "efficient_conv_bn_eval",
        {"efficient_conv_bn_eval_fx_passes": True},
        "conv + BatchNorm in eval mode folded on the fly into the conv's weights (training with frozen BN)",
    ),
    Preset(
        "dynamic_threads",
        {"cpp.dynamic_threads": True},
        "OpenMP's thread count read at run time, not fixed at compile time (other chunking of reductions)",
    ),
)


class PresetError(ValueError):
    """A preset name that is not in PRESETS."""


def preset(name: str) -> Preset:
    for p in PRESETS:
        if p.name == name:
            return p
    raise PresetError(f"no Inductor config preset {name!r}; the presets are {', '.join(p.name for p in PRESETS)}")
