"""Capture what torch.compile produced from torch's own log artifacts.

Logs are used rather than patching Inductor, because Inductor logs its output code on an FX-cache hit
too, and the artifact names have been stable across releases.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
from pathlib import Path
from typing import Iterator

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
        return GeneratedCode(tuple(self.graphs), tuple(self.outputs), tuple(self.breaks), tuple(self.recompiles))


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
        Kernel(m["name"], "triton" if m["kind"] == "triton" else "cpp", m["src"].strip("\n")) for m in _KERNEL.finditer(source)
    )
    return OutputCode(match.group(1) if match else f"graph_{id(source)}", source, kernels)


@contextlib.contextmanager
def capture_generated_code(trace_dir: Path | None = None) -> Iterator[_Collector]:
    """Collect FX graphs, output code, graph breaks and recompilations for everything compiled inside.

    With `trace_dir`, torch's structured trace (what TORCH_TRACE writes, tlparse's input) goes there too.
    """
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
    try:
        yield collector
    finally:
        for logger in hosts:
            logger.removeHandler(collector)
        for handler in muted:
            handler.removeFilter(_DROP)
        torch._logging.set_logs()


_DROP = _DropArtifacts()
