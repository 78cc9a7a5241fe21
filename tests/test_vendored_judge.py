"""The repro's compact judge and leaf names (minimizer/vendored) decide as the engine's do, so the two cannot drift."""

from __future__ import annotations

import ast
import collections
import collections.abc
import contextlib
import copy
import dataclasses
import enum
import threading
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pytest
import torch
import torch.utils._pytree as pytree

from engine.child import leaves as engine_leaves
from engine.judge.metrics import value_metrics
from engine.judge.oracle import judge_values, significant_strides
from minimizer.repro import Vendored, emit, judge_source
from minimizer.vendored import judge as vendored_judge
from minimizer.vendored import walker
from tests.vendored_corpus import Triple, random_values

REPO = Path(__file__).resolve().parent.parent
STORED = REPO / "tests" / "fixtures" / "stored_2026_12_06" / "runs" / "check_floor_divide" / "arrays"


def _decisions(values: list[Triple]) -> tuple[list[tuple[str, list[str]]], list[tuple[str, list[str]]], int]:
    """(the engine's verdict and symptoms per value, the compact judge's, how many the element rule decided)."""
    engine, ours, by_elements = [], [], 0
    for _, eager, compiled, ref in values:
        j = judge_values(value_metrics(eager, compiled, ref), strict=False, factor=2.0, noise_ulps=32.0)
        engine.append((j.verdict.value, [s.value for s in j.symptoms]))
        by_elements += j.fallback is not None
        verdict, symptoms, _ = vendored_judge.judge(eager, compiled, ref, 2.0, 32.0)
        ours.append((verdict, symptoms))
    return engine, ours, by_elements


def test_the_compact_judge_decides_as_the_engine_on_random_values() -> None:
    values = random_values(0)
    engine, ours, by_elements = _decisions(values)
    mismatched = [(v[0], e, o) for v, e, o in zip(values, engine, ours, strict=True) if e != o]
    assert not mismatched, mismatched[:5]
    # the corpus reaches every verdict, every special symptom and the element rule
    assert {e[0] for e in engine} == {"match", "benign", "eager-inaccurate", "divergent"}
    assert {s for e in engine for s in e[1]} == {"value", "nan", "inf", "signed-zero"}
    assert len(values) == 432 and by_elements >= 25


def test_the_compact_judge_decides_as_the_engine_on_a_real_checks_stored_values() -> None:
    # the gallery's floor division (pytorch#197895) as the check stored it: eager, compiled and the fp64 reference
    values = []
    for leaf in (0, 1):
        arrays = [torch.from_numpy(np.load(STORED / f"{leaf}.{side}.npy")) for side in ("eager", "compiled", "ref")]
        values.append((f"out[{leaf}]", *arrays))
    engine, ours, _ = _decisions(values)
    assert engine == ours == [("divergent", ["value"])] * 2


@pytest.mark.slow
def test_the_compact_judge_decides_as_the_engine_on_the_calibration_fault_families() -> None:
    """The calibration corpus's one-step faults and their clean twins (benchmarks/oracle_corpus.py), one program of
    each family: its fault variant stands in for compiled (run eagerly), the program in float64 for fp64."""
    from benchmarks import oracle_corpus

    seen, values = set(), []
    for fault, clean in oracle_corpus.one_ulp_cases():
        if fault.family in seen:
            continue
        seen.add(fault.family)
        for case in (fault, clean):
            torch.manual_seed(0)
            args = case.inputs()
            with torch.no_grad():
                eager = dict(engine_leaves.tensors_of(case.fn(*args), "out"))
                compiled = dict(engine_leaves.tensors_of(case.compiled(*args), "out"))
                wide = [a.double() if a.is_floating_point() else a for a in args]
                ref = dict(engine_leaves.tensors_of(copy.deepcopy(case.fn).double()(*wide), "out"))
            values += [(f"{case.name} {name}", eager[name], compiled[name], ref.get(name)) for name in eager]
    engine, ours, by_elements = _decisions(values)
    assert engine == ours
    assert seen == set(oracle_corpus.FAMILIES) and len(values) == 20 and by_elements >= 2, (len(values), by_elements)


def test_strides_are_compared_as_the_engine_compares_them() -> None:
    for t in (torch.zeros(4, 1), torch.zeros(1, 4).t(), torch.ones(3, 4).t(), torch.ones(()), torch.ones(2, 3, 4)):
        assert vendored_judge.significant_strides(t) == significant_strides(t)


class Pair(NamedTuple):
    first: Any
    second: Any


@dataclasses.dataclass
class Output:
    logits: torch.Tensor
    extra: Any = None


class Layer:  # a DynamicCache-like cache: objects' attributes, as transformers' cache layers hold them
    def __init__(self, keys: torch.Tensor, values: torch.Tensor) -> None:
        self.keys, self.values, self.kind = keys, values, torch.float32


class Cache:
    def __init__(self, *layers: Layer) -> None:
        self.layers, self.seen, self.update = list(layers), 3, self.grow  # a bound method: shared, not walked
        self.lock, self.me = threading.Lock(), self  # an opaque object (shared) and a cycle

    def grow(self) -> None:
        self.seen += 1


class Slotted:
    __slots__ = ("a", "b", "unset")

    def __init__(self, a: Any, b: Any) -> None:
        self.a, self.b = a, b


class Frozen(collections.abc.Mapping):  # a Mapping that is not a dict
    def __init__(self, **items: Any) -> None:
        self._items = items

    def __getitem__(self, key: str) -> Any:
        return self._items[key]

    def __iter__(self) -> Any:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)


class Returned:  # a model's output as a plain object: `out.cache.layers[0].keys`
    def __init__(self, logits: torch.Tensor, cache: Cache) -> None:
        self.logits, self.cache, self.how = logits, cache, enum.Enum("How", "GREEDY").GREEDY


def _structures() -> list[Any]:
    t, u = torch.ones(2), torch.arange(3)
    shared = [t, u]
    cache = Cache(Layer(t, u), Layer(torch.zeros(2), t))
    structures = [
        t,
        (t, u),
        [t, (u, {"k": t, 3: [u]})],
        {"a": t, "b": None, "c": 1.5, "d": "text", "e": torch.float32},
        collections.OrderedDict(x=t, y=u),
        Pair(t, Pair(u, 2)),
        Output(t, {"hidden": (u, u)}),
        torch.max(torch.ones(3, 2), 0),  # torch.return_types: a namedtuple-like tuple
        (shared, shared),  # the same list twice: the engine names it once, then as an alias
        (torch.nn.Linear(2, 2), t, torch.Size([2, 3])),
        Returned(torch.ones(3), cache),
        (Slotted(t, [u, torch.sum]), Frozen(z=u, y=t), {t.add, range(2)}),
    ]
    try:
        from transformers.modeling_outputs import CausalLMOutputWithPast
    except ImportError:  # transformers is not installed here: the plain objects above stand for its outputs
        return structures
    return [*structures, CausalLMOutputWithPast(logits=t, past_key_values=cache, hidden_states=(u, t))]


@pytest.mark.parametrize("value", _structures(), ids=lambda v: type(v).__name__)
def test_the_compact_walker_names_every_tensor_as_the_engine_walker(value: Any) -> None:
    ours, engine = walker.tensors_of(value, "out"), engine_leaves.tensors_of(value, "out")
    assert [(n, id(t)) for n, t in ours] == [(n, id(t)) for n, t in engine]
    mapped, mapped_engine = walker.map_tensors(value, torch.neg), engine_leaves.map_tensors(value, torch.neg)
    assert type(mapped) is type(value)
    # the same tensors replaced, under the names the engine's copy gives them (one difference, by design: a list
    # reached twice stays one list in the compact copy, where the engine rebuilds plain containers one by one)
    got, want = walker.tensors_of(mapped, "out"), dict(engine_leaves.tensors_of(mapped_engine, "out"))
    assert [n for n, _ in got] == [n for n, _ in ours] and all(t.equal(want[n]) for n, t in got)
    assert all(a.equal(-b) for (_, a), (_, b) in zip(got, ours, strict=True))


def test_the_compact_walker_names_a_cache_leaf_and_refuses_what_only_the_engine_walker_names() -> None:
    names = [name for name, _ in walker.tensors_of(Returned(torch.ones(1), Cache(Layer(*torch.ones(2, 3)))), "out")]
    assert names == ["out.logits", "out.cache.layers[0].keys", "out.cache.layers[0].values"]
    copied = walker.map_tensors(cache := Cache(), torch.neg)
    assert copied is not cache and copied.lock is cache.lock and copied.me is copied  # state copied, a lock shared

    class Node:
        def __init__(self) -> None:
            self.x = torch.ones(2)

    keyed = lambda n: ([(pytree.MappingKey("x"), n.x)], None)  # noqa: E731
    pytree.register_pytree_node(Node, lambda n: ([n.x], None), lambda xs, _: Node(), flatten_with_keys_fn=keyed)
    try:
        assert engine_leaves.tensors_of(Node(), "out")[0][0] == "out['x']"  # named by its pytree keys
        for value in (Node(), collections.deque([torch.ones(1)]), np.ones(2), (torch.ones(1) for _ in range(2))):
            with contextlib.suppress(engine_leaves.UnsupportedOutput):  # the engine refuses an iterator too
                engine_leaves.flatten(value)
            with pytest.raises(TypeError, match="this repro cannot name it"):
                walker.tensors_of(value, "out")
    finally:
        pytree._deregister_pytree_node(Node)


def test_a_repro_carries_the_engine_walker_and_faithful_reference_only_where_the_program_needs_them() -> None:
    from engine import CheckOptions

    plain = "import torch\n\n\ndef fn(x):\n    return x // 0.1\n\n\ninputs = (torch.ones(4),)\n"
    objects = "import torch\n\n\nclass Out:\n    pass\n\n\ndef fn(x):\n    o = Out()\n    o.x = x\n    return o\n"
    options = CheckOptions(device="cpu")
    assert Vendored.of(plain, options) == Vendored(walker=False, faithful=True)  # no check read: its reference
    assert not Vendored.of(objects, options).walker  # objects' attributes: the compact walker names them
    assert Vendored.of("import transformers\n" + plain, options).walker
    assert Vendored.of(objects.replace("o = Out()", "o = collections.deque()"), options).walker
    assert Vendored.of("x = torch.arange(3.0)\n" + plain, options).faithful
    for vendored in (Vendored(False, False, elements=False), Vendored(True, True, True)):
        script = judge_source(vendored)
        ast.parse(script)
        assert ("_LEAVES_SOURCE" in script) is vendored.walker and ("_FAITHFUL_SOURCE" in script) is vendored.faithful
        assert ("def element_tests(" in script) is vendored.elements and "\n\n\n\ndef " not in script
        assert all(len(line) <= 120 for line in script.splitlines())
    assert "def gradients_of" in emit(plain, options.replace(backward=True))


def test_the_vendored_files_need_nothing_but_torch_below_their_mark() -> None:
    # what a repro pastes runs where only torch is installed: no import at all below the mark
    for path in sorted((REPO / "minimizer" / "vendored").glob("[!_]*.py")):
        text = path.read_text()
        pasted = ast.parse(text[text.index("# ---- vendored ----") :])
        assert not [n for n in ast.walk(pasted) if isinstance(n, (ast.Import, ast.ImportFrom))], path.name
