"""remainder's zero takes the divisor's sign in every float64 answer (docs/oracle.md#remainder): eager's kernel gives
it the dividend's (pytorch#193755), and a reference that ran eager's kernel blamed compiled for Python's answer."""

from __future__ import annotations

import math

import pytest
import torch

from engine import Verdict
from engine.child import faithful_graph
from engine.child.faithful import exact_float64

DIVIDENDS = [-6.0, 6.0, -6.0, 6.0, -0.0, 0.0, -5.0]
DIVISORS = [2.0, 2.0, -2.0, -2.0, 3.0, -3.0, 2.0]


def _python(a: list[float], b: list[float]) -> list[float]:
    return [x % y for x, y in zip(a, b, strict=True)]


def _signs(values: torch.Tensor | list[float]) -> list[tuple[float, bool]]:
    values = values.tolist() if isinstance(values, torch.Tensor) else values
    return [(v, math.copysign(1.0, v) < 0) for v in values]


def test_every_spelling_of_remainder_gives_python_s_zero_sign_in_float64():
    x, y = torch.tensor(DIVIDENDS, dtype=torch.float64), torch.tensor(DIVISORS, dtype=torch.float64)
    want = _signs(_python(DIVIDENDS, DIVISORS))
    assert _signs(torch.remainder(x, y)) != want  # eager's kernel: the dividend's sign (what the reference ran)
    with exact_float64():
        in_place, into = x.clone(), torch.empty_like(x)
        in_place %= y
        torch.remainder(x, y, out=into)
        spelled = {
            "torch.remainder": torch.remainder(x, y),
            "%": x % y,
            "Tensor.remainder": x.remainder(y),
            "aten": torch.ops.aten.remainder.Tensor(x, y),
            "%=": in_place,
            "out=": into,
        }
        by_scalar = x % 2.0
        rmod = 6.0 % y
    for name, got in spelled.items():
        assert _signs(got) == want, name
    assert _signs(by_scalar) == _signs(_python(DIVIDENDS, [2.0] * len(DIVIDENDS)))
    assert _signs(rmod) == _signs(_python([6.0] * len(DIVISORS), DIVISORS))


def test_the_gradient_of_a_signed_remainder_is_still_one():
    x = torch.tensor(DIVIDENDS, dtype=torch.float64, requires_grad=True)
    with exact_float64():
        torch.remainder(x, torch.tensor(DIVISORS, dtype=torch.float64)).sum().backward()
    assert x.grad.tolist() == [1.0] * len(DIVIDENDS)


def test_the_inside_stage_s_float64_graph_gives_remainder_s_zero_the_divisor_s_sign():
    gm = torch.fx.experimental.proxy_tensor.make_fx(lambda a, b: (torch.remainder(a, b), a % 2.0))(
        torch.randn(7), torch.randn(7)
    )
    x, y = torch.tensor(DIVIDENDS), torch.tensor(DIVISORS)
    eager, reference, _ = faithful_graph.run(gm, [x, y], ())
    by_tensor, by_scalar = (reference[n.name] for n in gm.graph.nodes if n.op == "call_function")
    assert _signs(by_tensor) == _signs(_python(DIVIDENDS, DIVISORS))
    assert _signs(by_scalar) == _signs(_python(DIVIDENDS, [2.0] * len(DIVIDENDS)))
    eager_value = next(v for name, v in eager.items() if name.startswith("remainder"))
    assert _signs(eager_value) == _signs(torch.remainder(x, y))  # the eager run of the graph stays eager's


REMAINDERS = """import torch


def fn(x, y):
    return torch.remainder(x, y), torch.remainder(x, -y)


def inputs():
    return (torch.tensor([-6.0, -4.0, -2.0, 1.0] * 8), torch.tensor([2.0, 2.0, 2.0, 3.0] * 8))
"""


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [None, "bf16"])
def test_compiled_giving_python_s_zero_is_not_blamed_and_compiled_dropping_it_still_is(check, dtype):
    """remainder(-6, 2): Python +0.0 as compiled gives, eager -0.0 (#193755): eager is the side that is off.
    remainder(-6, -2): Python and eager -0.0, compiled +0.0 (Inductor's `a - floor(a / b) * b`): a compile bug."""
    result = check(REMAINDERS, dtype=dtype)
    leaves = {leaf.name: leaf for leaf in result.leaves}
    positive, negative = leaves["out[0]"], leaves["out[1]"]
    assert positive.verdict is Verdict.EAGER_INACCURATE, positive.explanation
    assert positive.nearer == "compiled"
    assert negative.verdict is Verdict.DIVERGENT, negative.explanation
    assert negative.nearer == "eager"
    assert result.verdict is Verdict.DIVERGENT
