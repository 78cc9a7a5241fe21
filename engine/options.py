"""The options of one check, and how they merge with a snippet's own `compile_kwargs`."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

BACKENDS = ("inductor", "eager", "aot_eager", "aot_eager_decomp_partition")
MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
CAST_DTYPES = ("bf16", "fp16")
# input derivations a probe may ask the worker to apply (engine/child/derive.py implements them)
INPUT_PROBES = ("special", "transposed", "noncontiguous", "channels_last", "expanded", "offset", "odd_sizes")
# localization tasks run in the worker after the check (engine/child/bisect.py, engine/child/intermediates.py)
LOCALIZE_TASKS = ("bisect", "intermediates")


class OptionsError(ValueError):
    """An option has a value the engine cannot honour."""


@dataclass(frozen=True, kw_only=True)
class CheckOptions:
    """Everything that changes how a snippet is checked.

    `None` means "not set": the snippet's own compile_kwargs apply, then torch's defaults.
    """

    device: str | None = None  # "cpu" or "cuda"; None picks cuda when available
    backend: str | None = None
    mode: str | None = None
    dynamic: bool | None = None
    fullgraph: bool | None = None
    inductor_config: Mapping[str, Any] = field(default_factory=dict)
    dtype: str | None = None  # cast model and floating inputs to bf16/fp16
    backward: bool = False
    seeds: int = 1
    seed: int = 0
    strict: bool = False
    fp64_reference: bool = True
    recheck_precision_casts: bool = True
    recheck_random: bool = (
        True  # values that differ where the program draws random numbers: re-check with fallback_random
    )
    # compiled may be this many times further from the fp64 reference than eager and still be benign
    benign_factor: float = 2.0
    # ...plus this many ULPs of the output's magnitude (RMS or max of the reference): summation-order noise
    noise_ulps: float = 32.0
    timeout_s: float = 300.0
    memory_limit_mb: int = 8192
    max_stored_elements: int = 16 * 1024 * 1024
    max_processes: int = 256  # tasks (threads included) of one check, via a pids cgroup where the host has one
    max_output_mb: int = 64  # the snippet's printed output; past it the check is stopped
    trace: bool = False  # also write a TORCH_TRACE log (for tlparse) into the run directory
    derive_inputs: str | None = None  # one of INPUT_PROBES: re-derive the inputs (seeded by `seed`) before the check
    calls: int = 1  # call the compiled callable this many times per seed (call k on the inputs of seed+k)
    localize: str | None = None  # one of LOCALIZE_TASKS, run in the worker after the check; writes a side file
    # compile with Inductor's Triton backend on CPU tensors (see engine.child.triton_cpu); through the API this
    # adds a second, separate job beside the usual check
    triton_cpu: bool = False
    triton_interpret_max_elements: int = 1 << 18  # above it the Triton kernels are generated, not interpreted
    # Inductor's provenance tracking: which program line and FX node became which kernel (engine/provenance.py);
    # it keys Inductor's cache on the program's text, so a candidate-heavy caller (the minimizer) turns it off
    provenance: bool = True
    # the outputs that matter to the user: leaf names, or prefixes of them (`out.logits`, `out.cache`); they lead
    # the result's views and its `focus` summary (engine/outputs.py). The verdict still judges every leaf.
    focus: tuple[str, ...] = ()
    # judge inside the program too: every buffer the compiled code materialises, against the graph's own eager and
    # float64 values (engine/child/inside.py); skipped past `inside_max_mb` of such buffers
    inside: bool = True
    inside_max_mb: int = 1024

    def __post_init__(self) -> None:
        if isinstance(self.focus, str) or not all(isinstance(f, str) and f.strip() for f in self.focus):
            raise OptionsError(f"focus must be leaf names (strings such as 'out.logits'), not {self.focus!r}")
        object.__setattr__(self, "focus", tuple(f.strip() for f in self.focus))
        if self.backend is not None and self.backend not in BACKENDS:
            raise OptionsError(f"backend must be one of {', '.join(BACKENDS)}, not {self.backend!r}")
        if self.mode is not None and self.mode not in MODES:
            raise OptionsError(f"mode must be one of {', '.join(MODES)}, not {self.mode!r}")
        if self.dtype is not None and self.dtype not in CAST_DTYPES:
            raise OptionsError(f"dtype must be one of {', '.join(CAST_DTYPES)}, not {self.dtype!r}")
        if self.device is not None and self.device not in ("cpu", "cuda"):
            raise OptionsError(f"device must be cpu or cuda, not {self.device!r}")
        if self.seeds < 1:
            raise OptionsError("seeds must be at least 1")
        if self.derive_inputs is not None and self.derive_inputs not in INPUT_PROBES:
            raise OptionsError(f"derive_inputs must be one of {', '.join(INPUT_PROBES)}, not {self.derive_inputs!r}")
        if self.calls < 1:
            raise OptionsError("calls must be at least 1")
        if self.localize is not None and self.localize not in LOCALIZE_TASKS:
            raise OptionsError(f"localize must be one of {', '.join(LOCALIZE_TASKS)}, not {self.localize!r}")
        if self.benign_factor < 1.0:
            raise OptionsError("benign_factor must be at least 1")
        if self.noise_ulps < 0:
            raise OptionsError("noise_ulps must not be negative")
        if self.timeout_s <= 0 or self.memory_limit_mb <= 0:
            raise OptionsError("timeout_s and memory_limit_mb must be positive")

    def replace(self, **changes: Any) -> CheckOptions:
        return dataclasses.replace(self, **changes)

    def with_inductor_config(self, **overrides: Any) -> CheckOptions:
        return self.replace(inductor_config={**self.inductor_config, **overrides})

    @classmethod
    def parse(cls, data: Mapping[str, Any]) -> CheckOptions:
        """Options a person wrote (a case's or a program's `[options]` table, a sweep's matrix): a name the engine
        does not know is refused, and every value is read as its option's type. (Stored options are read by
        engine.records, which passes over names a later version added.)"""
        from engine import records

        unknown = sorted(set(data) - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise OptionsError(f"unknown option(s): {', '.join(unknown)}")
        try:
            return records.from_json(cls, data)
        except records.RecordError as exc:
            raise OptionsError(exc.detail) from None

    def compile_kwargs(self, snippet_kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """torch.compile's keyword arguments: the snippet's own, overridden by the options that are set."""
        kwargs = dict(snippet_kwargs)
        for name in ("backend", "mode", "dynamic", "fullgraph"):
            value = getattr(self, name)
            if value is not None:
                kwargs[name] = value
        kwargs.setdefault("backend", "inductor")
        if kwargs.get("backend") != "inductor":
            # torch.compile rejects mode/options for backends that do not take them
            kwargs.pop("mode", None)
            kwargs.pop("options", None)
        return kwargs
