"""Sparse tensors (sparse_csr, sparse_coo) among a program's inputs, outputs and module state.

Real torch.compile. A sparse tensor has no strides and no `is_contiguous`: the check compares its values in
dense form and its layout as a structural fact (engine/child/leaves.py `dense`, engine/child/leaf_builder.py).
Each of these ended in an internal error before ("Sparse CSR tensors do not have strides").
"""

from __future__ import annotations

import torch

from app.cli.report import table
from engine import LeafKind, Symptom, Verdict
from engine.child import casting, derive
from engine.child.leaves import dense, layout_of

SPARSE_IN_OUT = """
import torch


def fn(a, b):
    return torch.sparse.mm(a, b, "sum"), a


def inputs():
    a = torch.randn(4, 5).relu().to_sparse_csr()
    return a, torch.randn(5, 3)
"""

# eager returns a CSR tensor, compiled the same values dense: Dynamo traces `is_compiling()` as True
LAYOUT_DIFFERS = """
import torch


def fn(x):
    y = x * 2
    return y if torch.compiler.is_compiling() else y.to_sparse_csr()


def inputs():
    return (torch.randn(4, 5).relu(),)
"""

SPARSE_WRITTEN = """
import torch


class Graph(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("adj", torch.randn(4, 4).relu().to_sparse_coo())
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, a, x):
        a.mul_(2)
        self.adj.mul_(1.5)
        return torch.sparse.mm(self.adj, self.lin(x)) + torch.sparse.mm(a, x)


def inputs():
    return torch.randn(4, 4).relu().to_sparse_coo(), torch.randn(4, 3)


fn = Graph()
"""


def test_a_sparse_input_returned_as_an_output_is_compared_dense_and_names_its_layout(check):
    r = check(SPARSE_IN_OUT)
    assert r.error is None, r.error
    assert r.verdict in (Verdict.MATCH, Verdict.BENIGN), r.explanation
    out = r.leaf("out[1]")
    assert (out.layout, out.compiled_layout) == ("sparse_csr", "sparse_csr")
    assert out.stride is None and out.compiled_stride is None  # it has none: no stride is compared
    assert out.shape == (4, 5) and out.numel == 20 and Symptom.LAYOUT not in out.symptoms
    assert "sparse_csr on both sides" in out.explanation
    assert r.leaf("out[0]").layout is None  # sparse.mm's result is dense
    names = [line.split("  ")[0] for line in table(r.leaves).splitlines()[2:]]
    assert names == ["out[0]", "out[1] (sparse_csr)"]


def test_a_sparse_output_that_compiled_gives_dense_is_a_layout_divergence(check):
    r = check(LAYOUT_DIFFERS)
    assert r.verdict is Verdict.DIVERGENT, r.explanation
    out = r.leaf("out")
    assert out.symptoms == (Symptom.LAYOUT,) and out.mismatches == 0  # the same values, another layout
    assert (out.layout, out.compiled_layout) == ("sparse_csr", None)
    assert "eager gives a sparse_csr tensor, compiled gives a strided (dense) tensor" in out.explanation
    assert "out (sparse_csr→strided)" in table(r.leaves)


def test_a_sparse_input_and_buffer_written_in_place_are_compared(check):
    r = check(SPARSE_WRITTEN)
    assert r.error is None, r.error
    assert r.verdict in (Verdict.MATCH, Verdict.BENIGN), r.explanation
    mutated = r.leaf("input args[0]")
    assert mutated.kind is LeafKind.MUTATED_INPUT and mutated.layout == mutated.compiled_layout == "sparse_coo"
    state = r.leaf("state self.adj")
    assert state.kind is LeafKind.STATE and state.layout == "sparse_coo" and state.mismatches == 0


def test_sparse_inputs_clone_cast_to_fp64_and_are_left_alone_by_layout_probes():
    a = torch.randn(4, 5).relu().to_sparse_csr()
    (copy,) = casting.clone_tree((a,))
    assert copy is not a and copy.layout == torch.sparse_csr and torch.equal(copy.to_dense(), a.to_dense())
    wide = casting.to_fp64_tensor(a)
    assert wide.dtype == torch.float64 and torch.equal(wide.to_dense(), a.to_dense().double())
    assert layout_of(a) == "sparse_csr" and layout_of(a.to_dense()) is None
    assert dense(a).layout == torch.strided and dense(wide) is not wide
    x = torch.randn(4, 4)
    derived_a, derived_x = derive.derive("transposed", (a, x), seed=0)
    assert derived_a is a and derived_x.stride() == (1, 4)
