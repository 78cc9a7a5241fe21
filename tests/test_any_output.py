"""Any object a program returns or takes is checked leaf by leaf, with stable names (engine/child/leaves.py).

Real torch.compile: a plain-object output (a cache of layers), and a stateful input that the program extends
by re-binding its attributes, as a KV cache's update does.
"""

from __future__ import annotations

from engine import LeafKind, Verdict


def test_a_plain_object_output_is_compared_leaf_by_leaf(check):
    r = check("object_output")
    assert r.verdict in (Verdict.MATCH, Verdict.BENIGN), r.explanation
    names = [leaf.name for leaf in r.leaves]
    assert names == [
        "out.logits",
        "out.cache.layers[0].keys",
        "out.cache.layers[0].values",
        "out.cache.layers[0].is_initialized",
        "out.cache.layers[1].keys",
        "out.cache.layers[1].values",
        "out.cache.layers[1].is_initialized",
        "out.dtype",
    ]
    assert r.leaf("out.cache.layers[1].values").shape == (4, 8)
    assert r.leaf("out.dtype").verdict is Verdict.MATCH and r.leaf("out.dtype").eager_value == "torch.float32"


def test_a_stateful_input_is_copied_for_each_run_and_its_changes_compared(check):
    r = check("cache_input")
    # each run extends its own copy of the cache: with one shared copy, compiled extended eager's result
    # again and its output differed by 0.48 (then judged "benign", every side being wrong)
    assert r.verdict in (Verdict.MATCH, Verdict.BENIGN), r.explanation
    assert r.leaf("out").max_abs < 1e-6
    mutated = {leaf.name: leaf for leaf in r.leaves if leaf.kind is LeafKind.MUTATED_INPUT}
    assert sorted(mutated) == ["input args[1].layers[0].keys", "input args[1].layers[1].keys", "input args[1].seen"]
    assert (
        mutated["input args[1].layers[0].keys"].shape
        == mutated["input args[1].layers[0].keys"].compiled_shape
        == (2, 4, 4)
    )
    assert mutated["input args[1].seen"].verdict is Verdict.MATCH  # an int: both runs counted 3 + 1 tokens
