"""The minimizer: shrink a divergent program to a small, self-checking repro that is ready to file upstream.

Invariants every pass and the reducer keep:
- A candidate is adopted only when the oracle calls it interesting *and* it is strictly smaller under
  `size.sort_key` (tokens, then characters, then text), so a reduction always terminates and never cycles.
- Candidates are source text in one canonical form (`ast.unparse`), so equal programs hash equally and
  no program is tested twice.
- Candidates run only in the engine's worker, never in the minimizer's own process.

Importing this package imports neither torch nor the engine's worker.
"""

from minimizer.reducer import Oracle, PredicateOracle, Problem, ReduceProgress, Reducer, ReduceStats, reduce_with
from minimizer.size import Size, measure, sort_key

__all__ = [
    "Oracle",
    "PredicateOracle",
    "Problem",
    "ReduceProgress",
    "ReduceStats",
    "Reducer",
    "Size",
    "measure",
    "reduce_with",
    "sort_key",
]
