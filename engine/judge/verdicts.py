"""The vocabulary of a check's outcome: verdicts, error kinds, symptoms and leaf kinds."""

from __future__ import annotations

from enum import Enum


class Verdict(str, Enum):
    """What a leaf or a whole check concluded, from best to worst.

    Two verdicts name a mechanism, each assigned only by a re-check that removed the difference:
    `precision-cast` (gone with `emulate_precision_casts=True`) and `rng` (gone with `fallback_random=True`:
    compiled drew its random numbers from Inductor's generator, not ATen's). A caller reads the mechanism
    from the verdict itself; the leaf's sentence gives the numbers.

    `eager-inaccurate`: the values differ beyond rounding noise, and compiled is the side nearer the exact
    (float64) value: eager's kernel is less accurate here. Not a compile bug; a report, if any, is about eager.
    """

    MATCH = "match"
    BENIGN = "benign"
    PRECISION_CAST = "precision-cast"
    RNG = "rng"
    EAGER_INACCURATE = "eager-inaccurate"
    DIVERGENT = "divergent"
    ERROR = "error"

    @property
    def severity(self) -> int:
        return _SEVERITY[self]

    @property
    def exit_code(self) -> int:
        """The CLI's exit status: 0 for an acceptable result, 1 for a divergence, 2 for an error.

        `precision-cast` and `rng` exit 0: each names a mechanism PyTorch documents as intended (a skipped
        low-precision round trip; Inductor's own random stream), and its re-check showed nothing else differs.
        `eager-inaccurate` exits 0: compiled is the more accurate side, so compile broke nothing.
        """
        if self is Verdict.DIVERGENT:
            return 1
        if self is Verdict.ERROR:
            return 2
        return 0


# The named mechanisms rank above benign: each says why values differ, so it is the more useful report.
# rng ranks above precision-cast: different random draws change values wholesale, a skipped round trip by
# a few low-precision ULPs, so a leaf of each leads with the larger difference. eager-inaccurate ranks above
# both and below divergent: values differ beyond noise with no compile bug, which a user should see first,
# and any divergent leaf still makes the check divergent.
_SEVERITY = {
    Verdict.MATCH: 0,
    Verdict.BENIGN: 1,
    Verdict.PRECISION_CAST: 2,
    Verdict.RNG: 3,
    Verdict.EAGER_INACCURATE: 4,
    Verdict.DIVERGENT: 5,
    Verdict.ERROR: 6,
}


def worst(verdicts: list[Verdict] | tuple[Verdict, ...]) -> Verdict:
    """The most severe verdict; `match` for an empty sequence."""
    return max(verdicts, key=lambda v: v.severity, default=Verdict.MATCH)


class Nearer(str, Enum):
    """Which side of a compared value is nearer the exact (float64) value: the side a report is about."""

    COMPILED = "compiled"  # eager is the less accurate side: not a compile bug
    EAGER = "eager"  # compiled is the less accurate side
    NEITHER = "neither"  # both as near, within what the rules can tell apart


class Witness(str, Enum):
    """What decided a leaf's value verdict (None on a leaf decided by bits or structure alone)."""

    FP64 = "fp64"  # the three-way rule against the plain fp64 reference
    FAITHFUL = "faithful-fp64"  # the same rule against the fp64 reference run with eager's scalar roundings and draws
    TOLERANCE = "tolerance"  # no fp64 reference at all: torch.testing's default tolerances


class ErrorKind(str, Enum):
    """Where a check failed to produce a comparison."""

    SNIPPET = "snippet"  # the file does not load or fits no snippet style
    EAGER = "eager"  # the program raised when run eagerly
    COMPILE = "compile"  # torch.compile or the compiled call raised
    CRASH = "crash"  # the worker process died (signal, os._exit)
    TIMEOUT = "timeout"
    MEMORY = "memory"
    OUTPUT = "output"  # the snippet printed more than the output limit
    PROCESSES = "processes"  # the snippet started more processes than allowed (a fork bomb)
    CANCELLED = "cancelled"
    BUSY = "busy"  # the queue in front of the workers is full; nothing ran
    OPTIONS = "options"  # an option the host or torch cannot honour
    INTERNAL = "internal"  # a bug in Divergence Explorer itself


class Symptom(str, Enum):
    """Why a leaf differs. Everything but VALUE and BITS is structural."""

    VALUE = "value"  # finite values drift
    BITS = "bits"  # bit patterns differ (strict mode), e.g. NaN payloads
    NAN = "nan"
    INF = "inf"
    SIGNED_ZERO = "signed-zero"
    SHAPE = "shape"
    DTYPE = "dtype"
    STRIDE = "stride"
    LAYOUT = "layout"  # one side gives a sparse (or other non-strided) tensor where the other gives another layout
    MUTATION = "mutation"  # an input or module state was mutated by one side only
    TYPE = "type"  # the leaf's Python type or the output structure differs

    @property
    def structural(self) -> bool:
        return self not in (Symptom.VALUE, Symptom.BITS)


class LeafKind(str, Enum):
    """What part of the program's effect a compared leaf is."""

    OUTPUT = "output"
    MUTATED_INPUT = "mutated-input"
    STATE = "state"  # a parameter or buffer after the call
    GRADIENT = "gradient"
