"""Real torch.compile on CPU: every snippet style, every verdict, every compared kind of leaf."""

from __future__ import annotations

import numpy as np
import pytest

from engine import ErrorKind, LeafKind, Symptom, Verdict, Witness, records
from tests.faults import fault_snippet

PROGRAM = """
def fn(x):
    return torch.relu(x) * 2.0, x.sum(0)


def inputs():
    return (torch.randn(8, 8),)
"""


@pytest.mark.slow
def test_fn_inputs_style_is_benign_reassociation(check):
    r = check("matmul_sum")
    assert (r.style, r.verdict) == ("fn-inputs", Verdict.BENIGN)
    leaf = r.leaf("out[0]")
    assert leaf.mismatches > 0 and leaf.compiled_ref_rms is not None and "reassociation" in leaf.explanation


@pytest.mark.slow
def test_kernelbench_style(check):
    r = check("kernelbench_gelu")
    assert r.style == "kernelbench" and r.verdict in (Verdict.MATCH, Verdict.BENIGN)
    assert r.leaf("out").shape == (16,)


@pytest.mark.slow
def test_repro_style_checks_every_compiled_call(check):
    r = check("repro_style")
    assert r.style == "repro" and r.verdict is Verdict.MATCH
    assert [leaf.name for leaf in r.leaves] == ["call0: out", "call1: out"]


@pytest.mark.slow
def test_precision_cast_verdict_from_a_bf16_chain_names_the_value_whose_rounding_was_skipped(check):
    r = check("bf16_chain")
    assert r.verdict is Verdict.PRECISION_CAST
    explanation = r.leaf("out").explanation
    assert "emulate_precision_casts=True it is bit-identical" in explanation
    assert (
        "is rounded by eager before" in explanation and "bf16_chain.py:" in explanation
    )  # the evidence: a node and its line


@pytest.mark.slow
def test_a_one_step_scalar_fault_in_a_bf16_model_is_divergent_and_says_which_elements(check):
    # issue #24: the phase is off by one or a few of its own steps where eager is exactly right; the leaf-wide
    # floor alone called this benign, and emulate_precision_casts does not remove it (no precision-cast)
    r = check("bf16_event_encoder")
    phase = r.leaf("out[1]")
    assert r.verdict is Verdict.DIVERGENT and phase.verdict is Verdict.DIVERGENT and phase.witness is Witness.FAITHFUL
    assert phase.compiled_ref_max is not None and phase.compiled_ref_max < 0.002
    assert (
        f"of {phase.numel:,} elements where eager is exactly right" in phase.explanation
        and "in no element is compiled exactly right" in phase.explanation
    )


@pytest.mark.slow
def test_dropout_in_training_mode_is_rng_and_matches_with_fallback_random(check):
    r = check("dropout_rng")
    assert r.verdict is Verdict.RNG and r.exit_code == 0 and r.leaf("out").mismatches > 1000
    assert (
        "fallback_random=True it is bit-identical" in r.leaf("out").explanation
        and "Inductor's own generator" in r.explanation
    )
    assert check("dropout_rng", inductor_config={"fallback_random": True}).verdict is Verdict.MATCH


@pytest.mark.slow
def test_a_draw_whose_stream_depends_on_dtype_is_judged_against_eager_s_own_draws(check):
    # rand_like draws other numbers in float64 than in float32, so the plain fp64 reference is as far from eager
    # as compiled is and alone called this benign (the CPU analogue of dropout on CUDA); the gallery's
    # rng_rand_like checks that the fallback_random re-check then names it rng
    snippet = (
        "import torch\ndef fn(x):\n    return x * 2 + torch.rand_like(x)\ndef inputs():\n    return (torch.randn(64,"
        " 64),)\n"
    )
    r = check(snippet, recheck_random=False)
    assert r.verdict is Verdict.DIVERGENT and r.leaf("out").witness is Witness.FAITHFUL
    assert (
        "the plain fp64 reference does not model this program" in r.explanation
        and "random draws replayed (aten.rand_like" in r.explanation
    )


@pytest.mark.slow
def test_a_bug_behind_a_random_draw_stays_divergent(check):
    r = check("rng_floor_divide")
    leaf = r.leaf("out")
    assert r.verdict is Verdict.DIVERGENT and leaf.symptoms == (Symptom.VALUE,)
    assert "still divergent with fallback_random=True" in leaf.explanation


@pytest.mark.slow
def test_one_ulp_fault_is_shown_by_default_and_divergent_when_strict(check):
    snippet = fault_snippet("ulp", PROGRAM)
    default = check(snippet)
    leaf = default.leaf("out[0]")
    assert default.verdict is Verdict.BENIGN and (leaf.max_ulp, leaf.mismatches) == (1.0, 1)
    strict = check(snippet, strict=True)
    assert strict.verdict is Verdict.DIVERGENT and strict.leaf("out[0]").symptoms == (Symptom.BITS,)


@pytest.mark.slow
def test_structural_faults_are_divergent(check):
    expected = {
        "nan": Symptom.NAN,
        "signed_zero": Symptom.SIGNED_ZERO,
        "stride": Symptom.STRIDE,
        "widen": Symptom.DTYPE,
    }
    for fault, symptom in expected.items():
        r = check(fault_snippet(fault, PROGRAM))
        assert r.verdict is Verdict.DIVERGENT and symptom in r.leaf("out[0]").symptoms, (fault, r.explanation)


@pytest.mark.slow
def test_lost_input_mutation_is_divergent(check):
    program = (
        "import torch\n\ndef fn(x):\n    x.t().add_(1.0)\n    return x * 2\n\ndef inputs():\n    return (torch.randn(4,"
        " 4),)\n"
    )
    assert check(program).verdict in (Verdict.MATCH, Verdict.BENIGN)
    r = check(fault_snippet("drop_mutation", program))
    leaf = r.leaf("input args[0]")
    assert r.verdict is Verdict.DIVERGENT and leaf.kind is LeafKind.MUTATED_INPUT and Symptom.MUTATION in leaf.symptoms
    assert "eager mutated it in place but compiled did not" in leaf.explanation


@pytest.mark.slow
def test_overlapping_windows_of_one_buffer_on_a_second_call_are_divergent(check):
    """pytorch#139789: the graph compiled for separate inputs is reused for two overlapping views of one buffer. The
    float64 reference must see the same aliasing as eager, or it sides with compiled and calls the bug benign."""
    program = (
        "import torch\n\ndef f(x, y):\n    x.mul_(2)\n    return x + y\n\n"
        "step = torch.compile(f, backend='aot_eager')\nstep(torch.ones(4), torch.ones(4))\n"
        "ring = torch.ones(8)\nout = step(ring[:4], ring[2:6])\n"
    )
    r = check(program)
    assert r.verdict is Verdict.DIVERGENT, r.explanation
    assert r.leaf("call1: out").verdict is Verdict.DIVERGENT and r.leaf("call0: out").verdict is Verdict.MATCH


@pytest.mark.slow
def test_buffers_updated_by_the_call_are_compared(check):
    r = check("batchnorm_train")
    names = {leaf.name for leaf in r.leaves if leaf.kind is LeafKind.STATE}
    assert {"state self.running_mean", "state self.running_var", "state self.num_batches_tracked"} <= names
    assert r.verdict in (Verdict.MATCH, Verdict.BENIGN)


@pytest.mark.slow
def test_nested_outputs_and_python_scalars_become_leaves(check):
    r = check("structures", seeds=2)
    assert {
        "out['pair'][0]",
        "out['pair'][1]",
        "out['obj'].hidden",
        "out['obj'].count",
        "out['mean']",
        "out['flag']",
    } == {leaf.name for leaf in r.leaves}
    assert [s.seed for s in r.seeds] == [0, 1] and r.verdict in (Verdict.MATCH, Verdict.BENIGN)
    assert r.code.graph_breaks and r.code.recompiles  # seed 1's float guard fails, so Dynamo recompiles


@pytest.mark.slow
def test_backward_compares_gradients_of_inputs_and_parameters(check):
    r = check("kernelbench_gelu", backward=True)
    grads = {leaf.name for leaf in r.leaves if leaf.kind is LeafKind.GRADIENT}
    assert grads == {"grad args[0]", "grad self.linear.weight", "grad self.linear.bias"}
    assert r.verdict in (Verdict.MATCH, Verdict.BENIGN)


@pytest.mark.slow
def test_generated_code_graph_breaks_and_arrays_are_kept(check):
    r = check("graph_break")
    assert len(r.code.fx_graphs) == 2 and len(r.code.graph_breaks) == 1 and "print" in r.code.graph_breaks[0]
    kernels = [k for o in r.code.output_code for k in o.kernels]
    assert kernels and all(k.language == "cpp" and 'extern "C"' in k.source for k in kernels)
    assert "engine/" not in r.code.graph_breaks[0]
    arrays = r.load_arrays(r.leaf("out"))
    assert set(arrays) == {"eager", "compiled", "ref"} and arrays["eager"].shape == (16,)
    assert isinstance(arrays["eager"], np.memmap)  # read block by block, never whole
    summary = r.load_summary(r.leaf("out"))
    assert summary["histogram"][0] == np.sum(arrays["eager"] == arrays["compiled"])  # its bit-identical count


@pytest.mark.slow
def test_cast_option_runs_the_model_in_bf16(check):
    r = check("kernelbench_gelu", dtype="bf16")
    assert r.leaf("out").dtype == "bfloat16" and r.verdict in (Verdict.MATCH, Verdict.BENIGN, Verdict.PRECISION_CAST)


@pytest.mark.slow
def test_result_reopens_from_disk_identically(check):
    from engine import load_result

    r = check("matmul_sum")
    again = load_result(r.run_dir)
    assert records.to_json(again) == records.to_json(r)


def test_unknown_inductor_option_is_an_options_error(check):
    r = check("matmul_sum", inductor_config={"no_such_flag": True})
    assert r.verdict is Verdict.ERROR and r.error.kind is ErrorKind.OPTIONS and "no_such_flag" in r.error.message
