"""Localize's one conclusion (engine/localization/conclusion.py) over the records its steps write.

These are the rules, one per test, on records of the shape the steps write (their JSON, as engine/localization/
reports.py reads it) and the provenance and Dynamo graph text a check keeps; the real steps on real programs are
tests/test_localize_conclusion.py (slow) and benchmarks/localize_corpus.py.
"""

from __future__ import annotations

import dataclasses

from engine import records
from engine.judge.verdicts import LeafKind, Verdict
from engine.localization.ablation import AblationReport, AblationRow
from engine.localization.ablation import conclude as conclude_ladder
from engine.localization.conclusion import Conclusion, Stage, conclude
from engine.localization.localize import Localization
from engine.localization.reports import BisectReport, IntermediatesReport, NodeDiff, NodeSite
from engine.localization.sites import ProgramSites, entry_parameters
from engine.options import CheckOptions
from engine.provenance import TRACKED, KernelOrigin, NodeOrigin, Provenance, SourceLine
from engine.result import CheckResult, GeneratedCode, LeafResult, OutputCode

SENSOR = """import torch
STEP, PERIOD = 0.1, 0.7


def fn(t):
    bucket = t // STEP
    phase = torch.remainder(t, PERIOD)
    return bucket, phase
"""
SENSOR_GRAPH = """class GraphModule(torch.nn.Module):
    def forward(self, L_t_: "bf16[2, 48][48, 1]cpu"):
        l_t_ = L_t_

        # File: snippet.py:6 in fn, code: bucket = t // STEP
        bucket: "bf16[2, 48][48, 1]cpu" = l_t_ // 0.1

        # File: snippet.py:7 in fn, code: phase = torch.remainder(t, PERIOD)
        phase: "bf16[2, 48][48, 1]cpu" = torch.remainder(l_t_, 0.7);  l_t_ = None
        return (bucket, phase)
"""
SENSOR_NODES = (
    NodeOrigin("view", "aten.reshape.default", 6),
    NodeOrigin("div", "aten.div.Tensor_mode", 6),
    NodeOrigin("remainder", "aten.remainder.Scalar", 7),
)

MUTATION = """import torch


def fn(x):
    x.index_put_((torch.arange(x.size(0)),), x * 2.0)
    x.add_(x.flip(0))
    return x.sum()
"""
MUTATION_GRAPH = """class GraphModule(torch.nn.Module):
    def forward(self, L_x_: "f32[4, 8][8, 1]cpu"):
        l_x_ = L_x_

        # File: /tmp/x.py:5 in fn, code: x.index_put_((torch.arange(x.size(0)),), x * 2.0)
        arange: "i64[4][1]cpu" = torch.arange(4)
        mul: "f32[4, 8][8, 1]cpu" = l_x_ * 2.0
        index_put_: "f32[4, 8][8, 1]cpu" = l_x_.index_put_((arange,), mul);  arange = mul = index_put_ = None

        # File: /tmp/x.py:6 in fn, code: x.add_(x.flip(0))
        flip: "f32[4, 8][8, 1]cpu" = l_x_.flip(0)
        add_: "f32[4, 8][8, 1]cpu" = l_x_.add_(flip);  flip = add_ = None

        # File: /tmp/x.py:7 in fn, code: return x.sum()
        sum_1: "f32[][]cpu" = l_x_.sum();  l_x_ = None
        return (sum_1,)
"""


def _check(graph: str, nodes: tuple[NodeOrigin, ...], leaves: tuple[LeafResult, ...], kernels=()) -> CheckResult:
    provenance = Provenance(TRACKED, nodes=nodes, kernels=kernels)
    code = GeneratedCode(fx_graphs=(graph,), output_code=(OutputCode("0_inference", "", (), provenance),))
    return CheckResult(Verdict.DIVERGENT, "divergent", CheckOptions(), leaves=leaves, code=code)


def _leaf(name: str, kind: LeafKind = LeafKind.OUTPUT) -> LeafResult:
    return LeafResult(name, kind, Verdict.DIVERGENT, "differs", numel=8, mismatches=4)


def _ladder(first: str = "inductor", removed_by: str | None = None) -> AblationReport:
    rungs = ["eager", "aot_eager", "aot_eager_decomp_partition", "inductor"]
    rows = []
    for r in rungs:
        diverges = rungs.index(r) >= rungs.index(first)
        verdict = Verdict.DIVERGENT if diverges else (Verdict.MATCH if r == "eager" else Verdict.BENIGN)
        rows.append(AblationRow(r, r, {}, verdict, diverges, f"{verdict.value}: ..."))
    for extra in ("inductor + emulate_precision_casts", "inductor + fallback_random"):
        removed = removed_by is not None and removed_by in extra
        verdict = Verdict.MATCH if removed else Verdict.DIVERGENT
        rows.append(AblationRow(extra, "inductor", {}, verdict, not removed, ""))
    first_, layer, sentence = conclude_ladder(tuple(rows))
    return AblationReport(tuple(rows), first_, layer, sentence)


def _node(op: str, line: int, code: str) -> IntermediatesReport:
    first = NodeDiff(
        0, "div", op, Verdict.DIVERGENT, "8 of 96 element(s) differ (worst at [0, 30]: eager 29.0, compiled 30.0)",
        8, 96, 8.0, NodeSite(line, code),
    )  # fmt: skip
    return IntermediatesReport("found", "first diverging intermediate: div", first, reproduced=True)


def _lowering(name: str, number: int) -> BisectReport:
    return BisectReport("found", "inductor", "lowerings", number, name, explanation=f"the lowering of {name}")


def test_the_node_and_the_bisector_naming_one_op_are_one_answer() -> None:
    check = _check(SENSOR_GRAPH, SENSOR_NODES, (_leaf("out[0]"),))
    loc = Localization(_ladder(), _lowering("div", 1), _node("aten.div.Tensor_mode", 6, "bucket = t // STEP"))
    c = conclude(loc, check, SENSOR)
    assert (c.stage, c.op, c.line, c.also) == (Stage.LOWERING, "aten.div.Tensor_mode", 6, ())
    assert "`bucket = t // STEP` (line 6" in c.sentence and "eager gives 29.0, compiled 30.0" in c.sentence
    assert [f.agrees for f in c.findings if f.step in ("bisector", "first diverging node")] == [True, True]
    assert "Minimize" in c.next_step and "line 6" in c.next_step


def test_a_bisector_naming_a_later_op_is_a_second_fault_said_as_such() -> None:
    """The issue's sensor model: the first diverging node is the floor division, the bisector names remainder."""
    check = _check(SENSOR_GRAPH, SENSOR_NODES, (_leaf("out[0]"),))
    loc = Localization(_ladder(), _lowering("remainder", 2), _node("aten.div.Tensor_mode", 6, "bucket = t // STEP"))
    c = conclude(loc, check, SENSOR)
    assert (c.op, c.line) == ("aten.div.Tensor_mode", 6)
    assert [(s.op, s.line) for s in c.also] == [("aten.remainder.Scalar", 7)]
    assert "Both are faults" in c.sentence and "torch.remainder(t, PERIOD)" in c.sentence
    bisector = next(f for f in c.findings if f.step == "bisector")
    assert bisector.agrees is False and bisector.site is not None and bisector.site.line == 7


def test_a_bisector_naming_an_earlier_op_is_the_cause() -> None:
    check = _check(SENSOR_GRAPH, SENSOR_NODES, (_leaf("out[0]"),))
    loc = Localization(
        _ladder(), _lowering("div", 1), _node("aten.remainder.Scalar", 7, "phase = torch.remainder(t, PERIOD)")
    )
    c = conclude(loc, check, SENSOR)
    assert (c.op, c.line) == ("aten.div.Tensor_mode", 6) and "its lowering is the cause" in c.sentence


def test_a_config_culprit_is_named_by_the_lowering_the_bisector_narrows_to() -> None:
    nodes = (
        NodeOrigin("convolution", "aten.convolution.default", 6),
        NodeOrigin("scatter_add", "aten.scatter_add.default", 7),
        NodeOrigin("convolution_backward", "aten.convolution_backward.default", 6),
    )
    program = (
        "import torch\nimport torch.nn.functional as F\n\n\n"
        "def fn(x, w):\n    c = F.conv2d(x, w)\n    return F.max_pool2d(c, 3)\n"
    )
    kernel = KernelOrigin(
        "cpp_fused_convolution_backward_max_pool2d_with_indices_backward_0",
        0,
        lines=(SourceLine(6, ""), SourceLine(7, "")),
    )
    check = _check("", nodes, (_leaf("grad args[0]", LeafKind.GRADIENT),), kernels=(kernel,))
    bisect = BisectReport(
        "found", "inductor", "inductor_layout_optimization", 0, "inductor_layout_optimization",
        narrowed_number=2, narrowed_op="convolution_backward",
    )  # fmt: skip
    intermediates = IntermediatesReport("backward-not-compared", "the divergent leaves are gradients")
    c = conclude(Localization(_ladder(), bisect, intermediates), check, program)
    assert (c.stage, c.workaround) == (Stage.CONFIG, "layout_optimization=False")
    assert (c.op, c.line) == ("aten.convolution_backward.default", 6)
    assert "F.max_pool2d(c, 3)` (line 7" in c.sentence, c.sentence  # fused into the same kernel
    assert "`layout_optimization=False`" in c.next_step and "workaround" in c.next_step


POOL = """import torch
import torch.nn.functional as F


def fn(x, w):
    c = F.conv2d(x, w)
    return F.max_pool2d(c, 3)
"""
POOL_GRAPH = """class GraphModule(torch.nn.Module):
    def forward(self, L_x_: "f32[1, 2, 9, 9][162, 81, 9, 1]cpu", L_w_: "f32[2, 2, 1, 1][2, 1, 1, 1]cpu"):
        l_x_ = L_x_
        l_w_ = L_w_

        # File: /tmp/x.py:6 in fn, code: c = F.conv2d(x, w)
        c: "f32[1, 2, 9, 9][162, 81, 9, 1]cpu" = torch.conv2d(l_x_, l_w_);  l_x_ = l_w_ = None

        # File: /tmp/x.py:7 in fn, code: return F.max_pool2d(c, 3)
        max_pool2d: "f32[1, 2, 3, 3][18, 9, 3, 1]cpu" = torch.nn.functional.max_pool2d(c, 3);  c = None
        return (max_pool2d,)
"""


def test_a_library_call_the_bisector_names_stands_for_the_op_computing_its_input() -> None:
    """pytorch#185509's shape: narrowed from layout_optimization, the bisector names convolution_backward, which
    Inductor runs as a library call (eager's own kernel): its lowering only changes the layout of its input, so the
    op is the one computing that input before it, max_pool2d's backward (its scatter_add and gradient sum)."""
    nodes = (
        NodeOrigin("convolution", "aten.convolution.default", 6),
        NodeOrigin("scatter_add", "aten.scatter_add.default", 7),
        NodeOrigin("view_4", "aten.reshape.default", 7),
        NodeOrigin("add_7", "aten.add.Tensor", 7),
        NodeOrigin("convolution_backward", "aten.convolution_backward.default", 6),
    )
    fused = KernelOrigin(
        "cpp_fused_add_convolution_backward_max_pool2d_with_indices_backward_0", 0,
        lines=(SourceLine(6, ""), SourceLine(7, "")),
    )  # fmt: skip
    extern = KernelOrigin(
        "torch.ops.aten.convolution_backward.default", 1, lines=(SourceLine(6, ""), SourceLine(7, "")), extern=True
    )
    check = _check(POOL_GRAPH, nodes, (_leaf("grad args[0]", LeafKind.GRADIENT),), kernels=(fused, extern))
    bisect = BisectReport(
        "found", "inductor", "inductor_layout_optimization", 0, "inductor_layout_optimization",
        narrowed_number=4, narrowed_op="convolution_backward",
    )  # fmt: skip
    intermediates = IntermediatesReport("backward-not-compared", "the divergent leaves are gradients")
    c = conclude(Localization(_ladder(), bisect, intermediates), check, POOL)
    assert (c.stage, c.workaround, c.op, c.line) == (Stage.CONFIG, "layout_optimization=False", "max_pool2d", 7)
    assert [(s.op, s.line) for s in c.also] == [("aten.convolution_backward.default", 6)]
    assert "a library call that computes eager's values" in c.sentence, c.sentence
    assert "`return F.max_pool2d(c, 3)` (line 7, max_pool2d), which kernel" in c.sentence
    assert "keeps `max_pool2d` on line 7" in c.next_step


def test_a_mutated_input_is_placed_on_its_writers_when_no_node_diverges() -> None:
    nodes = (
        NodeOrigin("index_put", "aten.index_put_.default", 5),
        NodeOrigin("add", "aten.add.Tensor", 6),
        NodeOrigin("copy_", "aten.copy_.default", 6),
    )
    check = _check(MUTATION_GRAPH, nodes, (_leaf("input args[0]", LeafKind.MUTATED_INPUT),))
    intermediates = IntermediatesReport("none-diverges", "every intermediate matches", reproduced=True)
    c = conclude(Localization(_ladder(), BisectReport("found", "inductor"), intermediates), check, MUTATION)
    assert (c.op, c.line) == ("add_", 6) and [(s.op, s.line) for s in c.also] == [("index_put_", 5)]
    assert "input `x` (input args[0])" in c.sentence and "x.add_(x.flip(0))" in c.sentence
    assert not c.sentence.startswith("No first diverging node")


def test_functionalization_suspects_the_programs_in_place_writes() -> None:
    """aot_eager diverges and nothing names an op: the layer that handles mutation points at the program's writes."""
    check = _check(MUTATION_GRAPH, (), (_leaf("out"),))
    c = conclude(Localization(_ladder("aot_eager")), check, MUTATION)
    assert c.stage is Stage.AOT and (c.op, c.line) == ("add_", 6)
    assert "AOTAutograd" in c.next_step and "clone" in c.next_step


def test_precision_and_rng_name_their_setting() -> None:
    c = conclude(Localization(_ladder(removed_by="emulate_precision_casts")))
    assert c.stage is Stage.PRECISION and c.workaround == "emulate_precision_casts=True"
    c = conclude(Localization(_ladder(removed_by="fallback_random")))
    assert c.stage is Stage.RNG and "fallback_random=True" in c.next_step


def test_the_ladder_says_benign_where_its_rungs_are_benign() -> None:
    """Issue #35 (c): the caption said 'match' beside rungs whose verdict column said 'benign'."""
    ladder = _ladder()
    assert ladder.conclusion.startswith(
        "eager match, aot_eager benign, aot_eager_decomp_partition benign: none diverges"
    )


def test_a_conclusion_survives_its_json() -> None:
    check = _check(SENSOR_GRAPH, SENSOR_NODES, (_leaf("out[0]"),))
    loc = Localization(_ladder(), _lowering("remainder", 2), _node("aten.div.Tensor_mode", 6, "bucket = t // STEP"))
    loc = dataclasses.replace(loc, conclusion=conclude(loc, check, SENSOR))
    again = records.from_json(Localization, records.dumps(loc))
    assert again.conclusion == loc.conclusion and isinstance(again.conclusion, Conclusion)


def test_program_sites_read_dynamo_graphs_writes_and_entry_points() -> None:
    sites = ProgramSites.build(MUTATION, GeneratedCode(fx_graphs=(MUTATION_GRAPH,)))
    assert sites.parameter("input args[0]") == "x"
    assert [(s.op, s.line) for s in sites.writers("x")] == [("index_put_", 5), ("add_", 6)]
    sensor = ProgramSites.build(SENSOR, GeneratedCode(fx_graphs=(SENSOR_GRAPH,)))
    assert [s.calls for s in sensor.statements] == [("floordiv",), ("remainder",)]
    # a recorded line whose text is not the program's line (a stale cache entry) is not trusted
    stale = ProgramSites.build(
        SENSOR.replace("bucket = t // STEP", "bucket = t // 0.2"), GeneratedCode(fx_graphs=(SENSOR_GRAPH,))
    )
    assert [s.line for s in stale.statements] == [7]
    assert entry_parameters(
        "class M(torch.nn.Module):\n    def forward(self, a, b):\n        return a\n\n\nfn = M().eval()\n"
    ) == (
        "a",
        "b",
    )


def test_an_augmented_assignment_is_an_in_place_write() -> None:
    """Dynamo prints `h += h` as written; AOTAutograd at fault then suspects it (pytorch#195422's shape)."""
    graph = MUTATION_GRAPH.replace(
        '        add_: "f32[4, 8][8, 1]cpu" = l_x_.add_(flip);  flip = add_ = None',
        '        l_x_ += flip;  x_1: "f32[4, 8][8, 1]cpu" = l_x_;  flip = None',
    )
    sites = ProgramSites.build(MUTATION, GeneratedCode(fx_graphs=(graph,)))
    assert [(s.op, s.line) for s in sites.writers("x")] == [("index_put_", 5), ("add_", 6)]


def test_a_reinplacing_pass_names_the_op_it_made_in_place_on_the_line_it_came_from() -> None:
    nodes = (
        NodeOrigin("slice_1", "aten.slice.Tensor", 6),
        NodeOrigin("index_put", "aten.index_put_.default", 5),
        NodeOrigin("slice_tensor", "aten.slice.Tensor", None),  # a pass made it: no stack trace
        NodeOrigin("copy_", "aten.copy_.default", 6),
    )
    check = _check(MUTATION_GRAPH, nodes, (_leaf("out"),))
    bisect = BisectReport("found", "inductor", "post_grad_passes", 10, "reinplace_inplaceable_ops")
    c = conclude(Localization(_ladder(), bisect, IntermediatesReport("none-diverges", "...")), check, MUTATION)
    assert c.stage is Stage.GRAPH_PASS and (c.op, c.line) == ("aten.index_put_.default", 5)
    assert "graph pass reinplace_inplaceable_ops" in c.sentence and "made it an in-place op" in c.sentence
    lowering = BisectReport("found", "inductor", "lowerings", 2, "slice_tensor")
    c = conclude(Localization(_ladder(), lowering), check, MUTATION)
    # the line of the slice it was made from; a view computes nothing: the op is the write through it on that line
    assert (c.op, c.line) == ("add_", 6) and [(s.op, s.line) for s in c.also] == [("aten.slice.Tensor", 6)]


HASHING = """import torch


def fn(ids):
    mixed = ids.view(torch.int32) * 31
    ids[:, 1:3] = 0
    return mixed
"""
HASHING_GRAPH = """class GraphModule(torch.nn.Module):
    def forward(self, L_ids_: "i64[5, 8][8, 1]cpu"):
        l_ids_ = L_ids_

        # File: /tmp/x.py:5 in fn, code: mixed = ids.view(torch.int32) * 31
        view: "i32[5, 16][16, 1]cpu" = l_ids_.view(torch.int32)
        mixed: "i32[5, 16][16, 1]cpu" = view * 31;  view = None

        # File: /tmp/x.py:6 in fn, code: ids[:, 1:3] = 0
        l_ids_[(slice(None, None, None), slice(1, 3, None))] = 0;  setitem = l_ids_;  l_ids_ = setitem = None
        return (mixed,)
"""


def test_a_view_the_bisector_names_stands_for_the_write_through_it() -> None:
    """pytorch#198101's shape: the bisector names the lowering of the slice a pass made for `ids[:, 1:3] = 0`. A view
    computes nothing; the op is the write through it, fused into one kernel with an earlier read of `ids`."""
    nodes = (
        NodeOrigin("view", "aten.view.dtype", 5),
        NodeOrigin("mul", "aten.mul.Tensor", 5),
        NodeOrigin("slice_1", "aten.slice.Tensor", 6),
        NodeOrigin("copy", "aten.copy.default", 6),
        NodeOrigin("slice_tensor", "aten.slice.Tensor", None),  # made by the reinplacing pass
        NodeOrigin("copy__default", "aten.copy_.default", None),
    )
    kernel = KernelOrigin(
        "cpp_fused_mul_slice_view_0", 0, nodes=("mul", "slice_tensor", "copy__default"),
        lines=(SourceLine(5, ""), SourceLine(6, "")),
    )  # fmt: skip
    check = _check(HASHING_GRAPH, nodes, (_leaf("out"),), kernels=(kernel,))
    c = conclude(Localization(_ladder(), _lowering("slice_tensor", 4)), check, HASHING)
    assert (c.stage, c.op, c.line) == (Stage.LOWERING, "setitem", 6)
    assert [(s.op, s.line) for s in c.also] == [("aten.slice.Tensor", 6)]
    assert "the view `slice` through which `ids[:, 1:3] = 0` (line 6, setitem) writes" in c.sentence, c.sentence
    assert "cpp_fused_mul_slice_view_0" in c.sentence and "line 5 reads the input `ids`" in c.sentence


def test_a_pattern_pass_names_the_op_it_put_in_place_of_the_users() -> None:
    """An attention rewritten into SDPA (pytorch#195320's shape): the fused op, on the line its output is used."""
    program = (
        "import torch\n\n\ndef fn(q, k, v):\n    s = torch.matmul(q, k.permute(0, 2, 3, 1)).div(2.0)\n"
        "    return s.softmax(-1).matmul(v)\n"
    )
    nodes = (
        NodeOrigin("sdpa", "aten._scaled_dot_product_flash_attention_for_cpu.default", None),
        NodeOrigin("getitem", "getitem", 6),
    )
    check = _check("", nodes, (_leaf("out"),))
    bisect = BisectReport("found", "inductor", "joint_graph_passes", 2, "pass_pattern_0")
    c = conclude(Localization(_ladder(), bisect, IntermediatesReport("none-diverges", "...")), check, program)
    assert c.stage is Stage.GRAPH_PASS and c.line == 6 and "scaled_dot_product" in (c.op or "")
    assert "graph pass pass_pattern_0" in c.sentence and "rewrote it" in c.sentence


def test_the_checks_own_inside_stage_stands_in_for_a_localize_without_a_node() -> None:
    """oracle-inside's `CheckResult.inside.origin` (a NodeDiff the check found itself) names the op when Localize's
    first-node step did not run or found nothing."""
    check = _check(SENSOR_GRAPH, SENSOR_NODES, (_leaf("out[0]"),))
    origin = _node("aten.div.Tensor_mode", 6, "bucket = t // STEP").first

    class Inside:
        def __init__(self) -> None:
            self.origin = origin

    check = dataclasses.replace(check)
    object.__setattr__(check, "inside", Inside())
    c = conclude(Localization(_ladder()), check, SENSOR)
    assert (c.op, c.line) == ("aten.div.Tensor_mode", 6)
    assert [f.step for f in c.findings] == ["ladder", "the check's inside stage"]
