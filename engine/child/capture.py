"""Capture what torch.compile produced from torch's own log artifacts.

Logs are used rather than patching Inductor, because Inductor logs its output code on an FX-cache hit
too, and the artifact names have been stable across releases.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from engine import provenance
from engine.result import GeneratedCode, Kernel, OutputCode

_ARTIFACTS = {"graph_code", "graph_breaks", "recompiles", "output_code"}
_KERNEL = re.compile(
    r"^(?P<name>\w+) = async_compile\.(?P<kind>cpp_pybinding|cpp|triton)\((?P<args>.*?)r?'''(?P<src>.*?)'''",
    re.S | re.M,
)
_GRAPH_PATH = re.compile(r"\n \S+\.py class GraphModule")
_AOT_ID = re.compile(r"# AOT ID: \['([^']*)'\]")


class _Collector(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.graphs: list[str] = []
        self.outputs: list[OutputCode] = []
        self.breaks: list[str] = []
        self.recompiles: list[str] = []
        self.tracked: _ProvenanceCollector | None = None  # set while provenance is captured too
        self.program = ""
        self.source: str | None = None

    def emit(self, record: logging.LogRecord) -> None:
        artifact = record.name.rsplit(".", 1)[-1].lstrip("_")
        if artifact not in _ARTIFACTS:
            return
        try:
            message = record.getMessage()
        except Exception:  # a malformed log call must never break a check
            return
        if artifact == "graph_code":
            self.graphs.append(_GRAPH_PATH.sub("\nclass GraphModule", message.strip()))
        elif artifact == "graph_breaks":
            self.breaks.append(without_engine_frames(message.strip()))
        elif artifact == "recompiles":
            self.recompiles.append(message.strip())
        elif message.startswith("Output code:"):
            self.outputs.append(parse_output_code(message.split(":", 1)[1].lstrip("\n")))

    def result(self) -> GeneratedCode:
        outputs = (
            self.tracked.join(self.outputs, self.program, self.source) if self.tracked is not None else self.outputs
        )
        return GeneratedCode(tuple(self.graphs), tuple(outputs), tuple(self.breaks), tuple(self.recompiles))


class _ProvenanceCollector(logging.Handler):
    """Inductor's provenance artifacts from torch's structured trace, grouped per compiled graph.

    Per graph the trace carries, in this order on a cache miss and on a hit alike: the post-grad graph,
    the output code, the kernel -> node mappings, the kernel stack traces. A group is keyed by its
    output code's text, which is how it finds the OutputCode the output_code log produced.
    """

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.groups: dict[str, provenance.Artifacts] = {}
        self._post_grad: str | None = None
        self._current: provenance.Artifacts | None = None

    def emit(self, record: logging.LogRecord) -> None:
        try:
            metadata = getattr(record, "metadata", None) or {}
            payload = getattr(record, "payload", None)
            name = (
                metadata["artifact"].get("name")
                if isinstance(metadata.get("artifact"), dict)
                else next(iter(metadata), None)
            )
            if name == provenance.POST_GRAD_GRAPH:
                self._post_grad = payload
            elif name == "inductor_output_code" and isinstance(payload, str):
                self._current = provenance.Artifacts(post_grad_graph=self._post_grad)
                self.groups[payload.strip()] = self._current
                self._post_grad = None
            elif name in (provenance.NODE_MAPPINGS, provenance.STACK_TRACES) and self._current is not None and payload:
                data = json.loads(payload)
                if name == provenance.NODE_MAPPINGS:
                    self._current.node_mappings = data
                else:
                    self._current.stack_traces = data
        except Exception:  # provenance is best effort: a changed artifact must never break a check
            return

    def join(self, outputs: list[OutputCode], program: str, source: str | None) -> list[OutputCode]:
        joined = []
        for out in outputs:
            try:
                found = provenance.build(
                    out.source, [k.name for k in out.kernels], self.groups.get(out.source.strip()), program, source
                )
            except Exception as exc:  # noqa: BLE001 - same: say so, never fail the check
                found = provenance.unknown(f"reading torch's provenance failed: {type(exc).__name__}: {exc}")
            joined.append(dataclasses.replace(out, provenance=found))
        return joined


def provenance_config(program: str, source: str) -> dict[str, Any]:
    """Inductor config for one check with provenance: tracking on, and the cache keyed on the program's text.

    A cache entry keeps the stack traces of the compile that made it, so without the key a program with
    the same graph but moved lines (an added comment) would be shown the old line numbers. The key costs
    that case a re-lowering; generated kernels are cached by their own code, so no C++ or Triton compile.
    """
    import torch._inductor.config as config

    if not hasattr(config.trace, "provenance_tracking_level"):
        return {}
    patch: dict[str, Any] = {}
    if not config.trace.provenance_tracking_level:
        patch["trace.provenance_tracking_level"] = 1
    if (
        getattr(config, "post_grad_custom_post_pass", "absent") is None
    ):  # the user's own pass wins; lines are still verified
        try:
            from torch._inductor.custom_graph_pass import CustomGraphPass
        except ImportError:
            return patch

        class _ProgramKey(CustomGraphPass):
            """Does nothing to the graph; its uuid puts the program's file name and text into the cache key."""

            def __init__(self, key: str) -> None:
                self.key = key

            def __call__(self, graph: Any) -> None:
                return None

            def uuid(self) -> str:
                return self.key

        patch["post_grad_custom_post_pass"] = _ProgramKey(hashlib.sha256(f"{program}\0{source}".encode()).hexdigest())
    return patch


class _DropArtifacts(logging.Filter):
    """Keep torch's own console handlers from printing the artifacts we collect into the output log."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.name.rsplit(".", 1)[-1].lstrip("_") not in _ARTIFACTS


_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line \d+')
_ENGINE_DIR = str(Path(__file__).resolve().parents[1])  # engine/, not only engine/child/


def without_engine_frames(text: str) -> str:
    """Drop traceback frames of our own harness, so a graph break's stack shows only user code."""
    kept: list[str] = []
    skipping = False
    for line in text.splitlines():
        frame = _FRAME.match(line)
        if frame:
            path = frame["path"]
            skipping = path.startswith(_ENGINE_DIR) or path.startswith("<frozen")
        elif skipping and line.startswith("    "):
            continue
        else:
            skipping = False
        if not skipping:
            kept.append(line)
    return "\n".join(kept)


def parse_output_code(source: str) -> OutputCode:
    match = _AOT_ID.search(source)
    kernels = tuple(
        Kernel(m["name"], "triton" if m["kind"] == "triton" else "cpp", m["src"].strip("\n"))
        for m in _KERNEL.finditer(source)
    )
    return OutputCode(match.group(1) if match else f"graph_{id(source)}", source, kernels)


@contextlib.contextmanager
def capture_generated_code(
    trace_dir: Path | None = None, program: str | None = None, source: str | None = None
) -> Iterator[_Collector]:
    """Collect FX graphs, output code, graph breaks and recompilations for everything compiled inside.

    With `trace_dir`, torch's structured trace (what TORCH_TRACE writes, tlparse's input) goes there too.
    With `program` (the file name the snippet runs as) and its `source`, Inductor's provenance tracking is
    on as well and each output module carries the kernel <-> FX node <-> program line map.
    """
    import torch._inductor.config as inductor_config
    import torch._logging
    import torch._logging._internal as logging_internal

    if trace_dir is not None:
        # TORCH_TRACE is read when the trace handler is made; the warm worker made it before this check existed
        trace_dir.mkdir(parents=True, exist_ok=True)
        os.environ["TORCH_TRACE"] = str(trace_dir)
        logging_internal.LOG_TRACE_HANDLER = None

    collector = _Collector()
    torch._logging.set_logs(graph_code=True, graph_breaks=True, recompiles=True, output_code=True)
    # torch's top-level component loggers stop propagation, so the collector sits on each of them
    names = {n for n in logging.root.manager.loggerDict if n.startswith("torch.")} | {"torch"}
    hosts = [logging.getLogger(n) for n in sorted(names) if n == "torch" or not logging.getLogger(n).propagate]
    muted = {h for logger in hosts for h in logger.handlers}
    for logger in hosts:
        logger.addHandler(collector)
    for handler in muted:
        handler.addFilter(_DROP)
    tracked = _ProvenanceCollector() if program is not None else None
    collector.tracked, collector.program, collector.source = tracked, program or "", source
    trace_log = logging_internal.trace_log
    trace_level = trace_log.level
    with contextlib.ExitStack() as stack:
        if tracked is not None:
            stack.enter_context(inductor_config.patch(provenance_config(program, source or "")))
            trace_log.addHandler(tracked)
            trace_log.setLevel(logging.DEBUG)  # trace_structured logs only where its logger has handlers
        try:
            yield collector
        finally:
            if tracked is not None:
                trace_log.removeHandler(tracked)
                trace_log.setLevel(trace_level)
            for logger in hosts:
                logger.removeHandler(collector)
            for handler in muted:
                handler.removeFilter(_DROP)
            torch._logging.set_logs()


_DROP = _DropArtifacts()
