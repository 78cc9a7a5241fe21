"""The witnesses beside the plain fp64 reference: what they measured, and when they outrank it.

Pure: plain numbers in, a decision out. The child side measures (engine/child/faithful.py runs the
faithful reference); engine/judge/oracle.py states the constants and the measurements behind them.
"""

from __future__ import annotations

from dataclasses import dataclass

# The plain fp64 reference "does not model the program" at a leaf when eager is this many times further
# from it than from the faithful reference (plus the noise floor). See oracle.py for the measurements.
PLAIN_INVALID_RATIO = 4.0


@dataclass(frozen=True)
class FaithfulReference:
    """The leaf was judged against the fp64 reference run with eager's semantics.

    `what` names what that run did differently (the scalars it rounded, the draws it replayed);
    `plain_eager_rms`/`plain_eager_max` are eager's error against the plain fp64 reference, for the sentence.
    """

    what: str
    plain_eager_rms: float | None = None
    plain_eager_max: float | None = None

    def plain_is_invalid(self, eager_ref_max: float, floor: float) -> bool:
        """Eager far from the plain reference but near the faithful one: the plain one models another program."""
        if self.plain_eager_max is None:
            return False
        return self.plain_eager_max > PLAIN_INVALID_RATIO * (eager_ref_max + floor)

    def lead(self, eager_ref_max: float, floor: float) -> str:
        """How the verdict's sentence names this reference, saying so when the plain one did not model the program."""
        name = f"the fp64 reference run with eager's semantics ({self.what})"
        if not self.plain_is_invalid(eager_ref_max, floor):
            return f"against {name}, "
        assert self.plain_eager_max is not None
        return (
            f"the plain fp64 reference does not model this program: eager is {self.plain_eager_max:.3g} from it at"
            f" worst but {eager_ref_max:.3g} from {name}; against the latter, "
        )


@dataclass(frozen=True)
class ScalarRounding:
    """eager rounded `value` to `rounded` (the dtype's nearest) when it passed it to `op` as `argument`.

    Found by asking eager (engine.child.faithful), not from a table: it differs by op and device. The check
    stores them so that a standalone repro's fp64 reference can round the same scalars without asking again.
    """

    op: str  # e.g. "aten.fmod.Scalar"
    argument: str  # the schema's argument name, e.g. "other"
    value: float
    rounded: float
    dtype: str  # "bfloat16" or "float16"
