"""The check judges inside the program: the buffers compiled code stores, against the same graph run eagerly and in
float64 (engine/child/inside.py); the evidence a mechanism needs is on the leaf's own path; every program gets a
float64 answer, weights held in globals, closures and plain objects included.

Real torch.compile throughout: the bugs are real ones of the gallery (float floor division, remainder by a Python
scalar) inside realistic programs whose final output hides them.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from engine import CheckOptions, Runner, Verdict

SNIPPETS = Path(__file__).resolve().parent / "snippets"
REPO = Path(__file__).resolve().parent.parent


def _check(runner: Runner, tmp_path: Path, name: str, source: str | None = None, **options: object):
    path = SNIPPETS / f"{name}.py"
    text = source if source is not None else path.read_text()
    return runner.check(text, CheckOptions(timeout_s=300, **options), str(path), run_dir=tmp_path / name)


def test_the_pooled_sensor_encoder_is_divergent_and_names_its_floor_division_line(
    runner: Runner, tmp_path: Path
) -> None:
    """Its one prediction per sequence moves inside the noise allowance (the outputs' verdict alone is benign);
    inside, the time buckets are off by one, and the check says where in the program's own words."""
    result = _check(runner, tmp_path, "sensor_encoder_pooled")
    assert result.verdict is Verdict.DIVERGENT, result.explanation
    assert [leaf.verdict for leaf in result.leaves] == [Verdict.BENIGN]  # the pooled output alone hides it
    inside = result.inside
    assert inside is not None and inside.status == "judged", inside
    origin = inside.origin
    assert origin is not None and origin.site.line == 18 and "t // STEP" in origin.site.code, origin
    assert origin.op.startswith("aten.div.Tensor_mode"), origin.op
    # 3.0 // 0.1 is 29 in Python and in eager; compiled divides in float32 and floors 30.0
    assert origin.worst is not None and float(origin.worst.compiled) == float(origin.worst.eager) + 1
    assert not origin.materialised  # computed inside a fused kernel, found by exposing that kernel's values
    # each kernel is judged on what it computes from what compiled stored before it: the off-by-one buckets move
    # every later buffer too, and none of those is called a place where compile changes a value
    assert [d.node for d in inside.diverging] == [inside.first.node], inside.diverging
    from engine.judge.headline import headline

    said = headline(result.verdict, result.leaves, None, origin)
    assert "line 18, `bucket = t // STEP`" in said.sentence and "where eager and float64 give" in said.sentence
    assert "inside the noise allowance" in said.sentence and said.next_step != "nothing to do"


def test_without_the_inside_stage_a_benign_output_further_than_eager_is_not_nothing_to_do(
    runner: Runner, tmp_path: Path
) -> None:
    result = _check(runner, tmp_path, "sensor_encoder_pooled", inside=False)
    assert result.verdict is Verdict.BENIGN and result.inside is not None and result.inside.status == "skipped"
    from engine.judge.headline import headline

    said = headline(result.verdict, result.leaves)
    assert "further from float64 than eager" in said.sentence and said.next_step != "nothing to do", said


def test_the_hooks_leave_the_compiled_outputs_bit_identical() -> None:
    """The hooks add wrapper lines only: the same program compiled with and without them computes the same bits."""
    import runpy

    import torch
    import torch._dynamo
    import torch._inductor.config as inductor_config

    from engine.child import inductor_hooks

    assert inductor_hooks.install() is None
    reports: list[str] = []
    for name in ("sensor_encoder_pooled", "conv_global_weight_bf16"):
        ns = runpy.run_path(str(SNIPPETS / f"{name}.py"))
        torch.manual_seed(0)
        args = ns["inputs"]()
        outputs = []
        for hooks in (False, True):
            torch._dynamo.reset()
            with (
                inductor_config.patch(generate_intermediate_hooks=hooks, fx_graph_cache=False),
                inductor_hooks.hooked(lambda node, value: reports.append(node)),
                torch.no_grad(),
            ):
                outputs.append(torch.compile(ns["fn"])(*args))
        assert torch.equal(outputs[0].view(torch.int16), outputs[1].view(torch.int16)), name
    assert "addmm" in reports and "convolution" in reports  # C++ kernels and extern out= kernels both report


def test_a_buffer_a_fallback_kernel_realised_is_reported_under_the_node_whose_value_it_holds() -> None:
    """`softplus(h).to(bf16)` fused into one kernel whose buffer only the ATen `native_dropout` after it needs stored
    (fallback_random): Inductor gives that buffer no origin node, so it went unreported and unjudged, and a softplus
    fault in it (the calibration part's "dropout, softplus as log(1 + exp(h))") was missed from the final output."""
    import torch
    import torch._dynamo
    import torch._inductor.config as inductor_config
    import torch.nn.functional as F

    from engine.child import inductor_hooks

    def fn(x: torch.Tensor) -> torch.Tensor:
        y = F.softplus(x.float() * 16).to(torch.bfloat16)
        return F.dropout(y, 0.1, training=True) * 2

    assert inductor_hooks.install() is None
    reports: dict[str, torch.Tensor] = {}
    torch._dynamo.reset()
    with (
        inductor_config.patch(generate_intermediate_hooks=True, fx_graph_cache=False, fallback_random=True),
        inductor_hooks.hooked(lambda node, value: reports.setdefault(node, value.clone())),
        torch.no_grad(),
    ):
        x = torch.randn(64, 32, dtype=torch.bfloat16)
        torch.compile(fn)(x)
    converts = [name for name in reports if name.startswith("convert_element_type")]
    assert converts, sorted(reports)
    assert torch.equal(reports[converts[-1]], F.softplus(x.float() * 16).to(torch.bfloat16))


def test_a_buffer_a_kernel_shares_in_place_is_not_reported_under_a_node_it_no_longer_holds() -> None:
    """Cross entropy's kernel keeps the row sum of exps and its log in one `in_out_ptr`: once it is done the buffer
    holds the log's value of another buffer, and reported under `log` it was judged "gives 32.1 where eager and
    float64 give 3.47" on all 8,192 rows (the calibration part's ordinary "cross entropy (bf16)", a false alarm)."""
    import torch
    import torch._dynamo
    import torch._inductor.config as inductor_config
    import torch.nn.functional as F

    from engine.child import inductor_hooks

    def fn(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(x, t, reduction="none")

    assert inductor_hooks.install() is None
    reports: dict[str, torch.Tensor] = {}
    torch._dynamo.reset()
    x, t = torch.randn(256, 1000, dtype=torch.bfloat16) * 3, torch.randint(0, 1000, (256,))
    with (
        inductor_config.patch(generate_intermediate_hooks=True, fx_graph_cache=False),
        inductor_hooks.hooked(lambda node, value: reports.setdefault(node, value.clone())),
        torch.no_grad(),
    ):
        torch.compile(fn)(x, t)
    assert "amax" in reports, sorted(reports)
    if "log" in reports:  # reported, it must be the log of the row sum of exps
        rows = x.float() - reports["amax"]
        assert torch.allclose(reports["log"], torch.log(torch.exp(rows).sum(-1, keepdim=True)), rtol=1e-3)


def test_a_real_bug_behind_a_mutated_view_is_placed_on_its_line(runner: Runner, tmp_path: Path) -> None:
    """The gallery's dtype view then in-place write: Localize's instrumented compile could not place it; the
    check's own compile stores the bad value and names the line that reads the view."""
    path = REPO / "sample_cases" / "dtype_view_then_mutate.py"
    result = runner.check(path.read_text(), CheckOptions(timeout_s=300), str(path), run_dir=tmp_path / "view")
    assert result.verdict is Verdict.DIVERGENT
    assert result.inside is not None and result.inside.origin is not None, result.inside
    assert result.inside.origin.site.line == 6, result.inside.origin


def test_inside_is_skipped_and_says_why_where_it_does_not_apply(runner: Runner, tmp_path: Path) -> None:
    source = "import torch\n\ndef fn(x):\n    return x.sin() * 2\n\ndef inputs():\n    return (torch.randn(64),)\n"
    eager = runner.check(source, CheckOptions(backend="aot_eager", timeout_s=120), "s.py", run_dir=tmp_path / "a")
    assert eager.inside is not None and eager.inside.status == "skipped" and "aot_eager" in eager.inside.explanation
    plain = runner.check(source, CheckOptions(timeout_s=120), "s.py", run_dir=tmp_path / "b")
    assert plain.inside is not None and plain.inside.status == "judged" and plain.inside.first is None
    assert plain.inside.judged >= 1 and plain.verdict in (Verdict.MATCH, Verdict.BENIGN)


@pytest.mark.slow
def test_with_cpp_wrapper_the_check_runs_without_the_hooks(runner: Runner, tmp_path: Path) -> None:
    # the hooks are Python lines in the wrapper: in a C++ wrapper they were a compile error on every program
    source = "import torch\n\ndef fn(x):\n    return x.sin() * 2\n\ndef inputs():\n    return (torch.randn(64),)\n"
    options = CheckOptions(timeout_s=300, inductor_config={"cpp_wrapper": True})
    cpp = runner.check(source, options, "s.py", run_dir=tmp_path / "c")
    assert cpp.verdict in (Verdict.MATCH, Verdict.BENIGN), cpp.explanation
    assert cpp.inside is not None and cpp.inside.status == "skipped" and "cpp_wrapper" in cpp.inside.explanation


def test_under_emulate_precision_casts_a_buffer_is_owed_eagers_roundings(runner: Runner, tmp_path: Path) -> None:
    """A bf16 chain compiled with emulate_precision_casts rounds where eager rounds: its stored buffer equals eager's
    and is not judged against the fused float32 evaluation (which it no longer promises)."""
    source = (
        "import torch\n\ndef fn(x, y):\n    return ((x * 1.3 + y) * 0.71 - x) / 3.0\n\n"
        "def inputs():\n    return torch.randn(256).to(torch.bfloat16), torch.randn(256).to(torch.bfloat16)\n"
    )
    options = CheckOptions(timeout_s=200).with_inductor_config(emulate_precision_casts=True)
    result = runner.check(source, options, "chain.py", run_dir=tmp_path / "run")
    assert result.verdict is Verdict.MATCH, result.explanation
    assert result.inside is not None and result.inside.status == "judged" and result.inside.first is None, result.inside


@pytest.mark.parametrize(
    "holder",
    [
        "WEIGHT = (torch.randn(16, 8, 3, 3) * 0.1).to(torch.bfloat16)\n\ndef fn(x):\n    return F.conv2d(x, WEIGHT)\n",
        "def make():\n    w = (torch.randn(16, 8, 3, 3) * 0.1).to(torch.bfloat16)\n    return lambda x: F.conv2d(x, w)\n\n"  # noqa: E501
        "fn = make()\n",
        "class Holder:\n    def __init__(self):\n"
        "        self.w = (torch.randn(16, 8, 3, 3) * 0.1).to(torch.bfloat16)\n\n"
        "H = Holder()\n\ndef fn(x):\n    return F.conv2d(x, H.w)\n",
        "class Net(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        # a plain attribute, not a parameter\n"
        "        self.w = (torch.randn(16, 8, 3, 3) * 0.1).to(torch.bfloat16)\n\n"
        "    def forward(self, x):\n        return F.conv2d(x, self.w)\n\nfn = Net()\n",
    ],
    ids=["global", "closure", "plain-object", "module-attribute"],
)
def test_weights_held_outside_modules_get_a_float64_answer(runner: Runner, tmp_path: Path, holder: str) -> None:
    source = (
        "import torch\nimport torch.nn.functional as F\n\n"
        + holder
        + "\n\ndef inputs():\n    return (torch.randn(4, 8, 32, 32).to(torch.bfloat16),)\n"
    )
    result = runner.check(source, CheckOptions(timeout_s=200), "holder.py", run_dir=tmp_path / "run")
    leaf = result.leaves[0]
    assert leaf.mismatches == 0 or leaf.witness is not None and leaf.witness.value in ("fp64", "faithful-fp64"), (
        result.notes,
        leaf,
    )
    assert not any("fp64 reference unavailable" in n for n in result.notes), result.notes


def test_the_trace_names_round_trips_and_draws_on_each_outputs_own_path() -> None:
    """Evidence at the leaf: out[0] is a bf16 chain eager rounds between ops, out[1] adds noise, out[2] is neither."""
    import torch

    from engine.child import faithful
    from engine.child.leaves import tensors_of

    a, b, c = (torch.randn(64).to(torch.bfloat16) for _ in range(3))
    x = torch.randn(64)

    def program() -> tuple[torch.Tensor, ...]:
        torch.manual_seed(0)
        return (a * b + c) * 2, x + torch.rand_like(x), x.float() @ x.float()

    trace = faithful.trace_eager(program, lambda out: tensors_of(out, "out"))
    assert trace.leaf_round_trips["out[0]"] and not trace.leaf_draws["out[0]"]
    assert trace.leaf_draws["out[1]"] == ("aten.rand_like.default",) and not trace.leaf_round_trips["out[1]"]
    assert trace.leaf_round_trips["out[2]"] == () and trace.leaf_draws["out[2]"] == ()
    assert trace.round_trips and trace.random_ops  # the program as a whole has both


def test_a_mechanism_is_named_only_for_the_leaves_whose_path_shows_it(runner: Runner, tmp_path: Path) -> None:
    """Two outputs: a bf16 chain whose difference is Inductor keeping fp32 (precision-cast), and noise drawn from
    rand_like (rng). Each leaf's sentence names its own mechanism, never the other's."""
    source = textwrap.dedent(
        """
        import torch

        def fn(a, b, c, x):
            chain = (a * b + c) * b - a
            noisy = x + torch.rand_like(x)
            return chain, noisy

        def inputs():
            return tuple(torch.randn(4096).to(torch.bfloat16) for _ in range(3)) + (torch.randn(4096),)
        """
    )
    result = runner.check(source, CheckOptions(timeout_s=240), "two.py", run_dir=tmp_path / "run")
    chain, noise = result.leaf("out[0]"), result.leaf("out[1]")
    assert chain.verdict is Verdict.PRECISION_CAST and "rand_like" not in chain.explanation, chain.explanation
    assert "chain = (a * b + c) * b - a" in chain.explanation
    assert noise.verdict is Verdict.RNG and "rand_like" in noise.explanation, noise.explanation
    assert "round trip" not in noise.explanation


@pytest.mark.slow
def test_a_transformers_gpt2_in_bf16_has_nothing_inside_that_diverges(runner: Runner, tmp_path: Path) -> None:
    """Four layers of honest bf16 arithmetic: 71 stored buffers, each a little off from eager's, none a bug."""
    path = REPO / "benchmarks" / "inside_models" / "gpt2_small_bf16.py"
    result = runner.check(path.read_text(), CheckOptions(timeout_s=600), str(path), run_dir=tmp_path / "gpt2")
    assert result.inside is not None and result.inside.status == "judged", result.inside
    assert result.inside.first is None and result.inside.judged > 50, result.inside
    assert result.verdict in (Verdict.BENIGN, Verdict.PRECISION_CAST), result.explanation


def test_without_a_float64_answer_rounding_differences_are_not_called_a_bug() -> None:
    """bf16 values near zero that moved by a rounding step of the leaf's magnitude are far beyond torch.testing's
    relative tolerance there; with no float64 answer that is no evidence of a bug. A 5% error still is."""
    import torch

    from engine.judge import oracle
    from engine.judge.metrics import value_metrics

    torch.manual_seed(0)
    eager = torch.randn(4096).to(torch.bfloat16)
    eager[:64] = torch.randn(64) * 1e-3  # values that cancelled to near zero
    step = torch.zeros(4096)
    step[:64] = 2**-8  # one bf16 step of a value near 1, as a reordered sum gives it
    rounded = (eager.float() + step).to(torch.bfloat16)
    metrics = value_metrics(eager, rounded, None)
    assert not metrics.within_default_tolerance
    said = oracle.judge_values(metrics, strict=False, factor=2.0)
    assert said.verdict is Verdict.BENIGN and "no float64 answer could be made" in said.explanation, said
    wrong = value_metrics(eager, (eager.float() * 1.05).to(torch.bfloat16), None)
    assert oracle.judge_values(wrong, strict=False, factor=2.0).verdict is Verdict.DIVERGENT


def test_a_buffer_finished_by_an_in_place_fallback_is_judged_on_its_final_value(runner: Runner, tmp_path: Path) -> None:
    """A 0-d scatter_reduce is a kernel that copies the input into the result's buffer, then aten.scatter_reduce_ on
    it: the buffer is the node's value only after the fallback (judged on the copy it was a false alarm, "gives -1
    where eager and float64 give -10.5", on chain:fp32's scatter chains)."""
    result = _check(runner, tmp_path, "scatter_0d_fallback")
    assert result.verdict is Verdict.MATCH, result.explanation
    assert result.inside is not None and result.inside.status == "judged" and result.inside.first is None, result.inside


def test_a_node_where_compiled_stored_eagers_own_nans_is_not_judged_against_the_twin(
    runner: Runner, tmp_path: Path
) -> None:
    """bf16 matrix_exp overflows to NaN in eager's own kernel, and compiled calls that kernel: both sides hold the
    same NaNs. Before, the inside stage judged the node against its finite float32 twin (torch.equal calls NaN
    unequal to itself): "divergent inside ... eager 2384.0, compiled nan", both outputs bit-identical (sweep
    opinfo:bf16 matrix_exp)."""
    source = (
        "import torch\n\ndef fn(x):\n    return torch.linalg.matrix_exp(x)\n\n"
        "def inputs():\n    return (torch.full((2, 5, 5), 2.0, dtype=torch.bfloat16),)\n"
    )
    result = _check(runner, tmp_path, "matrix_exp_nan_bf16", source)
    assert result.verdict is Verdict.MATCH, result.explanation
    assert result.inside is not None and result.inside.first is None, result.inside


def test_an_uninitialized_allocation_is_not_judged(runner: Runner, tmp_path: Path) -> None:
    """`torch.empty` has no value to judge: eager's and float64's are uninitialized memory. Inductor wrote
    index_select's `out=` result into the allocation's buffer, and the inside stage called it divergent: "gives -8.5
    where eager gives 3.2e-21 and float64 6.9e-310" (sweep opinfo:bf16 index_select, outputs bit-identical)."""
    source = (
        "import torch\n\ndef fn(x, i):\n    out = torch.empty((), dtype=torch.bfloat16)\n"
        "    torch.index_select(x, 0, i, out=out)\n    return out * 2\n\n"
        "def inputs():\n    return (torch.tensor(-8.5, dtype=torch.bfloat16), torch.tensor([0]))\n"
    )
    result = _check(runner, tmp_path, "index_select_into_empty", source)
    assert result.verdict is Verdict.MATCH, result.explanation
    assert result.inside is not None and result.inside.first is None, result.inside


def test_a_bf16_arange_is_held_to_one_step_of_its_dtype(runner: Runner, tmp_path: Path) -> None:
    """bf16 arange is computed in bf16 (eager's kernel as compiled's: upstream calls it expected, pytorch#137774): a
    buffer that is an iota of positions alone is correct within one step of the exact integers (docs/oracle.md#iota).
    Before, the inside stage called compiled's conversion divergent: "gives 8192 where eager and float64 give 8256"."""
    source = (
        "import torch\n\ndef fn():\n    return torch.arange(0, 10000, dtype=torch.bfloat16)\n\n"
        "def inputs():\n    return ()\n"
    )
    result = _check(runner, tmp_path, "arange_bf16", source)
    assert result.verdict is Verdict.BENIGN, result.explanation
    assert result.inside is not None and result.inside.status == "judged" and result.inside.first is None, result.inside
    import torch

    from engine.child.inside import within_one_step

    exact = torch.arange(0, 10000, dtype=torch.float64)
    assert within_one_step(exact.to(torch.bfloat16), exact)
    assert not within_one_step((exact + 128).to(torch.bfloat16), exact)  # two steps off at 8192..16384: a fault


@pytest.mark.slow
def test_a_mean_that_cancels_is_judged_at_its_terms_magnitude(runner: Runner, tmp_path: Path) -> None:
    """hf:small's DistilBERT in fp32: its LayerNorm's saved row mean (terms ~0.03 cancelling to ~5e-4) is 300 ULPs of
    the mean off in compiled's summation order, 0.15 of its terms'. A sum's rounding is relative to its terms
    (Higham 4.2): before, the inside stage called that mean divergent ("gives -0.000565816 where eager and float64
    give -0.000565797") on hf:small's distilbert and bart in fp32, with their outputs benign."""
    result = _check(runner, tmp_path, "distilbert_small_fp32")
    assert result.verdict is Verdict.BENIGN, result.explanation
    assert result.inside is not None and result.inside.status == "judged" and result.inside.first is None, result.inside


@pytest.mark.slow
@pytest.mark.parametrize(
    "name",
    [
        # the float32 twin of a buffer after `dropout` takes eager's draws: with draws of its own (float32 numbers are
        # others than float64's) every element of the buffer was a tie, and `x - 0.45` with 0.45 unrounded was missed
        "noisy input, dropout, x - 0.45 (bf16, fallback_random)",
        # 0.7 unrounded in an fp16 phase: with emulate_precision_casts the phase buffer still differs from eager in 279
        # of 768 elements (581 without), past what two float32 implementations give; it was set aside as
        # precision-cast because eager's op-by-op roundings made it not divergent there
        "event encoder, phase fmod(t, 0.7) (fp16)",
        # softplus(h) as log(1 + exp(h)) fused with its bf16 cast into a buffer that only the ATen dropout after it
        # needs stored: Inductor gave it no origin node, so it was not reported, and the fault was missed
        "dropout, softplus as log(1 + exp(h)) (bf16, fallback_random)",
    ],
)
def test_a_one_step_scalar_fault_of_the_calibration_part_is_seen_inside(
    runner: Runner, tmp_path: Path, name: str
) -> None:
    """Faults of benchmarks/oracle_jobs.py's calibration part (written into Inductor, compiled code only), each
    program returning its final output only: each was benign on main before the change its comment names."""
    import sys

    sys.path.insert(0, str(REPO / "benchmarks"))
    import oracle_jobs

    job = next(
        j
        for j in oracle_jobs.jobs(["calibration"], ["family"])
        if j.name == name and j.expect == "fault" and j.output == "final" and j.seed == 0
    )
    options = CheckOptions(seed=job.seed, inductor_config=dict(job.config), timeout_s=600)
    result = runner.check(oracle_jobs.source(job), options, f"family-{job.id}.py", run_dir=tmp_path / "run")
    assert result.verdict is Verdict.DIVERGENT, (result.explanation, result.inside)
    assert result.inside is not None and result.inside.first is not None, result.inside
