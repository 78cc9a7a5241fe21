"""Which part of the oracle's corpora a program is in: calibration (tuned on) or evaluation (reported, never tuned on).

Fixed before any threshold of issue #31 moved (2026-12-06), by a hash of the program's group: the op or the
kind of block for an ordinary program, the fault program without its dtype for a one-ULP family (its clean twin
and both dtypes go with it), the model for the transformers zoo. A group is in the evaluation part when the
first byte of sha256(SALT + group) is below EVALUATION_SHARE * 256. Changing SALT or the share re-draws the
split and voids every evaluation figure measured so far: tests/test_oracle_split.py holds the current
assignment of every group, so such a change cannot pass unnoticed.
"""

from __future__ import annotations

import hashlib
import re
from enum import Enum

SALT = "divergence-explorer oracle split, issue 31"
EVALUATION_SHARE = 0.5


class Part(str, Enum):
    CALIBRATION = "calibration"
    EVALUATION = "evaluation"


def part(group: str) -> Part:
    """The part a group of programs belongs to."""
    byte = hashlib.sha256((SALT + group).encode()).digest()[0]
    return Part.EVALUATION if byte < EVALUATION_SHARE * 256 else Part.CALIBRATION


_DTYPE = re.compile(r"\b(bf16|fp16|fp32)\b")


def family_group(name: str) -> str:
    """A one-ULP family program's group (its clean twin's too): the name, the dtype as <dt>, without ', clean'."""
    return _DTYPE.sub("<dt>", name.removesuffix(", clean"))
