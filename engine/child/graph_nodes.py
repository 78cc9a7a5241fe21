"""A node of the graph Inductor compiles, in the words of the program and of its op: shared by the check's inside
stage (engine/child/inside.py) and Localize's intermediates step (engine/child/intermediates.py)."""

from __future__ import annotations

from typing import Any

from engine.child.faithful import uninitialized_op
from engine.nodes import NodeSite
from engine.provenance import parse_frames, program_frame


def site(node: Any, program: str, dynamo_graph: int) -> NodeSite:
    """Where a node of the lowered graph came from, as torch records it on the node itself: the innermost program
    frame of its stack trace, and the Dynamo-graph nodes of its `from_node` chain. The check's own compile records
    the same two things for its kernels, which is how the code view finds this node in the check's graph."""
    frame = program_frame(parse_frames(node.meta.get("stack_trace") or ""), program)
    roots: list[str] = []
    stack = list(node.meta.get("from_node") or ())
    while stack:
        source = stack.pop()
        if getattr(source, "graph_id", None) == dynamo_graph and getattr(source, "name", None):
            roots.append(source.name)
        stack.extend(getattr(source, "from_node", None) or ())
    return NodeSite(frame.line if frame else None, frame.code.strip() if frame else "", tuple(dict.fromkeys(roots)))


def exposable(node: Any) -> bool:
    import torch

    val = node.meta.get("val")
    if not isinstance(val, torch.Tensor):
        return False
    schema = getattr(node.target, "_schema", None)
    if schema is not None and schema.is_mutable:  # in-place epilogues (copy_ into inputs) are not values
        return False
    if uninitialized_op(node.target) is not None:  # memory as the allocator left it: no value to judge
        return False
    return all(isinstance(s, int) for s in val.shape)  # symbolic sizes: skip rather than guess


def node_op(node: Any) -> str:
    """The node's op; `getitem` of a multi-output op (var_mean, split) names that op and the index taken."""
    import operator

    import torch

    if node.target is operator.getitem and node.args and isinstance(node.args[0], torch.fx.Node):
        return f"{op_name(node.args[0].target)}[{node.args[1]}]"
    return op_name(node.target)


def op_name(target: Any) -> str:
    name = str(target)
    return name if name.startswith(("aten.", "prims.")) else getattr(target, "__name__", name)
