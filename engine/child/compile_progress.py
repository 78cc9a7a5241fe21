"""What the compiler is doing now, for the live stage: "graph 2: lowering", "graph 2: C++ compile (kernel 5)".

Compiling a real model is most of its check (50-60 s of an 80 s BERT-base check on 2 cores), and a stage
that says "compiling" for a minute says nothing. torch times its compile phases itself (`dynamo_timed`),
and hands each phase's start to `torch._dynamo.utils.record_chromium_event_internal`, a hook that is
called whether or not any trace is on (unlike the structured trace, which, once listened to, renders
every graph as text). While `compile_progress` is active that hook also reports, in plain words, the
phases a user can act on: Dynamo tracing a graph, AOTAutograd, a graph loaded from Inductor's cache,
lowering, code generation, each C++ compile, Triton's compiles and autotuning.

Best effort: a torch without the hook gives no sub-stages, and a failing report never reaches torch.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

# phase start -> what to say; the graph counter moves on at each frame Dynamo starts to compile
_PHASES = {
    "bytecode_tracing": "tracing with Dynamo",
    "backend_compile": "AOTAutograd",
    "aot_trace_joint_graph": "AOTAutograd, forward and backward",
    "min_cut_rematerialization_partition": "partitioning forward and backward",
    "AOTAutogradCache.inductor_load": "loading from Inductor's cache",
    "TritonBundler.read_and_emit": "loading from Inductor's cache",  # an FX-graph cache hit reads its bundle here
    "GraphLowering.run": "lowering",
    "Scheduler.codegen": "generating kernels",
    "async_compile.precompile": "compiling Triton kernels",
    "CachingAutotuner.benchmark_all_configs": "autotuning",
}
_KERNEL_COMPILE = "compile_file"


class _Reporter:
    def __init__(self, report: Callable[[str], None]) -> None:
        self.report = report
        self.graph = 0
        self.kernels = 0
        self.backward = False

    def event(self, event: dict[str, Any]) -> None:
        if event.get("ph") != "B":
            return
        name = str(event.get("name", ""))
        if name == "entire_frame_compile":
            self.graph += 1
            self.kernels = 0
            self.backward = False
            return
        if "bw_compiler" in name or "fw_compiler" in name:
            self.backward = "bw_compiler" in name
            self.kernels = 0
            return
        graph = f"graph {max(self.graph, 1)}{' (backward)' if self.backward else ''}"
        if name == _KERNEL_COMPILE:
            self.kernels += 1
            self.report(f"{graph}: C++ compile (kernel {self.kernels})")
        elif name in _PHASES:
            self.report(f"{graph}: {_PHASES[name]}")


@contextlib.contextmanager
def compile_progress(report: Callable[[str], None]) -> Iterator[None]:
    """While inside, report each compile phase's start through `report` (see the module's docstring)."""
    try:
        import torch._dynamo.utils as dynamo_utils

        original = dynamo_utils.record_chromium_event_internal
    except (ImportError, AttributeError):
        yield
        return
    reporter = _Reporter(report)

    def hook(event: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        try:
            reporter.event(event)
        except Exception:  # the live stage is a courtesy: never fail a compile for it
            pass
        return original(event, *args, **kwargs)

    dynamo_utils.record_chromium_event_internal = hook
    try:
        yield
    finally:
        dynamo_utils.record_chromium_event_internal = original
