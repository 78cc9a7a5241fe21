"""Which value inside a fused kernel first diverges: the kernel's nodes alone, compiled with each one exposed.

The check sees the buffers compiled code stores (engine/child/inside.py). A fused kernel computes many nodes in
registers and stores one: `t // STEP`, `remainder(t, PERIOD)`, `sin` and `stack` become one C++ loop that stores
the stacked features, so the first diverging buffer names `stack`, not the floor division that made it differ.

The nodes the kernel computes for that buffer are its ancestors up to the buffers stored before it (its cone).
They alone become a small graph, fed with eager's values of the cone's inputs, with every node an output, and
Inductor compiles it: the same lowerings and the same fusion of those nodes, now storing each one. Judged node by
node against the same cone run eagerly and in float64, the first that diverges is where compile changed a value.
Feeding eager's inputs to both sides keeps differences that come from before the kernel out of it.

It costs one compile of a few nodes (a C++ kernel: a few seconds cold) and runs only where a stored buffer
diverges and its kernel computed more than that buffer's node.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any

import torch
import torch.fx


def cone(gm: Any, node_name: str, stored: Collection[str]) -> tuple[list[Any], list[Any]]:
    """(the nodes computed inside the kernel for `node_name`, in graph order; the nodes they read from outside it)."""
    nodes = {n.name: n for n in gm.graph.nodes}
    inside: set[Any] = set()
    outside: set[Any] = set()
    stack = [nodes[node_name]]
    while stack:
        node = stack.pop()
        if node in inside:
            continue
        inside.add(node)
        for arg in node.all_input_nodes:
            if arg.op != "call_function" or arg.name in stored:
                outside.add(arg)
            else:
                stack.append(arg)
    order = {n: i for i, n in enumerate(gm.graph.nodes)}
    return sorted(inside, key=order.__getitem__), sorted(outside, key=order.__getitem__)


def subgraph(inside: Sequence[Any], outside: Sequence[Any], exposable: Callable[[Any], bool]) -> torch.fx.GraphModule:
    """A graph of the cone's nodes alone: one input per outside node, every exposable node an output."""
    graph = torch.fx.Graph()
    env: dict[Any, Any] = {}
    for node in outside:
        placeholder = graph.placeholder(node.name)
        placeholder.meta = dict(node.meta)
        env[node] = placeholder
    for node in inside:
        env[node] = graph.node_copy(node, lambda n: env[n])
    graph.output(tuple(env[n] for n in inside if exposable(n)))
    return torch.fx.GraphModule(torch.nn.Module(), graph)


def compiled_values(gm: torch.fx.GraphModule, inputs: list[Any], options: dict[str, Any] | None = None) -> list[Any]:
    """The subgraph's outputs as Inductor computes them: its own compile, with the check's Inductor config and the
    `options` the program's graph was compiled with (a snippet's mode and options)."""
    import torch._inductor

    with torch.no_grad():
        compiled = torch._inductor.compile(
            gm, [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs], options=options or None
        )
        return list(compiled(*[x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]))
