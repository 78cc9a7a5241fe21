"""The typed result of a check: what was compared, what was found, and the generated code.

A result serializes to JSON (small: figures and text) plus the per-element arrays and their summaries
(engine.arrays), so a viewer can draw heatmaps later without running anything again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from engine import arrays as stored_arrays
from engine import records
from engine.judge.evidence import Fallback, Test
from engine.judge.verdicts import ErrorKind, LeafKind, Nearer, Symptom, Verdict, Witness
from engine.judge.witness import ScalarRounding  # stored in results; defined beside the faithful reference
from engine.nodes import InsideReport
from engine.options import CheckOptions
from engine.provenance import Provenance

RESULT_FILE = "result.json"
TRACE_DIR = "trace"  # TORCH_TRACE logs, when the check ran with `trace`
SCHEMA_VERSION = 1


@dataclass(frozen=True)
class LeafResult:
    """One compared value: an output, a mutated input, a parameter or buffer, or a gradient."""

    name: str
    kind: LeafKind
    verdict: Verdict
    explanation: str
    symptoms: tuple[Symptom, ...] = ()
    shape: tuple[int, ...] | None = None  # eager's shape; None for non-tensors
    compiled_shape: tuple[int, ...] | None = None
    dtype: str | None = None
    compiled_dtype: str | None = None
    stride: tuple[int, ...] | None = None
    compiled_stride: tuple[int, ...] | None = None
    layout: str | None = (
        None  # eager's tensor layout where not strided (`sparse_csr`, ...): its values are compared dense
    )
    compiled_layout: str | None = None
    numel: int = 0
    mismatches: int = 0  # elements whose bits differ
    unwritten: int = 0  # elements that are uninitialized memory (engine/child/uninitialized.py): not compared
    max_abs: float = 0.0
    max_rel: float = 0.0
    max_ulp: float = 0.0
    nan_mismatches: int = 0
    inf_mismatches: int = 0
    signed_zero_mismatches: int = 0
    eager_ref_rms: float | None = None  # error against the fp64 reference
    compiled_ref_rms: float | None = None
    eager_ref_max: float | None = None
    compiled_ref_max: float | None = None
    worst_index: tuple[int, ...] | None = None
    eager_value: str | None = None  # repr, for non-tensor leaves and the worst element
    compiled_value: str | None = None
    reference_value: str | None = None  # the fp64 reference at the worst element, where there is one
    arrays: str | None = None  # key of its arrays and/or summary in engine.arrays, when stored
    witness: Witness | None = None  # what decided the value verdict (engine.judge.verdicts.Witness)
    nearer: Nearer | None = None  # which side is nearer the exact value (None: no reference, or bit-identical)
    tests: tuple[Test, ...] = ()  # the element rule's tests of a bf16/fp16 value (engine.judge.family weighs them)
    # what the leaf is when the check's false-alarm budget keeps none of its element tests (engine.judge.family):
    # set only on a leaf the element rule alone made divergent
    fallback: Fallback | None = None
    # where a structural symptom (strides, dtype, ...) makes the leaf divergent: the verdict of its values alone
    values_verdict: Verdict | None = None

    @property
    def structural(self) -> bool:
        return any(s.structural for s in self.symptoms)


@dataclass(frozen=True)
class ErrorInfo:
    """Why a check produced no comparison."""

    kind: ErrorKind
    message: str
    traceback: str = ""
    output_tail: str = ""


@dataclass(frozen=True)
class Kernel:
    name: str
    language: str  # "cpp" or "triton"
    source: str


@dataclass(frozen=True)
class OutputCode:
    """One module that Inductor wrote: the Python wrapper with its kernels."""

    label: str  # e.g. "0_inference", "0_forward"
    source: str
    kernels: tuple[Kernel, ...] = ()
    provenance: Provenance | None = None  # which program lines and FX nodes became which kernel (engine/provenance.py)


@dataclass(frozen=True)
class GeneratedCode:
    """What the compiler produced, captured from torch's own logs (so also on a cache hit)."""

    fx_graphs: tuple[str, ...] = ()
    output_code: tuple[OutputCode, ...] = ()
    graph_breaks: tuple[str, ...] = ()
    recompiles: tuple[str, ...] = ()


@dataclass(frozen=True)
class SeedOutcome:
    seed: int
    verdict: Verdict
    explanation: str


@dataclass(frozen=True)
class CheckResult:
    verdict: Verdict
    explanation: str
    options: CheckOptions
    style: str | None = None  # "fn-inputs", "kernelbench", "repro"
    leaves: tuple[LeafResult, ...] = ()
    error: ErrorInfo | None = None
    code: GeneratedCode = field(default_factory=GeneratedCode)
    seeds: tuple[SeedOutcome, ...] = ()
    notes: tuple[str, ...] = ()
    environment: Mapping[str, str] = field(default_factory=dict)
    stage_seconds: Mapping[str, float] = field(default_factory=dict)
    peak_rss_mb: float | None = (
        None  # the check's process at its largest (what it shares with the warm worker included)
    )
    peak_device_mb: float | None = None  # on CUDA, the most GPU memory torch's allocator held for the check's tensors
    output_tail: str = ""
    run_dir: str | None = None
    triton_cpu: str | None = None  # subfolder of run_dir holding the Triton-on-CPU pass, when one ran
    scalar_roundings: tuple[
        ScalarRounding, ...
    ] = ()  # what the faithful fp64 reference rounded as eager does, once each
    inside: InsideReport | None = None  # what the check found inside the program (engine/child/inside.py)
    schema: int = SCHEMA_VERSION  # of result.json: a file of another version still opens (engine/records.py)

    def load_triton_cpu(self) -> CheckResult | None:
        """The Triton-on-CPU pass beside this check (interpreted Triton, not GPU Triton), if it ran."""
        if self.triton_cpu is None or self.run_dir is None:
            return None
        return CheckResult.load(Path(self.run_dir) / self.triton_cpu)

    @property
    def exit_code(self) -> int:
        return self.verdict.exit_code

    def leaf(self, name: str) -> LeafResult:
        for leaf in self.leaves:
            if leaf.name == name:
                return leaf
        raise KeyError(f"no leaf named {name!r}; leaves: {', '.join(leaf.name for leaf in self.leaves)}")

    def save(self, run_dir: Path) -> Path:
        """Write result.json into run_dir (arrays are written by the worker beside it)."""
        return records.save(self, Path(run_dir) / RESULT_FILE)

    @classmethod
    def load(cls, run_dir: Path) -> CheckResult:
        result = records.load(cls, Path(run_dir) / RESULT_FILE)
        return dataclasses.replace(result, run_dir=str(run_dir))

    def _repr_html_(self) -> str:
        from engine.html import render_html

        return render_html(self)

    def load_arrays(self, leaf: LeafResult) -> dict[str, np.ndarray]:
        """The per-element arrays of a leaf, memory-mapped: eager, compiled, and where computed ref
        (and ulp in a run stored before engine.arrays' format 2). {} when they were not kept."""
        if leaf.arrays is None or self.run_dir is None:
            return {}
        return stored_arrays.read(Path(self.run_dir), leaf.arrays)

    def load_summary(self, leaf: LeafResult) -> dict[str, np.ndarray]:
        """The check's summary of a leaf (engine.judge.summary); {} for an older run or a small leaf."""
        if leaf.arrays is None or self.run_dir is None:
            return {}
        return stored_arrays.read_summary(Path(self.run_dir), leaf.arrays)
