"""The minimizer's own passes: small, syntax-aware functions that each propose one kind of smaller program.

A pass is `(Problem) -> None`; it proposes candidates through the Problem, which adopts only strictly
smaller, still-interesting ones. `SOURCE_PASSES` is the default order: a one-candidate tidy, structure
(cheap, large wins), the dead weight of model code (config lookups, unread attributes and fields,
defaults nobody passes), sequences, expressions, then the other literals. The graph path
(`minimizer.passes.nodes`: the rewrite, then cutting the output and the inputs) is prepended by the
pipeline when the oracle can supply the candidate's Dynamo graph.
"""

from minimizer.passes.calls import (
    drop_keyword_arguments,
    inline_functions,
    inline_modules,
    inline_temporaries,
    replace_with_operand,
)
from minimizer.passes.constants import drop_signs, shorten_floats, shrink_integers, shrink_sequences, simplify_dtypes
from minimizer.passes.dead_code import (
    drop_unread_attributes,
    drop_unread_config,
    fold_config,
    fold_self_constants,
    inline_defaults,
)
from minimizer.passes.statements import delete_statements, drop_parameters, lift_branches, remove_unused_imports, tidy
from minimizer.reducer import ReductionPass

# Cheapest and largest first: one tidy candidate, config lookups folded (one candidate that often leaves a whole
# config class dead, where ddmin over its fields would spend a call per field), statements, then input literals
# (shrinking them removes many tokens per call and makes every later candidate smaller), then expressions, then
# single tokens.
SOURCE_PASSES: list[ReductionPass] = [
    tidy,
    fold_config,
    delete_statements,
    fold_self_constants,
    drop_unread_attributes,
    drop_unread_config,
    inline_defaults,
    inline_modules,
    inline_functions,
    lift_branches,
    drop_parameters,
    shrink_sequences,
    replace_with_operand,
    drop_keyword_arguments,
    shrink_integers,
    simplify_dtypes,
    shorten_floats,
    remove_unused_imports,
]

# Run once the passes above reach their fixpoint: they change many lines for a few tokens, and after
# them every edit the oracle refused before would look new and be tested again.
FINISHING_PASSES: list[ReductionPass] = [
    inline_temporaries,
    drop_signs,
]

__all__ = [
    "FINISHING_PASSES",
    "SOURCE_PASSES",
    "delete_statements",
    "drop_signs",
    "drop_unread_attributes",
    "drop_unread_config",
    "fold_config",
    "fold_self_constants",
    "inline_defaults",
    "drop_keyword_arguments",
    "drop_parameters",
    "inline_functions",
    "inline_modules",
    "inline_temporaries",
    "lift_branches",
    "remove_unused_imports",
    "replace_with_operand",
    "shorten_floats",
    "shrink_integers",
    "shrink_sequences",
    "simplify_dtypes",
    "tidy",
]
