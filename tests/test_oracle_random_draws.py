"""A value computed from random draws is judged from compiled's run with eager's draws (docs/oracle.md#draws): the
reference replays eager's draws, and compiled's own draws (Inductor's generator) make other values altogether."""

from __future__ import annotations

import pytest

from engine import Verdict

FRACTIONAL_POOL = """import torch
import torch.nn.functional as F


def fn(x):
    # the windows' starts come from a random sample per channel, drawn by the op in x's dtype
    return F.fractional_max_pool2d(x, 4, output_size=4, return_indices=True)


def inputs():
    return (torch.randn(1, 64, 9, 9, dtype=torch.bfloat16),)
"""


@pytest.mark.slow
def test_bf16_fractional_max_pool_where_eager_s_kernel_misplaces_a_window_is_eager_inaccurate(check):
    """eager's bf16 kernel computes a window's start `(i + u) * alpha` in bf16 (2 + 0.99609375 rounds to 3): with
    eager's draws, compiled's windows are the definition's and float64's at every element where the two differ.
    Before, compiled's values from its own draws were judged against eager's draws: divergent, 5x further."""
    result = check(FRACTIONAL_POOL)
    values, indices = result.leaves
    for leaf in (values, indices):
        assert leaf.verdict is Verdict.EAGER_INACCURATE, leaf.explanation
        assert leaf.nearer == "compiled"
        assert "judged with fallback_random=True" in leaf.explanation
    assert result.verdict is Verdict.EAGER_INACCURATE
