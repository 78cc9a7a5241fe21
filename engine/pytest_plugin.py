"""pytest plugin (registered through the `pytest11` entry point): the `compile_checker` fixture."""

from __future__ import annotations

from typing import Any, Callable

import pytest


@pytest.fixture
def compile_checker() -> Callable[..., Any]:
    """`compile_checker(fn, inputs, **options)` fails the test when torch.compile changes the answer."""
    from engine.testing import assert_compile_matches

    return assert_compile_matches
