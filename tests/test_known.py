"""Known causes: a check that looks like a reported upstream issue (or a gallery case) says so first.

The graph below is what a check of the gallery's cat_empty_stride captured (Dynamo's printed graph, torch 2.13);
the gallery's own checks (tests/test_sample_cases.py) and a GPT-2 check with its cache (tests/test_models.py) run
the same recognition on real results."""

from __future__ import annotations

from engine import LeafKind, LeafResult, Symptom, Verdict
from engine.judge.headline import headline
from engine.judge.known import KNOWN, Graph, recognise

CAT_GRAPH = """class GraphModule(torch.nn.Module):
    def forward(self, L_x_: "f32[2, 16, 64][1024, 64, 1]cpu", L_empty_: "f32[2, 4, 0, 16][64, 16, 16, 1]cpu"):
        l_x_ = L_x_
        l_empty_ = L_empty_
        view: "f32[2, 16, 4, 16][1024, 64, 16, 1]cpu" = l_x_.view(2, 16, 4, 16);  l_x_ = None
        k: "f32[2, 4, 16, 16][1024, 16, 64, 1]cpu" = view.transpose(1, 2);  view = None
        cat: "f32[2, 4, 16, 16][1024, 256, 16, 1]cpu" = torch.cat([l_empty_, k], dim = -2);  l_empty_ = k = None
        return (cat,)
"""


def leaf(name: str, *symptoms: Symptom, verdict: Verdict = Verdict.DIVERGENT) -> LeafResult:
    return LeafResult(name, LeafKind.OUTPUT, verdict, "", symptoms=symptoms, numel=1024)


def test_a_cat_with_an_empty_input_is_the_known_layout_issue_and_says_so_first() -> None:
    found = recognise([leaf("out", Symptom.STRIDE)], [CAT_GRAPH])
    assert found is not None and found.issue.key == "cat-empty-stride" and found.leaves == ("out",)
    said = headline(Verdict.DIVERGENT, [leaf("out", Symptom.STRIDE)], known=found)
    assert said.sentence.startswith("looks like the known `cat` with an empty tensor layout issue, https://")
    assert "Localize, then Minimize" not in said.next_step and "cat_empty_stride" in said.next_step


def test_the_same_graph_without_an_empty_input_is_not_recognised() -> None:
    graph = CAT_GRAPH.replace("f32[2, 4, 0, 16]", "f32[2, 4, 3, 16]")
    assert Graph.read([graph]).shapes["l_empty_"] == ("f32", (2, 4, 3, 16))  # the alias carries the shape
    assert recognise([leaf("out", Symptom.STRIDE)], [graph]) is None


def test_a_value_difference_is_not_a_layout_issue_and_matches_are_only_for_divergent_leaves() -> None:
    assert recognise([leaf("out", Symptom.VALUE)], [CAT_GRAPH]) is None
    assert recognise([leaf("out", Symptom.STRIDE, verdict=Verdict.BENIGN)], [CAT_GRAPH]) is None


def test_leaves_the_cause_does_not_explain_are_named_in_the_next_step() -> None:
    leaves = [leaf("out[0]", Symptom.STRIDE), leaf("out[1]", Symptom.VALUE)]
    found = recognise(leaves, [CAT_GRAPH])
    assert found is not None and found.unexplained == ("out[1]",)
    assert "out[1]: Localize, then Minimize" in headline(Verdict.DIVERGENT, leaves, known=found).next_step


def test_every_known_cause_links_upstream_or_a_search_and_names_its_status() -> None:
    keys = [k.key for k in KNOWN]
    assert len(keys) == len(set(keys))
    for known in KNOWN:
        assert known.url.startswith("https://github.com/pytorch/pytorch/issues"), known.key
        assert known.status and known.symptoms and ": " in known.title, known.key


# what a check of the gallery's copy_then_mutate_source captured: Dynamo keeps `dst[...] = src` as a subscript
# assignment (no `setitem(` call), and quotes the source in comments
COPY_GRAPH = """class GraphModule(torch.nn.Module):
    def forward(self, L_src_: "f32[3, 4][4, 1]cpu", L_dst_: "f32[3, 4][4, 1]cpu"):
        l_src_ = L_src_
        l_dst_ = L_dst_

        # File: copy_then_mutate_source.py:6 in fn, code: dst[0:, :] = src[0:, :]  # copy src -> dst
        getitem: "f32[3, 4][4, 1]cpu" = l_src_[(slice(0, None, None), slice(None, None, None))]
        l_dst_[(slice(0, None, None), slice(None, None, None))] = getitem;  setitem = l_dst_;  l_dst_ = getitem = None

        # File: copy_then_mutate_source.py:7 in fn, code: src.add_(1)  # then mutate src in place
        add_: "f32[3, 4][4, 1]cpu" = l_src_.add_(1);  add_ = None
        return (l_src_,)
"""


def test_a_subscript_assignment_then_an_in_place_update_is_the_known_copy_then_mutate() -> None:
    found = recognise([leaf("input args[0]", Symptom.VALUE)], [COPY_GRAPH])
    assert found is not None and found.issue.key == "copy-then-mutate"


def test_a_floor_division_quoted_only_in_a_source_comment_is_not_the_graphs() -> None:
    """The gallery's bf16 forecaster: `t // self.cfg.patch` of Python ints appears only in Dynamo's comments; its
    bug is the remainder by a Python float."""
    graph = """class GraphModule(torch.nn.Module):
    def forward(self, L_t_: "bf16[4, 6][6, 1]cpu"):
        l_t_ = L_t_
        # File: forecaster.py:34 in forward, code: patches = series.reshape(b, t // self.cfg.patch, self.cfg.patch)
        phase: "bf16[4, 6][6, 1]cpu" = torch.remainder(l_t_, 0.7);  l_t_ = None
        return (phase,)
"""
    found = recognise([leaf("out", Symptom.VALUE)], [graph])
    assert found is not None and found.issue.key == "scalar-not-rounded-bf16", found


def test_attention_written_with_the_matmul_operator_is_the_known_sdpa_pattern() -> None:
    """A reranker's `q @ k.permute(0, 2, 3, 1) / sqrt(d)`: Dynamo keeps `@` as an operator, not a `matmul` call."""
    graph = """class GraphModule(torch.nn.Module):
    def forward(self, L_q_: "f32[1, 4, 4, 8][128, 32, 8, 1]cpu", L_k_: "f32[1, 4, 4, 8][128, 32, 8, 1]cpu"):
        l_q_ = L_q_
        l_k_ = L_k_
        permute: "f32[1, 4, 8, 4][128, 8, 1, 32]cpu" = l_k_.permute(0, 2, 3, 1);  l_k_ = None
        matmul: "f32[1, 4, 4, 4][64, 16, 4, 1]cpu" = l_q_ @ permute;  permute = None
        softmax: "f32[1, 4, 4, 4][64, 16, 4, 1]cpu" = matmul.softmax(dim = -1);  matmul = None
        matmul_1: "f32[1, 4, 4, 8][128, 32, 8, 1]cpu" = softmax @ l_q_;  softmax = l_q_ = None
        return (matmul_1,)
"""
    found = recognise([leaf("out", Symptom.VALUE)], [graph])
    assert found is not None and found.issue.key == "sdpa-permuted-key", found
