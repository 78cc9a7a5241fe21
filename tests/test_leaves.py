"""The leaf walk (engine/child/leaves.py) on its own: names for any object, Values, copies of stateful inputs.

In-process and without a compile: what the walk finds is what every check compares.
"""

from __future__ import annotations

import collections
import dataclasses
import enum
import threading

import pytest
import torch
import torch.utils._pytree as pytree

from engine.child.leaves import UncopyableInput, UnsupportedOutput, Value, flatten, map_tensors, tensors_of


class Layer:  # a KV cache's layer, as transformers' DynamicLayer: a plain object, no dataclass, no pytree node
    def __init__(self, n: int) -> None:
        self.keys = torch.arange(float(n))
        self.values = torch.arange(float(n)) * 2
        self.is_initialized = True


class Cache:
    def __init__(self) -> None:
        self.layers = [Layer(2), Layer(3)]
        self.offloading = False

    def __iter__(self):  # as DynamicCache: iterating yields tuples, which the walk must not use
        return iter([(layer.keys, layer.values) for layer in self.layers])


@dataclasses.dataclass
class Output:
    logits: torch.Tensor
    cache: Cache
    loss: torch.Tensor | None = None


def names(value, prefix="out"):
    return [name for name, _ in flatten(value, prefix)]


def test_a_plain_object_s_attributes_are_leaves_with_stable_names():
    out = Output(torch.ones(2), Cache())
    assert names(out) == [
        "out.logits",
        "out.cache.layers[0].keys",
        "out.cache.layers[0].values",
        "out.cache.layers[0].is_initialized",
        "out.cache.layers[1].keys",
        "out.cache.layers[1].values",
        "out.cache.layers[1].is_initialized",
        "out.cache.offloading",
        "out.loss",
    ]
    assert names(out) == names(Output(torch.zeros(2), Cache()))  # the same structure names the same leaves


def test_containers_keep_the_names_they_always_had():
    Pair = collections.namedtuple("Pair", "a b")
    value = (torch.ones(1), [2, {"k": torch.Size([3, 4])}], Pair(1.5, None))
    assert flatten(value) == [
        ("out[0]", value[0]),
        ("out[1][0]", 2),
        ("out[1][1]['k']", (3, 4)),
        ("out[2].a", 1.5),
        ("out[2].b", None),
    ]


def test_a_registered_pytree_node_is_named_by_its_keys():
    class Box:
        def __init__(self, inner):
            self.inner = inner

    pytree.register_pytree_node(
        Box,
        lambda b: ([b.inner], None),
        lambda xs, _: Box(xs[0]),
        flatten_with_keys_fn=lambda b: ([(pytree.GetAttrKey("inner"), b.inner)], None),
    )
    try:
        assert names(Box(torch.ones(1))) == ["out.inner"]
    finally:
        pytree._deregister_pytree_node(Box)


def test_other_values_are_named_and_compared_for_equality():
    class Colour(enum.Enum):
        RED = 1

    class Slotted:
        __slots__ = ("x", "unset")

        def __init__(self):
            self.x = torch.zeros(1)

    leaves = dict(
        flatten(
            {
                "dtype": torch.float16,
                "colour": Colour.RED,
                "fn": torch.sin,
                "lock": threading.Lock(),
                "set": {2, 1},
                "slots": Slotted(),
                "mod": torch.nn.ReLU(),
            }
        )
    )
    assert leaves["out['dtype']"] == Value(torch.float16, "", "equality") and leaves["out['dtype']"] != Value(
        torch.float32, "", "equality"
    )
    assert leaves["out['colour']"] == flatten(Colour.RED)[0][1]
    assert repr(leaves["out['fn']"]) == "<_VariableFunctionsClass.sin>"
    assert repr(leaves["out['lock']"]) == "<_thread.lock object>"  # by type: a lock has no value to compare
    assert repr(leaves["out['set']"]) == "['1', '2']"
    assert isinstance(leaves["out['slots'].x"], torch.Tensor) and "out['slots'].unset" not in leaves
    assert repr(leaves["out['mod']"]) == "<torch.nn.modules.activation.ReLU module>"


def test_cycles_and_aliases_are_leaves_that_name_the_first_path():
    a, b = Layer(1), Layer(1)
    a.next, b.next = b, a
    leaves = dict(flatten({"a": a, "again": a}))
    assert repr(leaves["out['a'].next.next"]) == "<cycle: back to out['a']>"
    assert repr(leaves["out['again']"]) == "<same object as out['a']>"


def test_an_iterator_is_refused_and_so_is_an_endless_depth():
    with pytest.raises(UnsupportedOutput, match="not an iterator"):
        flatten({"g": (i for i in range(3))})
    deep: list = []
    for _ in range(100):
        deep = [deep]
    with pytest.raises(UnsupportedOutput, match="nested more than"):
        flatten(deep)


def test_map_tensors_gives_each_run_its_own_stateful_input():
    shared = torch.ones(3)
    cache = Cache()
    cache.layers[1].keys = cache.layers[0].keys  # aliasing inside the input
    module = torch.nn.Linear(2, 2)
    cache.owner = module
    copied = map_tensors((shared, cache, shared), lambda t: t.clone())
    assert copied[1] is not cache and copied[1].layers[0] is not cache.layers[0]
    assert copied[0] is copied[2] and copied[1].layers[1].keys is copied[1].layers[0].keys
    assert copied[1].owner is module  # modules are shared: their state is the check's to restore
    copied[1].layers[0].keys = torch.zeros(5)  # a run re-binding an attribute of its copy leaves the original alone
    assert cache.layers[0].keys.shape == (2,)
    assert [n for n, _ in tensors_of(copied, "args")] == [n for n, _ in tensors_of((shared, cache, shared), "args")]


def test_an_input_that_cannot_be_copied_says_why():
    class Handle:
        def __init__(self):
            self.t = torch.ones(1)

        def __deepcopy__(self, memo):
            raise TypeError("cannot copy a Handle")

    with pytest.raises(UncopyableInput, match="own copy of an input that carries state"):
        map_tensors((torch.ones(1), {"h": Handle()}), lambda t: t.clone())


def test_an_input_value_no_run_changed_is_no_mutation_nan_included():
    from engine.child.comparison import CallSettings
    from engine.child.leaf_builder import LeafBuilder

    settings = CallSettings(
        strict=False,
        factor=2.0,
        noise_ulps=32.0,
        backward=False,
        fp64_reference=False,
        max_stored_elements=1,
        emit=print,
    )
    inputs = ((torch.ones(2), float("nan"), Cache()), {"mode": "fast"})
    builder = LeafBuilder(settings, "")
    builder.mutations(inputs, map_tensors(inputs, lambda t: t.clone()), map_tensors(inputs, lambda t: t.clone()), None)
    assert builder.leaves == []
    changed = map_tensors(inputs, lambda t: t.clone())
    changed[0][2].offloading = True  # one run flipped a flag of its copy of the cache
    builder.mutations(inputs, changed, map_tensors(inputs, lambda t: t.clone()), None)
    assert [(leaf.name, leaf.verdict.value) for leaf in builder.leaves] == [("input args[2].offloading", "divergent")]
    assert builder.leaves[0].explanation.startswith("eager changed it but compiled did not; values: 1 of 1")
