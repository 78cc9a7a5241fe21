"""A mechanism needs evidence (engine/judge/mechanisms.py): the lists it reads are torch's own, and the Dynamo
graph reader names the low-precision values a fused kernel may keep in fp32 (no compile)."""

from __future__ import annotations

import pytest
import torch

from engine.judge import mechanisms
from minimizer.mechanism import read_graphs

# ops a Dynamo graph names as calls that are not ATen ops themselves, or that compute a softmax/activation
# from a fused reduction: checked by hand (casts, and ATen composites Inductor decomposes into pointwise + reduction)
_COMPOSITES = {
    "bfloat16",
    "double",
    "float",
    "half",
    "to",
    "type_as",
    "floor_divide",
    "hardswish",
    "log_softmax",
    "softmax",
}


def _tagged(tag: torch.Tag) -> set[str]:
    names = set()
    for schema in torch._C._jit_get_all_schemas():
        if not schema.name.startswith("aten::"):
            continue
        packet = getattr(torch.ops.aten, schema.name[len("aten::") :], None)
        op = getattr(packet, schema.overload_name or "default", None) if packet is not None else None
        if op is not None and tag in op.tags:
            names.add(schema.name[len("aten::") :])
    return names


def test_the_random_ops_are_the_ops_torch_tags_nondeterministic_seeded():
    assert mechanisms.RANDOM_OPS == _tagged(torch.Tag.nondeterministic_seeded)


def test_every_fused_call_is_a_pointwise_or_reduction_op_or_a_cast():
    pointwise, reduction = _tagged(torch.Tag.pointwise), _tagged(torch.Tag.reduction)
    assert sorted(mechanisms.FUSED_CALLS - pointwise - reduction - _COMPOSITES) == []


MULADD = """class GraphModule(torch.nn.Module):
    def forward(self, L_a_: "bf16[4096][1]cpu", L_b_: "bf16[4096][1]cpu", L_c_: "bf16[4096][1]cpu"):
        l_a_ = L_a_
        l_b_ = L_b_

         # File: sample_cases/bf16_muladd_chain.py:6 in fn, code: return (a * b + c) * d - a
        mul: "bf16[4096][1]cpu" = l_a_ * l_b_;  l_b_ = None
        add: "bf16[4096][1]cpu" = mul + L_c_;  mul = L_c_ = None
        return (add,)
"""
MATMUL_ONLY = """class GraphModule(torch.nn.Module):
    def forward(self, L_x_: "bf16[64, 64][64, 1]cpu", L_w_: "bf16[64, 64][64, 1]cpu"):
         # File: prog.py:5 in fn, code: return (x @ w).sum(-1)
        matmul: "bf16[64, 64][64, 1]cpu" = L_x_ @ L_w_
        view: "bf16[4096][1]cpu" = matmul.view(-1)
        return (view,)
"""
ROUNDTRIP = """class GraphModule(torch.nn.Module):
    def forward(self, L_a_: "f32[4096][1]cpu"):
         # File: prog.py:6 in fn, code: q = (a * 3.3).bfloat16().float()
        mul: "f32[4096][1]cpu" = L_a_ * 3.3
        bfloat16: "bf16[4096][1]cpu" = mul.bfloat16();  mul = None
        float_1: "f32[4096][1]cpu" = bfloat16.float();  bfloat16 = None
        return (float_1,)
"""


def test_a_low_precision_value_consumed_elementwise_is_named_with_its_line():
    trips = mechanisms.round_trips([MULADD])
    assert [(t.node, t.dtype, t.consumer, t.where) for t in trips] == [
        ("mul", "bfloat16", "add", "sample_cases/bf16_muladd_chain.py:6")
    ]
    assert "`mul` (bfloat16 at sample_cases/bf16_muladd_chain.py:6" in mechanisms.precision_cast_evidence(trips)
    assert [(t.node, t.consumer) for t in mechanisms.round_trips([ROUNDTRIP])] == [("bfloat16", "float_1")]


def test_a_low_precision_value_only_stored_or_viewed_is_no_evidence():
    # an input consumed by a matmul (an extern kernel reads it from memory) and a view are no round trip Inductor skips
    assert mechanisms.round_trips([MATMUL_ONLY]) == ()


def test_the_minimizer_reads_draws_from_the_same_list_and_by_their_flags():
    graph = """class GraphModule(torch.nn.Module):
    def forward(self, L_x_: "f32[8, 8][8, 1]cpu"):
        a: "f32[8, 8][8, 1]cpu" = torch._C._nn.scaled_dot_product_attention(L_x_, L_x_, L_x_, None, {p})
        b: "f32[8, 8][8, 1]cpu" = torch.nn.functional.dropout(a, 0.1, {training}, False)
        c: "f32[8, 8][8, 1]cpu" = b.exponential_()
        return (c,)
"""
    assert read_graphs([graph.format(p="0.0", training=False)]).random_ops == {"exponential_"}
    assert read_graphs([graph.format(p="0.2", training=True)]).random_ops == {
        "exponential_",
        "scaled_dot_product_attention",
        "dropout",
    }


@pytest.mark.slow
def test_an_rng_verdict_names_the_ops_that_drew_and_the_minimizer_refuses_with_it(runner, tmp_path):
    # dropout in training mode diverges only through Inductor's own random stream: the check says rng and names
    # the op of eager's run that drew; the minimizer has nothing to minimize and passes that sentence on
    from engine import CheckOptions
    from minimizer.interestingness import DivergenceOracle, NotReproducible
    from tests.conftest import REPO

    oracle = DivergenceOracle(runner, CheckOptions(device="cpu", timeout_s=240), tmp_path)
    with pytest.raises(NotReproducible) as refused:
        oracle.establish((REPO / "tests" / "snippets" / "dropout_rng.py").read_text())
    assert "the check's verdict is rng" in str(refused.value) and "eager drew random numbers in aten.bernoulli_" in str(
        refused.value
    )  # dropout draws its mask so


def test_integer_random_draws_are_rng_with_the_op_named(check):
    # an integer output has no float64 reference, so no faithful trace ran before the rng evidence was asked
    # for: the evidence's own eager re-run must work alone (it raised NameError and the verdict was divergent)
    from engine.judge.verdicts import Verdict

    r = check(
        "import torch\n\ndef fn(x):\n    return torch.randint(0, 1000, x.shape) + x\n\ndef inputs():\n    return"
        " (torch.arange(4096).reshape(64, 64),)\n"
    )
    assert r.verdict is Verdict.RNG and "aten.randint" in r.leaf("out").explanation


@pytest.mark.slow
def test_a_round_trip_inside_a_library_call_is_evidence_from_eagers_aten_ops(check):
    # torch.alpha_dropout is one node of the Dynamo graph; in eager it is six bf16 ATen ops, each rounded.
    # Under fallback_random and emulate_precision_casts it is bit-identical: the evidence is eager's ATen chain
    from engine.judge.verdicts import Verdict

    r = check(
        "import torch\n\ndef fn(x):\n    return torch.alpha_dropout(x, 0.5, True)\n\ndef inputs():\n    return"
        " (torch.randn(64, 64).bfloat16(),)\n"
    )
    leaf = r.leaf("out")
    assert leaf.verdict is Verdict.PRECISION_CAST, leaf.explanation
    assert "inside a library call eager rounds to bfloat16 between aten." in leaf.explanation


@pytest.mark.slow
def test_a_precision_cast_verdict_names_its_value_and_the_minimizer_refuses_with_it(runner, tmp_path):
    # the counterpart of the rng refusal: a bf16 chain whose difference is Inductor keeping fp32 between two ops;
    # the check names the value eager rounds (its line), and the minimizer has nothing to minimize
    from engine import CheckOptions
    from minimizer.interestingness import DivergenceOracle, NotReproducible
    from tests.conftest import REPO

    oracle = DivergenceOracle(runner, CheckOptions(device="cpu", timeout_s=240), tmp_path)
    with pytest.raises(NotReproducible) as refused:
        oracle.establish((REPO / "sample_cases" / "bf16_muladd_chain.py").read_text())
    said = str(refused.value)
    assert "the check's verdict is precision-cast" in said and "Inductor skipped a bfloat16 round trip" in said, said
