"""Seeding the random generators, and telling whether a run drew from them.

Apart because every run that must draw the same numbers seeds here: the inputs and the model
(execution.py), eager and compiled (comparison.py), the fp64 references (reference.py), and the
benchmarks that compare calls outside a check.
"""

from __future__ import annotations

import random

import torch


def rng_states() -> list[torch.Tensor]:
    """The default generators' states (CPU, and CUDA once initialised): a draw changes them."""
    states = [torch.default_generator.get_state()]
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        states.extend(torch.cuda.get_rng_state_all())
    return states


def drew(before: list[torch.Tensor]) -> bool:
    """Whether the generators moved since `before` (from rng_states): the run in between drew random numbers."""
    after = rng_states()
    return len(after) != len(before) or any(not torch.equal(a, b) for a, b in zip(after, before, strict=True))


def seed_everything(seed: int) -> None:
    torch.manual_seed(seed)
    random.seed(seed)
    try:
        import numpy.random

        numpy.random.seed(seed % (2**32))
    except ImportError:  # numpy is optional for snippets
        pass
