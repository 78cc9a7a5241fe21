"""What the localization steps that run in a worker child report: plain records, shared by both sides.

The child half of a step (engine/child/bisect.py, engine/child/intermediates.py) writes one of these as
JSON into the run directory; the caller half (engine/localization/) reads it back. No torch here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.nodes import NodeDiff, NodeSite  # noqa: F401  (the intermediates step's records; defined with the check's)

BISECT_FILE = "bisect.json"
BISECT_STATE_DIR = "bisector-state"  # the CompilerBisector's state files, inside the bisecting run's directory
INTERMEDIATES_FILE = "intermediates.json"


@dataclass(frozen=True)
class BisectReport:
    status: str  # "found", "no-culprit" (every backend good), "not-divergent", "failed"
    backend: str | None = None
    subsystem: str | None = None
    bisect_number: int | None = None
    debug_info: str | None = None  # for lowerings: the op whose lowering is at fault
    predicate_calls: int = 0
    predicate_errors: int = 0
    seconds: float = 0.0
    explanation: str = ""
    run_dir: str | None = None
    # A culprit that names no op (a config change such as layout_optimization, or a backend with no subsystem) is
    # narrowed once more over Inductor's lowerings, everything else as it was: the lowering whose application makes
    # the output diverge. Its debug info is the lowered FX node's name, which places it on a program line.
    narrowed_number: int | None = None
    narrowed_op: str | None = None
    narrow_calls: int = 0


def explain(
    backend: str | None, subsystem: str | None, number: int | None, info: str | None, narrowed: str | None = None
) -> str:
    if backend is None:
        return "every backend the bisector tries reproduces eager's result"
    where = f"the divergence first appears with backend {backend}"
    then = f"; among the lowerings, the lowering of {narrowed} is the one that makes it diverge" if narrowed else ""
    if not subsystem:
        return where + " (no subsystem of it could be isolated)" + then
    if subsystem == "lowerings":
        return f"{where}; subsystem lowerings: the lowering of {info or '?'} (application #{number}) is at fault"
    if number:
        return f"{where}; subsystem {subsystem}: application #{number}{f' ({info})' if info else ''} is at fault"
    return f"{where}; changing the config {subsystem} removes it{then}"


@dataclass(frozen=True)
class IntermediatesReport:
    # "found", "none-diverges", "backward-not-compared" (only gradients diverge: their graph is not instrumented),
    # "not-divergent", "not-applicable", "failed"
    status: str
    explanation: str
    first: NodeDiff | None = None
    kernel: str | None = None  # the generated kernel that computes the first diverging node
    kernel_source: str | None = None
    # the instrumented compile's own label of the module (e.g. "1_inference"): its run's generated code, not the
    # check's (the check's module is found by the node's site: app/web/code_view.place_divergence)
    output_code_label: str | None = None
    wrapper_line: int | None = None  # 1-based line of the kernel's call in the wrapper
    anchor: str | None = None  # "kernel-<name>": the generated-code view's anchor for that kernel
    diverging_nodes: tuple[str, ...] = ()  # in graph order, the first few
    compared_nodes: int = 0
    reproduced: bool = False  # the final output still diverges with every intermediate exposed
    graph_code: str = ""  # the ATen graph that was compared, readable
    run_dir: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
