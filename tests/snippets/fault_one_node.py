"""Test-only fault in one node: a post-grad pass makes Inductor compute the graph's `mul` as an add."""
import torch
from torch._inductor.custom_graph_pass import CustomGraphPass


class SwapMulForAdd(CustomGraphPass):
    """Test-only fault: Inductor computes the graph's `mul` node as an add."""

    def __call__(self, graph):
        for node in graph.nodes:
            if node.name == "mul" and node.target is torch.ops.aten.mul.Tensor:
                node.target = torch.ops.aten.add.Tensor

    def uuid(self):
        return "divergence-explorer-test-swap-mul-for-add"


def fn(x, y):
    a = torch.sin(x)
    b = a * y
    c = torch.exp(b)
    return c.sum(-1), torch.relu(a)


def inputs():
    return torch.randn(16, 32), torch.randn(16, 32)


compile_kwargs = {"options": {"post_grad_custom_post_pass": SwapMulForAdd()}}
