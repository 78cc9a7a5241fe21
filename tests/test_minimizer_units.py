"""The graph path, the oracle's signature rules and the checkpoint, without compiling anything."""

from __future__ import annotations

import time
from pathlib import Path

from engine import CheckOptions, CheckResult, ErrorInfo, ErrorKind, LeafKind, LeafResult, Symptom, Verdict
from minimizer.graph import rewrite_with_graph
from minimizer.interestingness import Outcome, Signature, classify, signature_of
from minimizer.passes import delete_statements
from minimizer.passes.nodes import graph_rewrite
from minimizer.reducer import PredicateOracle, Problem, Reducer, load_checkpoint
from minimizer.size import sort_key
from minimizer.syntax import canonical, keeps_style

GRAPH = (
    "TRACED GRAPH\n ===== __compiled_fn_1 =====\nclass GraphModule(torch.nn.Module):\n"
    '    def forward(self, L_x_: "f32[6][1]cpu"):\n        l_x_ = L_x_\n\n'
    "        # File: case.py:8 in forward, code: ...\n"
    '        elu: "f32[6][1]cpu" = torch.nn.functional.elu(l_x_, alpha = 0.52)\n'
    '        zeros_like: "f32[6][1]cpu" = torch.zeros_like(l_x_);  l_x_ = None\n'
    '        div: "f32[6][1]cpu" = torch.div(elu, zeros_like);  elu = zeros_like = None\n'
    "        return (div,)"
)
MODULE_SOURCE = (
    "import torch\nimport torch.nn.functional as F\n\nclass Bug(torch.nn.Module):\n    def forward(self, x):\n       "
    " for _ in range(1):\n            y = F.elu(x, alpha=0.52)\n        return torch.div(y, torch.zeros_like(x))\n\nfn"
    " = Bug()\n\ndef inputs():\n    return (torch.tensor([-1e-08, -1e-09]),)\n"
)


def _leaf(name: str, verdict: Verdict, *symptoms: Symptom) -> LeafResult:
    return LeafResult(name=name, kind=LeafKind.OUTPUT, verdict=verdict, explanation="", symptoms=symptoms)


def _result(*leaves: LeafResult, verdict: Verdict = Verdict.DIVERGENT) -> CheckResult:
    return CheckResult(verdict=verdict, explanation="", options=CheckOptions(), leaves=leaves)


def test_the_graph_rewrite_flattens_a_module_into_straight_line_torch_code() -> None:
    problem = Problem(MODULE_SOURCE, PredicateOracle(lambda s: "elu" in s and "def inputs" in s))
    graph_rewrite(lambda source: (GRAPH,))(problem)
    assert (
        "class Bug" not in problem.current
        and "def fn(x):\n    elu = torch.nn.functional.elu(x, alpha=0.52)" in problem.current
    )


def test_the_graph_rewrite_is_not_proposed_for_several_graphs() -> None:
    problem = Problem(MODULE_SOURCE, PredicateOracle(lambda s: True))
    graph_rewrite(lambda source: (GRAPH, GRAPH))(problem)
    assert problem.current == MODULE_SOURCE


def test_the_signature_is_the_first_divergent_leaf() -> None:
    result = _result(_leaf("out[0]", Verdict.MATCH), _leaf("out[1]", Verdict.DIVERGENT, Symptom.NAN))
    assert signature_of(result) == Signature("out[1]", LeafKind.OUTPUT, frozenset({Symptom.NAN}))


def test_a_different_symptom_is_not_interesting() -> None:
    target = Signature("out", LeafKind.OUTPUT, frozenset({Symptom.NAN}))
    assert classify(target, _result(_leaf("out", Verdict.DIVERGENT, Symptom.VALUE))) is Outcome.OTHER_SYMPTOM


def test_an_error_is_never_interesting() -> None:
    target = Signature("out", LeafKind.OUTPUT, frozenset({Symptom.VALUE}))
    failed = CheckResult(
        verdict=Verdict.ERROR, explanation="", options=CheckOptions(), error=ErrorInfo(ErrorKind.EAGER, "boom")
    )
    assert classify(target, failed) is Outcome.ERROR


def test_a_renamed_leaf_counts_when_the_output_structure_changed() -> None:
    target = Signature("out[1]", LeafKind.OUTPUT, frozenset({Symptom.VALUE}))
    assert classify(target, _result(_leaf("out", Verdict.DIVERGENT, Symptom.VALUE))) is Outcome.INTERESTING


def test_the_named_leaf_must_keep_the_divergence_when_it_still_exists() -> None:
    target = Signature("out[0]", LeafKind.OUTPUT, frozenset({Symptom.VALUE}))
    result = _result(_leaf("out[0]", Verdict.BENIGN), _leaf("out[1]", Verdict.DIVERGENT, Symptom.VALUE))
    assert classify(target, result) is Outcome.OTHER_SYMPTOM


def test_a_cut_may_add_a_layout_difference_but_never_lose_or_trade_a_symptom() -> None:
    # the cut returning attention's output sees the SDPA rewrite's layout as well as its values (issue #32)
    target = Signature("out", LeafKind.OUTPUT, frozenset({Symptom.VALUE}))
    assert (
        classify(target, _result(_leaf("out", Verdict.DIVERGENT, Symptom.VALUE, Symptom.STRIDE))) is Outcome.INTERESTING
    )
    assert (
        classify(target, _result(_leaf("out", Verdict.DIVERGENT, Symptom.VALUE, Symptom.NAN))) is Outcome.OTHER_SYMPTOM
    )
    layout = Signature("out", LeafKind.OUTPUT, frozenset({Symptom.STRIDE}))
    assert classify(layout, _result(_leaf("out", Verdict.DIVERGENT, Symptom.VALUE, Symptom.STRIDE))) is (
        Outcome.OTHER_SYMPTOM
    )


def test_a_buffer_made_an_explicit_input_by_the_graph_rewrite_is_the_same_leaf() -> None:
    target = Signature("state self.table", LeafKind.STATE, frozenset({Symptom.VALUE}))
    written = LeafResult("input args[2]", LeafKind.MUTATED_INPUT, Verdict.DIVERGENT, "", symptoms=(Symptom.VALUE,))
    assert classify(target, _result(written)) is Outcome.INTERESTING
    assert classify(target, _result(_leaf("out", Verdict.DIVERGENT, Symptom.VALUE))) is Outcome.OTHER_SYMPTOM


def test_a_refusal_says_what_the_candidate_lost() -> None:
    from minimizer.interestingness import lost

    target = Signature("out['logits']", LeafKind.OUTPUT, frozenset({Symptom.VALUE}))
    result = _result(_leaf("out", Verdict.DIVERGENT, Symptom.VALUE, Symptom.NAN))
    said = lost(target, result, classify(target, result))
    assert (
        said == "divergent in `out` (output) with nan, value; wanted `out['logits']` (output) with value "
        "(it has no leaf `out['logits']`: any output leaf would do)"
    ), said
    quiet = _result(_leaf("out", Verdict.BENIGN), verdict=Verdict.BENIGN)
    assert lost(target, quiet, Outcome.NOT_DIVERGENT).startswith("benign: ")


def test_the_best_candidate_is_checkpointed(tmp_path: Path) -> None:
    problem = Problem("a = 1\nb = 2\nprint(b)\n", PredicateOracle(lambda s: "print(b)" in s), checkpoint=tmp_path)
    Reducer([delete_statements]).run(problem)
    best, rejected = load_checkpoint(tmp_path)
    assert best == "b = 2\nprint(b)\n" and rejected


def test_should_stop_ends_a_reduction_before_the_next_oracle_batch() -> None:
    asked: list[str] = []
    problem = Problem(
        "a = 1\nb = 2\nprint(b)\n", PredicateOracle(lambda s: asked.append(s) is None), should_stop=lambda: True
    )
    stats = Reducer([delete_statements]).run(problem)
    assert stats.budget_exhausted and not asked and problem.current == "a = 1\nb = 2\nprint(b)\n"


def test_candidates_that_lose_the_snippet_style_never_reach_the_oracle() -> None:
    source = "import torch\n\ndef fn(x):\n    print(x)\n    return x\n\ndef inputs():\n    return (torch.ones(1),)\n"
    asked: list[str] = []
    problem = Problem(
        source, PredicateOracle(lambda s: asked.append(s) is None and False), plausible=keeps_style(source)
    )
    Reducer([delete_statements]).run(problem)
    assert asked and all("def fn" in s and "def inputs" in s for s in asked)


def test_an_edit_the_oracle_refused_is_not_proposed_again_in_another_context() -> None:
    asked: list[str] = []
    problem = Problem(
        "a = 1\nb = 2\nc = 3\nprint(a, c)\n", PredicateOracle(lambda s: asked.append(s) is None and "a = 1" in s)
    )
    assert problem.try_adopt("b = 2\nc = 3\nprint(2, c)\n") is False  # the edit: drop `a = 1`, change the print
    assert problem.try_adopt("a = 1\nc = 3\nprint(a, c)\n")  # adopted: another context
    asked.clear()
    assert (
        problem.try_adopt("c = 3\nprint(2, c)\n") is False and asked == []
    )  # a different program, but not the same edit
    assert problem.stats().skipped_edits == 1


def test_the_graph_rewrite_is_not_proposed_when_it_only_wins_by_tidying() -> None:
    erf_graph = (
        'class GraphModule(torch.nn.Module):\n    def forward(self, L_args_0_: "f32[8][1]cpu"):\n        l_args_0_ ='
        ' L_args_0_\n        erf: "f32[8][1]cpu" = torch.erf(l_args_0_);  l_args_0_ = None\n        return (erf,)'
    )
    assert rewrite_with_graph("import torch\nfn = torch.erf\ninputs = (torch.ones(8),)\n", (erf_graph,)) is not None
    source = (
        '"""A long docstring that tidying alone removes."""\nimport torch\nfn = torch.erf\n\ndef inputs():\n    return'
        " (torch.ones(8),)\n"
    )
    asked: list[str] = []
    problem = Problem(source, PredicateOracle(lambda s: asked.append(s) is None))
    graph_rewrite(lambda s: (erf_graph,))(problem)
    assert asked == [] and problem.current == source


def test_the_graph_rewrite_writes_dynamo_slices_as_slice_syntax() -> None:
    graph = (
        'class GraphModule(torch.nn.Module):\n    def forward(self, L_x_: "f32[2, 9][9, 1]cpu"):\n        l_x_ = L_x_\n'
        '        y: "f32[2, 6][9, 1]cpu" = l_x_[(slice(None, None, None), slice(1, 7, None))];  l_x_ = None\n       '
        " return (y,)"
    )
    rewritten = rewrite_with_graph("import torch\nfn = torch.relu\ninputs = (torch.ones(2, 9),)\n", (graph,))
    assert rewritten is not None and "y = x[:, 1:7]" in rewritten


def test_a_failed_repro_falls_back_to_the_last_candidate_whose_repro_reproduces() -> None:
    from minimizer.minimize import fall_back
    from minimizer.repro import Verification

    tried: list[str] = []

    def check_repro(program: str) -> tuple[str, Verification]:
        tried.append(program)
        return f"repro of {program}", Verification(program in ("a", "b"), 1, "")

    found = fall_back(["a", "b", "c", "d", "e"], check_repro, lambda: False)
    assert found is not None and found[0] == "b" and tried[0] == "a" and len(tried) <= 4


def test_the_graph_tells_eval_mode_from_training_mode() -> None:
    from minimizer.mechanism import read_graphs

    graph = (
        'class GraphModule(torch.nn.Module):\n    def forward(self, L_x_: "f32[4][1]cpu"):\n        l_x_ = L_x_\n      '
        '  floordiv: "f32[4][1]cpu" = l_x_ // 0.1\n        d: "f32[4][1]cpu" = torch.nn.functional.dropout(floordiv,'
        " 0.5, {training}, False)\n        return (d,)"
    )
    evaluating, training = read_graphs([graph.format(training=False)]), read_graphs([graph.format(training=True)])
    assert not evaluating.training_ops and not evaluating.random_ops and evaluating.ops == ("floor_divide", "dropout")
    assert training.training_ops == {"dropout"} and training.random_ops == {"dropout"}


def test_the_title_leads_with_the_op_where_the_divergence_starts():
    from minimizer.report import title

    result = CheckResult(verdict=Verdict.DIVERGENT, explanation="", options=CheckOptions(device="cpu"))
    starts = Signature("out", LeafKind.OUTPUT, frozenset({Symptom.VALUE}), first_op="aten.remainder.Scalar")
    ops = ("abs", "amax", "add", "layer_norm", "remainder")
    assert (
        title(ops, starts, result)
        == "[inductor][cpu] `remainder`, `abs`, `amax`: torch.compile gives different values from eager"
    )
    assert "`abs`, `amax`, `add`" in title(ops, Signature("out", LeafKind.OUTPUT, frozenset({Symptom.VALUE})), result)


def _chain_graph(nodes: int) -> str:
    """A Dynamo graph of `nodes` sin calls in a row: what a loop over a layer unrolls to."""
    lines = [
        "class GraphModule(torch.nn.Module):",
        '    def forward(self, L_x_: "f32[6][1]cpu"):',
        "        l_x_ = L_x_",
    ]
    previous = "l_x_"
    for i in range(nodes):
        name = f"sin_{i}" if i else "sin"
        lines.append(f'        {name}: "f32[6][1]cpu" = torch.sin({previous});  {previous} = None')
        previous = name
    return "\n".join(lines + [f"        return ({previous},)"])


def test_a_budget_that_runs_out_in_the_graph_paths_bisection_keeps_the_best_cut_so_far() -> None:
    """The rewrite of a model is often larger than the model (its parameters made inputs): its cuts used to be adopted
    only once the bisection ended, so a budget that ran out in it (the attention corpus program) kept nothing."""
    source = (
        "import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        for _ in range(20):\n         "
        "   x = torch.sin(x)\n        return x\n\n    def unused(self, y, z):\n        return torch.cat([y * 2.0 + z, y"
        " - z * 3.0, (y + z).relu(), torch.tanh(y) * z], dim=-1)\n\nfn = Net()\n\ndef inputs():\n    return"
        " (torch.ones(6),)\n"
    )
    calls: list[str] = []

    def diverges(
        candidate: str,
    ) -> bool:  # the divergence starts at the fourth sin; the budget ends in the second probe batch
        calls.append(candidate)
        if len(calls) == 3:
            problem.deadline = time.monotonic() - 1
        return candidate.count("torch.sin(") >= 4

    problem = Problem(canonical(source), PredicateOracle(diverges), deadline=time.monotonic() + 600)
    stats = Reducer([graph_rewrite(lambda s: (_chain_graph(20),))]).run(problem)
    assert stats.budget_exhausted and len(calls) == 3
    assert "class Net" not in problem.current and 4 <= problem.current.count("torch.sin(") < 20, problem.current
    assert sort_key(problem.current) < sort_key(canonical(source))


def test_the_graph_rewrite_of_a_no_grad_region_is_a_no_grad_function() -> None:
    # an inference wrapper (`with torch.no_grad(): return self.model(x)`): its two grad switches are statements whose
    # value nothing reads, so tidying the rewrite dropped them and every graph-path candidate ran with gradients on
    graph = GRAPH.replace(
        "        l_x_ = L_x_\n\n",
        "        l_x_ = L_x_\n\n"
        "        _set_grad_enabled = torch._C._set_grad_enabled(False);  _set_grad_enabled = None\n",
    ).replace(
        "        return (div,)",
        "        _set_grad_enabled_1 = torch._C._set_grad_enabled(True);  _set_grad_enabled_1 = None\n"
        "        return (div,)",
    )
    rewritten = rewrite_with_graph(MODULE_SOURCE, (graph,))
    assert rewritten is not None and "@torch.no_grad()\ndef fn(x):" in rewritten, rewritten
    assert "_set_grad_enabled" not in rewritten
    assert "@torch.no_grad" not in (rewrite_with_graph(MODULE_SOURCE, (GRAPH,)) or "")


def test_the_graph_rewrite_draws_a_running_variance_positive() -> None:
    # a BatchNorm's running variance drawn from randn made batch_norm's output NaN on both sides: the rewrite of a
    # conv front end (keyword_spotter) was refused as not divergent
    graph = (
        GRAPH.replace(
            'def forward(self, L_x_: "f32[6][1]cpu"):',
            'def forward(self, L_x_: "f32[6][1]cpu", L_self_modules_norm_buffers_running_var_: "f32[6][1]cpu", '
            'L_self_modules_norm_buffers_running_mean_: "f32[6][1]cpu"):',
        )
        .replace(
            "        l_x_ = L_x_\n",
            "        l_x_ = L_x_\n"
            "        l_self_modules_norm_buffers_running_var_ = L_self_modules_norm_buffers_running_var_\n"
            "        l_self_modules_norm_buffers_running_mean_ = L_self_modules_norm_buffers_running_mean_\n",
        )
        .replace(
            "torch.div(elu, zeros_like)",
            "torch.div(elu - l_self_modules_norm_buffers_running_mean_, l_self_modules_norm_buffers_running_var_)",
        )
    )
    rewritten = rewrite_with_graph(MODULE_SOURCE, (graph,))
    assert rewritten is not None and "def fn(x, norm_running_var, norm_running_mean):" in rewritten, rewritten
    assert "torch.rand(6), torch.randn(6))" in rewritten, rewritten


def test_the_graph_rewrite_keeps_a_no_grad_helper_as_a_no_grad_block() -> None:
    # a forward that calls a `@torch.no_grad()` helper (a buffer rebuilt in place): its switches sit mid-body, so
    # tidying the rewrite dropped them and every graph-path candidate was refused as another no-grad state
    graph = GRAPH.replace(
        '        zeros_like: "f32[6][1]cpu"',
        "        _set_grad_enabled = torch._C._set_grad_enabled(False);  _set_grad_enabled = None\n"
        '        zeros_like: "f32[6][1]cpu"',
    ).replace(
        '        div: "f32[6][1]cpu"',
        "        _set_grad_enabled_1 = torch._C._set_grad_enabled(True);  _set_grad_enabled_1 = None\n"
        '        div: "f32[6][1]cpu"',
    )
    rewritten = rewrite_with_graph(MODULE_SOURCE, (graph,))
    assert rewritten is not None and "_set_grad_enabled" not in rewritten and "@torch.no_grad" not in rewritten
    assert (
        "    elu = torch.nn.functional.elu(x, alpha=0.52)\n    with torch.no_grad():\n        zeros_like = "
        "torch.zeros_like(x)\n    div = torch.div(elu, zeros_like)" in rewritten
    ), rewritten
