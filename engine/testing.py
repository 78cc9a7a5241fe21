"""A pytest helper: fail a test when torch.compile changes a model's answer.

    from engine.testing import assert_compile_matches
    def test_my_model_compiles_faithfully():
        assert_compile_matches(model, (x,))

The failure message carries the verdict's explanation and where the run is stored, so
`divergence show RUN` or the app can open it. The `compile_checker` fixture does the same.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine.judge.verdicts import Verdict
from engine.live import check
from engine.result import CheckResult

# rng is accepted: its re-check with fallback_random=True found nothing else that differs, and PyTorch documents
# Inductor's own random stream as intended (pytorch#118735). Pass `accept=` without it to insist on equal draws.
# eager-inaccurate is accepted: compiled is the more accurate side, so compile broke nothing.
ACCEPTED = (Verdict.MATCH, Verdict.BENIGN, Verdict.PRECISION_CAST, Verdict.RNG, Verdict.EAGER_INACCURATE)


class CompileDivergence(AssertionError):
    """torch.compile changed the answer (or the check could not run)."""

    def __init__(self, result: CheckResult) -> None:
        self.result = result
        where = (
            f"\nrun stored in {result.run_dir} (open it with `divergence show {result.run_dir}` or in the app)"
            if result.run_dir
            else ""
        )
        super().__init__(f"torch.compile changed the answer: {result.explanation}{where}")


def assert_compile_matches(
    fn: Callable[..., Any], inputs: Any, *, accept: tuple[Verdict, ...] = ACCEPTED, **options: Any
) -> CheckResult:
    """Check fn eager vs compiled; raise CompileDivergence unless the verdict is in `accept`."""
    result = check(fn, inputs, **options)
    if result.verdict not in accept:
        raise CompileDivergence(result)
    return result
