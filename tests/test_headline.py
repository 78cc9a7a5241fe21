"""The plain sentence and next step every verdict starts with (engine/judge/headline.py, issue #26), and where
the command line and the app show it: first, before the figures."""

from __future__ import annotations

from engine.judge.headline import headline
from engine.judge.verdicts import ErrorKind, LeafKind, Symptom, Verdict, Witness
from engine.options import CheckOptions
from engine.result import CheckResult, LeafResult


def leaf(verdict: Verdict, mismatches: int = 0, numel: int = 4096, **figures: object) -> LeafResult:
    return LeafResult("out", LeafKind.OUTPUT, verdict, "the figures", numel=numel, mismatches=mismatches, **figures)  # type: ignore[arg-type]


def test_a_divergence_says_how_many_values_changed_by_how_much_who_is_right_and_what_to_do():
    h = headline(
        Verdict.DIVERGENT,
        [leaf(Verdict.DIVERGENT, 2304, max_abs=0.4, eager_ref_max=1e-7, compiled_ref_max=0.4, witness=Witness.FP64)],
    )
    assert (
        h.text
        == "compile changed 2,304 of 4,096 values by up to 0.4; eager agrees with float64, compiled does not. Next:"
        " Localize, then Minimize"
    )


def test_a_one_step_fault_says_compiled_is_wrong_where_eager_is_exact():
    # the element rule's case: both sides' worst errors are alike, compiled is off where eager is exactly right
    h = headline(
        Verdict.DIVERGENT,
        [
            leaf(
                Verdict.DIVERGENT,
                108,
                512,
                max_abs=0.00098,
                eager_ref_max=0.0008,
                compiled_ref_max=0.00098,
                witness=Witness.FAITHFUL,
            )
        ],
    )
    assert (
        h.sentence
        == "compile changed 108 of 512 values by up to 0.00098; compiled is wrong in values where eager agrees exactly"
        " with float64 (run with eager's own roundings)"
    )


def test_each_verdict_has_its_plain_sentence_and_next_step():
    drift = dict(max_abs=0.01, eager_ref_max=0.01, compiled_ref_max=0.01)
    assert (
        headline(Verdict.MATCH, [leaf(Verdict.MATCH)]).sentence
        == "compile changed nothing: all 4,096 values are bit-identical to eager's"
    )
    assert headline(Verdict.BENIGN, [leaf(Verdict.BENIGN, 10, **drift)]).next_step == "nothing to do"
    assert (
        "emulate_precision_casts=True"
        in headline(Verdict.PRECISION_CAST, [leaf(Verdict.PRECISION_CAST, 10, **drift)]).next_step
    )
    assert "fallback_random=True" in headline(Verdict.RNG, [leaf(Verdict.RNG, 10, **drift)]).next_step
    nan = LeafResult("out", LeafKind.OUTPUT, Verdict.DIVERGENT, "x", (Symptom.NAN,), numel=8, mismatches=1)
    assert headline(Verdict.DIVERGENT, [nan]).sentence == "compile changed where NaNs are in out"
    timeout = headline(Verdict.ERROR, [], ErrorKind.TIMEOUT)
    assert (
        timeout.sentence == "the check could not compare eager with compiled (timeout error)"
        and "--timeout" in timeout.next_step
    )


def test_the_terminal_report_starts_with_it_and_puts_the_figures_after():
    from app.cli.report import render

    result = CheckResult(
        Verdict.DIVERGENT,
        "divergent: out: 2304 of 4096 element(s) differ",
        CheckOptions(),
        leaves=(leaf(Verdict.DIVERGENT, 2304, max_abs=0.4, eager_ref_max=0.0, compiled_ref_max=0.4),),
    )
    lines = render(result).splitlines()
    assert (
        lines[0]
        == "VERDICT: DIVERGENT — compile changed 2,304 of 4,096 values by up to 0.4; eager agrees with float64,"
        " compiled does not."
    )
    assert lines[1] == "  Next: Localize, then Minimize."
    assert lines.index("  divergent: out: 2304 of 4096 element(s) differ") > lines.index(
        ""
    )  # the figures after the table


def test_a_match_with_unwritten_memory_does_not_call_those_values_bit_identical():
    some = headline(Verdict.MATCH, [leaf(Verdict.MATCH, numel=128, unwritten=64)]).sentence
    assert (
        some == "compile changed nothing that the program defines: 64 values are bit-identical to eager's, and 64 are "
        "uninitialized memory (never written), which no run defines"
    )
    assert (
        "all 15 values are uninitialized memory"
        in headline(Verdict.MATCH, [leaf(Verdict.MATCH, numel=15, unwritten=15)]).sentence
    )
