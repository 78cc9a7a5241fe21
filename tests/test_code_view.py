"""The source <-> kernel view's data, built from a run's provenance: no compile, no browser (those are
tests/test_provenance.py and tests/test_e2e_code_view.py)."""

from __future__ import annotations

import pytest

pytest.importorskip("streamlit")

from app.web import code_view  # noqa: E402
from engine import CheckOptions, CheckResult, Kernel, LeafKind, LeafResult, OutputCode, Verdict  # noqa: E402
from engine.localization.reports import IntermediatesReport, NodeDiff, NodeSite  # noqa: E402
from engine.provenance import TRACKED, KernelOrigin, NodeOrigin, Provenance, SourceLine  # noqa: E402

PROGRAM = "import torch\ndef fn(x, w):\n    h = torch.sigmoid(x * 2.0)\n    o = h @ w\n    return torch.relu(o) + 1.0\n"
WRAPPER = "\n".join(
    [
        "cpp_fused_mul_sigmoid_0 = async_compile.cpp_pybinding([], r'''",
        "void kernel() {}",
        "''')",
        "cpp_fused_add_relu_1 = async_compile.cpp_pybinding([], r'''",
        "void kernel() {}",
        "''')",
        "def call(args):",
        "    # [Provenance debug handles] cpp_fused_mul_sigmoid_0:1",
        "    cpp_fused_mul_sigmoid_0(buf0, arg0_1)",
        "    # [Provenance debug handles] extern_kernels.mm:2",
        "    extern_kernels.mm(buf0, arg1_1, out=buf1)",
        "    # [Provenance debug handles] cpp_fused_add_relu_1:3",
        "    cpp_fused_add_relu_1(buf1)",
        "    return (buf1, )",
    ]
)
PROV = Provenance(
    TRACKED,
    program="snippet.py",
    kernels=(
        KernelOrigin(
            "cpp_fused_mul_sigmoid_0",
            1,
            ("mul", "sigmoid"),
            ("h",),
            (SourceLine(3, "h = torch.sigmoid(x * 2.0)"),),
            wrapper_spans=((1, 3), (9, 9)),
        ),
        KernelOrigin(
            "extern_kernels.mm",
            2,
            ("mm",),
            ("o",),
            (SourceLine(4, "o = h @ w"),),
            wrapper_spans=((11, 11),),
            extern=True,
        ),
        KernelOrigin(
            "cpp_fused_add_relu_1",
            3,
            ("relu", "add"),
            ("relu", "add"),
            (SourceLine(5, "return torch.relu(o) + 1.0"),),
            wrapper_spans=((4, 6), (13, 13)),
        ),
    ),
    nodes=(
        NodeOrigin("mul", "aten.mul.Tensor", 3),
        NodeOrigin("sigmoid", "aten.sigmoid.default", 3),
        NodeOrigin("mm", "aten.mm.default", 4),
        NodeOrigin("relu", "aten.relu.default", 5),
        NodeOrigin("add", "aten.add.Tensor", 5),
    ),
    outputs=("add",),
    output_types=("f32[8, 4]",),
)
MODULE = OutputCode("0_inference", WRAPPER, (), PROV)


def result(*leaves: LeafResult, modules: tuple[OutputCode, ...] = (MODULE,)) -> CheckResult:
    from engine.result import GeneratedCode

    return CheckResult(Verdict.BENIGN, "", CheckOptions(), leaves=leaves, code=GeneratedCode(output_code=modules))


def leaf(
    name: str = "out", shape: tuple[int, ...] = (8, 4), dtype: str = "float32", kind: LeafKind = LeafKind.OUTPUT
) -> LeafResult:
    return LeafResult(name, kind, Verdict.BENIGN, "", shape=shape, dtype=dtype)


def test_each_program_line_and_output_line_belongs_to_the_kernel_torch_names():
    data = code_view.view_data(PROGRAM, "snippet.py", [MODULE])
    kernels = {k["name"]: k for k in data["kernels"]}
    assert kernels["cpp_fused_mul_sigmoid_0"]["lines"] == [3] and kernels["extern_kernels.mm"]["extern"]
    assert len({k["color"] for k in data["kernels"]}) == 3  # one colour each
    owner = {o["n"]: o["k"] for o in data["out"] if "n" in o}
    assert owner[1] == owner[3] == owner[9] == "0_inference/cpp_fused_mul_sigmoid_0"  # its definition and its call
    assert owner[13] == "0_inference/cpp_fused_add_relu_1" and owner[7] is None  # call() itself is no kernel's
    assert {n["name"]: n["line"] for n in data["nodes"]}["mm"] == 4
    assert code_view.document(data).count("<script>") == 1


def test_program_text_is_escaped_in_the_page():
    data = code_view.view_data("x = '</script><img src=x onerror=alert(1)>'\n", "snippet.py", [MODULE])
    assert "<img" not in data["program"][0] and "&lt;img" in data["program"][0]
    payload = code_view.document(data).split("const D = ")[1].split("\n")[0]
    assert (
        "</script" not in payload
    )  # the JSON cannot close its script tag; the raw text in it is only inserted escaped


def test_a_leaf_is_written_by_the_kernel_that_computes_the_returned_node():
    assert code_view.writers(result(leaf())) == {"out": code_view.Writer("0_inference", "cpp_fused_add_relu_1", (5,))}
    # no guess where the pairing is not plain: another dtype or shape, a mutated input, a graph break
    assert code_view.writers(result(leaf(dtype="float64"))) == {}
    assert code_view.writers(result(leaf(shape=(4, 8)))) == {}
    assert code_view.writers(result(leaf(), leaf("x", kind=LeafKind.MUTATED_INPUT))) == {}
    second = OutputCode("1_inference", WRAPPER, (), PROV)
    assert code_view.writers(result(leaf(), modules=(MODULE, second))) == {}


def test_the_first_diverging_node_is_placed_on_its_line_and_kernel():
    report = IntermediatesReport(
        "found",
        "first diverging intermediate: relu",
        NodeDiff(0, "relu", "aten.relu.default", Verdict.DIVERGENT, "max 9 ULP", 3, 32, 9.0),
        kernel="cpp_fused_relu_0",
        output_code_label="0_inference",
    )
    placed = code_view.place_divergence([MODULE], report)
    assert (placed.module, placed.kernel, placed.line) == ("0_inference", "cpp_fused_add_relu_1", 5)
    assert "3 of 32 elements differ, max 9 ULP" in placed.text
    data = code_view.view_data(PROGRAM, "snippet.py", [MODULE], placed)
    assert data["divergence"]["kernel"] == "0_inference/cpp_fused_add_relu_1" and data["divergence"]["line"] == 5
    # a node the check's graph does not have, of no known origin: named, with no kernel, and the text says so
    gone = IntermediatesReport(
        "found",
        "",
        NodeDiff(0, "where_7", "aten.where.self", Verdict.DIVERGENT, "", 1, 2, 3.0),
        kernel="cpp_fused_where_4",
        output_code_label="0_inference",
    )
    placed = code_view.place_divergence([MODULE], gone)
    assert placed.line is None and placed.kernel is None and "not in this check's own graph" in placed.text


def test_the_localized_node_is_placed_by_its_origin_not_by_the_instrumented_compiles_label():
    """Localization's instrumented compile is a second compile: its module is `1_inference` beside the check's
    `0_inference`."""
    site = NodeSite(5, "return torch.relu(o) + 1.0", ("relu",))
    by_name = IntermediatesReport(
        "found",
        "",
        NodeDiff(0, "relu", "aten.relu.default", Verdict.DIVERGENT, "", 1, 2, 3.0, site),
        output_code_label="1_inference",
    )
    placed = code_view.place_divergence([MODULE], by_name, PROGRAM)
    assert (placed.module, placed.kernel, placed.line) == ("0_inference", "cpp_fused_add_relu_1", 5)
    # named differently in the instrumented compile: the kernel made from the same Dynamo-graph node
    renamed = IntermediatesReport(
        "found",
        "",
        NodeDiff(0, "relu_3", "aten.relu.default", Verdict.DIVERGENT, "", 1, 2, 3.0, site),
        output_code_label="1_inference",
    )
    placed = code_view.place_divergence([MODULE], renamed, PROGRAM)
    assert (placed.module, placed.kernel, placed.line) == ("0_inference", "cpp_fused_add_relu_1", 5)
    # no Dynamo-graph origin recorded: the node of the same op on the same (verified) program line
    by_line = IntermediatesReport(
        "found",
        "",
        NodeDiff(
            0,
            "sigmoid_9",
            "aten.sigmoid.default",
            Verdict.DIVERGENT,
            "",
            1,
            2,
            3.0,
            NodeSite(3, "h = torch.sigmoid(x * 2.0)"),
        ),
        output_code_label="1_inference",
    )
    placed = code_view.place_divergence([MODULE], by_line, PROGRAM)
    assert (placed.module, placed.kernel, placed.line) == ("0_inference", "cpp_fused_mul_sigmoid_0", 3)
    # a line whose text is not the program's (another version of it) is not trusted
    stale = IntermediatesReport(
        "found",
        "",
        NodeDiff(
            0, "sigmoid_9", "aten.sigmoid.default", Verdict.DIVERGENT, "", 1, 2, 3.0, NodeSite(3, "h = torch.tanh(x)")
        ),
        output_code_label="1_inference",
    )
    placed = code_view.place_divergence([MODULE], stale, PROGRAM)
    assert (placed.module, placed.kernel, placed.line) == (None, None, None)


def test_python_floor_division_is_not_a_comment_but_a_cpp_comment_is():
    program = "def fn(a, b):\n    return a // b  # floor\n"
    wrapper = "\n".join(
        [
            "cpp_fused_0 = async_compile.cpp_pybinding([], r'''",
            "#include <cmath>",
            "    // a C++ comment",
            "''')",
            "x = y // 2",
        ]
    )
    module = OutputCode("0_inference", wrapper, (Kernel("cpp_fused_0", "cpp", ""),), PROV)
    data = code_view.view_data(program, "snippet.py", [module])
    assert data["program"][1] == '    <b class="kw">return</b> a // b  <i class="cm"># floor</i>'
    out = {o["n"]: o["html"] for o in data["out"] if "n" in o}
    assert (
        'class="cm"' not in out[2] and out[3] == '    <i class="cm">// a C++ comment</i>' and 'class="cm"' not in out[5]
    )

    assert code_view.place_divergence([MODULE], IntermediatesReport("none-diverges", "")) is None
