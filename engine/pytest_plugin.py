"""pytest plugin (registered through the `pytest11` entry point): the `compile_checker` fixture."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest


@pytest.fixture
def compile_checker() -> Callable[..., Any]:
    """`compile_checker(fn, inputs, **options)` fails the test when torch.compile changes the answer."""
    from engine.testing import assert_compile_matches

    return assert_compile_matches
