"""Known causes: a check whose divergence looks like an upstream issue already reported (or a gallery case) says so
first, with the link, before any figure.

A GPT-2 check with its KV cache used to lead with "compile changed the memory layout (strides) in
out.cache.layers[0].keys ... Next: Localize, then Minimize", although the cause is known (`cat` with an empty tensor
keeps the other input's layout: the gallery's `cat_empty_stride`). Each entry below recognises one cause from what
every check already has, for free: the divergent leaves' symptoms and the Dynamo graph's text (its ops, and the
shapes and dtypes Dynamo annotates). It says "looks like": the match is on the op and the symptom, not a proof, and
the next step says how to tell (the gallery case, or the issue's own repro).

Pure: reads leaves (any object with LeafResult's name, verdict and symptoms) and graph text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from engine.judge.verdicts import Symptom, Verdict


class JudgedLeaf(Protocol):
    name: str
    verdict: Verdict
    symptoms: tuple[Symptom, ...]


@dataclass(frozen=True)
class Graph:
    """The facts of a check's Dynamo graphs that the matchers read: the text, and each node's annotated shape."""

    text: str
    shapes: dict[str, tuple[str, tuple[int | None, ...]]]  # node -> (dtype code, shape; None for a symbolic size)

    @classmethod
    def read(cls, graphs: Sequence[str]) -> Graph:
        shapes: dict[str, tuple[str, tuple[int | None, ...]]] = {}
        text = "\n".join(graphs)
        for name, dtype, dims in _ANNOTATED.findall(text):
            shapes[name] = (dtype, tuple(int(d) if d.strip().isdigit() else None for d in dims.split(",") if d.strip()))
        for alias, name in _ALIAS.findall(text):  # `l_x_ = L_x_`: Dynamo's local name of a placeholder
            if name in shapes:
                shapes.setdefault(alias, shapes[name])
        return cls(text, shapes)

    @property
    def code(self) -> str:
        """The graph's code without its comments: Dynamo quotes each source line in a `# File: ..., code: ...`
        comment, where `t // self.cfg.patch` of Python ints is no floor division of the graph's."""
        return "\n".join(line.split("#", 1)[0] for line in self.text.splitlines())

    def calls(self, *names: str) -> bool:
        """Whether the graph calls any of these torch ops (as a function, a method or an operator name)."""
        return any(re.search(rf"[.\s(]{re.escape(n)}\(", self.code) for n in names)

    def writes_subscript(self) -> bool:
        """Whether the graph assigns into a subscript (`dst[0:, :] = src`: Dynamo keeps it as `x[...] = y`)."""
        return bool(re.search(r"^\s*\w+\[.*\] = ", self.code, re.M)) or self.calls("__setitem__", "setitem")


_ANNOTATED = re.compile(r"(\w+): \"([a-z]+\d*)\[([^\]]*)\]")
_ALIAS = re.compile(r"^\s*(\w+) = (\w+)\s*$", re.M)


@dataclass(frozen=True)
class KnownIssue:
    key: str
    title: str  # its name, then what the cause is: "`cat` with an empty tensor layout: Inductor's `cat` keeps ..."
    url: str  # the upstream issue, or a search for it where none was found
    status: str  # "open", "fixed on main (after 2.13)", "not reported upstream", "documented"
    case: str | None  # the gallery case that shows it
    symptoms: frozenset[Symptom]  # a divergent leaf must show one of these
    graph: Callable[[Graph], bool]  # and the program's graph this

    def explains(self, leaf: JudgedLeaf, graph: Graph) -> bool:
        return leaf.verdict is Verdict.DIVERGENT and bool(self.symptoms & set(leaf.symptoms)) and self.graph(graph)

    def sentence(self) -> str:
        """`looks like the known `cat` with an empty tensor layout issue, <link> (<status>; <the cause>)`."""
        name, _, cause = self.title.partition(": ")
        return f"looks like the known {name} issue, {self.url} ({self.status}; {cause})"


def _cat_with_empty(graph: Graph) -> bool:
    """`torch.cat([empty, k])`: one of the tensors cat joins has a zero-size dimension."""
    for match in re.finditer(r"torch\.(?:cat|concat|concatenate)\(\[([^\]]*)\]", graph.text):
        for name in (n.strip() for n in match.group(1).split(",")):
            shape = graph.shapes.get(name)
            if shape is not None and 0 in shape[1]:
                return True
    return False


def _permuted_key_attention(graph: Graph) -> bool:
    """`q @ k.permute(0, 2, 3, 1)` then softmax: the SDPA pattern's wildcard permute. The matmul may be the `@`
    operator: Dynamo keeps it as `q_1 @ permute`."""
    matmul = graph.calls("matmul") or bool(re.search(r"\w @ \w", graph.code))
    return bool(re.search(r"\.permute\(0, 2, 3, 1\)", graph.text)) and graph.calls("softmax") and matmul


def _float_floor_division(graph: Graph) -> bool:
    floor = re.search(r" // |floor_divide\(|rounding_mode = 'floor'", graph.code)
    return floor is not None and bool(re.search(r'"(?:f32|f64|bf16|f16)\[', graph.text))


def _index_put_then_flip(graph: Graph) -> bool:
    return (graph.calls("index_put_", "index_copy_", "index_add_") or graph.writes_subscript()) and graph.calls("flip")


def _dropout_p1(graph: Graph) -> bool:
    return bool(re.search(r"dropout\([^,]+, 1\.0, True", graph.text))


def _empty_reduction(ops: tuple[str, ...]) -> Callable[[Graph], bool]:
    def matches(graph: Graph) -> bool:
        return graph.calls(*ops) and any(0 in shape for _, shape in graph.shapes.values())

    return matches


def _calls(*ops: str) -> Callable[[Graph], bool]:
    return lambda graph: graph.calls(*ops)


def _bf16_sequence(graph: Graph) -> bool:
    return bool(re.search(r"torch\.(?:arange|linspace|logspace)\([^)]*dtype = torch\.(?:bfloat16|float16)", graph.text))


def _search(words: str) -> str:
    return "https://github.com/pytorch/pytorch/issues?q=" + words.replace(" ", "+")


# The known causes, most specific first. Each upstream link was found with PyTorch's issue search on 2026-12-06; where
# none was found the link is the search itself (benchmarks/zoo_findings/findings.json has the same triage).
KNOWN: tuple[KnownIssue, ...] = (
    KnownIssue(
        "cat-empty-stride",
        "`cat` with an empty tensor layout: Inductor's `cat` keeps the other input's strides",
        _search("torch.compile cat empty tensor strides"),
        "not reported upstream; same class as pytorch#198364",
        "cat_empty_stride",
        frozenset({Symptom.STRIDE}),
        _cat_with_empty,
    ),
    KnownIssue(
        "sdpa-permuted-key",
        "SDPA pattern: a key permuted (0, 2, 3, 1) is taken for `key.transpose(-2, -1)`",
        "https://github.com/pytorch/pytorch/issues/195320",
        "fixed on main after 2.13",
        "sdpa_permuted_key",
        frozenset({Symptom.VALUE}),
        _permuted_key_attention,
    ),
    KnownIssue(
        "index-put-flip",
        "`index_put_` then an in-place update reading its flip: the copy back is fused with the read",
        "https://github.com/pytorch/pytorch/issues/198270",
        "open",
        None,
        frozenset({Symptom.VALUE, Symptom.MUTATION}),
        _index_put_then_flip,
    ),
    KnownIssue(
        "dropout-p1-draws",
        "`dropout(p=1.0)`: under `fallback_random` compiled draws random numbers where eager does not",
        _search("dropout p=1 fallback_random"),
        "not reported upstream; related pytorch#142853",
        None,
        frozenset({Symptom.VALUE}),
        _dropout_p1,
    ),
    KnownIssue(
        "var-mean-empty",
        "`var_mean` of an empty tensor: compiled's mean is 0 where eager's is NaN",
        "https://github.com/pytorch/pytorch/issues/197108",
        "open, draft fix pytorch#197165",
        None,
        frozenset({Symptom.NAN, Symptom.VALUE}),
        _empty_reduction(("var_mean", "std_mean")),
    ),
    KnownIssue(
        "max-unpool2d-strides",
        "`max_unpool2d` strides: compiled returns contiguous where eager keeps channels-last",
        "https://github.com/pytorch/pytorch/issues/187173",
        "fixed on main after 2.13",
        None,
        frozenset({Symptom.STRIDE}),
        _calls("max_unpool2d"),
    ),
    KnownIssue(
        "float-floor-division",
        "float floor division: Inductor computes `a // b` as floor(a / b) (`1.0 // 0.1`: 10, Python 9)",
        "https://github.com/pytorch/pytorch/issues/197895",
        "open",
        "floor_divide_off_by_one",
        frozenset({Symptom.VALUE}),
        _float_floor_division,
    ),
    KnownIssue(
        "remainder-zero-sign",
        "`remainder` sign-of-zero: eager gives a zero the dividend's sign (pytorch#193755), compiled always +0",
        "https://github.com/pytorch/pytorch/issues/198057",
        "open",
        None,
        frozenset({Symptom.SIGNED_ZERO}),
        _calls("remainder", "__mod__", "__rmod__", "fmod"),
    ),
    KnownIssue(
        "var-fp32-accumulation",
        "`var_mean` accumulation: Inductor accumulates in float32 where eager's CPU kernel uses double",
        "https://github.com/pytorch/pytorch/issues/197089",
        "open",
        "var_float32_accumulation",
        frozenset({Symptom.VALUE}),
        _calls("var_mean", "var", "std", "std_mean"),
    ),
    KnownIssue(
        "acosh-overflow",
        "`acosh` overflow: the vectorized kernel squares its argument (inf above sqrt(FLT_MAX))",
        "https://github.com/pytorch/pytorch/issues/183768",
        "open",
        "acosh_large_overflow",
        frozenset({Symptom.INF, Symptom.VALUE}),
        _calls("acosh"),
    ),
    KnownIssue(
        "ldexp-promotion",
        "`ldexp` type promotion: Inductor keeps the mantissa's dtype",
        "https://github.com/pytorch/pytorch/issues/197091",
        "open",
        "ldexp_dtype_promotion",
        frozenset({Symptom.DTYPE, Symptom.VALUE}),
        _calls("ldexp"),
    ),
    KnownIssue(
        "scalar-not-rounded-bf16",
        "bf16 `fmod`/`remainder` by a Python float: Inductor does not round the scalar to bf16 as eager does",
        "https://github.com/pytorch/pytorch/issues/186875",
        "open",
        "fmod_remainder_scalar_bf16",
        frozenset({Symptom.VALUE}),
        lambda g: g.calls("fmod", "remainder", "__mod__") and '"bf16[' in g.text,
    ),
    KnownIssue(
        "dtype-view-then-mutate",
        "dtype-view-then-mutate: a read through a dtype view is scheduled after a later in-place write",
        "https://github.com/pytorch/pytorch/issues/198101",
        "open",
        "dtype_view_then_mutate",
        frozenset({Symptom.VALUE, Symptom.MUTATION}),
        lambda g: bool(re.search(r"\.view\(torch\.(?:u?int\d+|float\d+|bfloat16|half)\)", g.text)),
    ),
    KnownIssue(
        "copy-then-mutate",
        "copy-then-mutate: a copy into dst followed by an in-place update of src gives dst the updated values",
        "https://github.com/pytorch/pytorch/issues/198131",
        "open",
        "copy_then_mutate_source",
        frozenset({Symptom.VALUE, Symptom.MUTATION}),
        lambda g: (g.calls("copy_") or g.writes_subscript()) and bool(re.search(r"\.(?:add|sub|mul|div)_\(", g.code)),
    ),
    KnownIssue(
        "elu-subnormal",
        "ELU of tiny negatives: compiled returns +0, so a division gives NaN where eager gives -inf",
        "https://github.com/pytorch/pytorch/issues/189801",
        "open",
        "elu_subnormal_div_zero",
        frozenset({Symptom.NAN, Symptom.INF, Symptom.SIGNED_ZERO}),
        _calls("elu"),
    ),
    KnownIssue(
        "erf-small",
        "`erf` of tiny arguments: the vectorized CPU kernel returns 0",
        "https://github.com/pytorch/pytorch/issues/198183",
        "open",
        "erf_small_vectorized",
        frozenset({Symptom.VALUE}),
        _calls("erf"),
    ),
    KnownIssue(
        "erfinv-near-one",
        "`erfinv` near +-1: the CPU kernel loses digits",
        "https://github.com/pytorch/pytorch/issues/198133",
        "open",
        "erfinv_near_one",
        frozenset({Symptom.VALUE, Symptom.INF}),
        _calls("erfinv"),
    ),
    KnownIssue(
        "neg-zero-add",
        "`-0.0 + 0.0` sign: Inductor keeps the negative zero IEEE 754 makes +0.0",
        "https://github.com/pytorch/pytorch/issues/189799",
        "open",
        "neg_zero_add_reciprocal",
        frozenset({Symptom.SIGNED_ZERO, Symptom.INF, Symptom.VALUE}),
        lambda g: g.calls("reciprocal") and g.calls("add"),
    ),
    KnownIssue(
        "interpolate-conv-pool-backward",
        "interpolate-conv-pool gradients: wrong gradients through interpolate, conv2d, max_pool2d and where",
        "https://github.com/pytorch/pytorch/issues/185509",
        "open",
        "interpolate_conv_pool_backward",
        frozenset({Symptom.VALUE}),
        lambda g: g.calls("interpolate") and g.calls("conv2d") and g.calls("max_pool2d"),
    ),
    KnownIssue(
        "bf16-sequence",
        "bf16 `arange`/`linspace`/`logspace` rounding: eager's vectorized kernel rounds before it computes",
        "https://github.com/pytorch/pytorch/issues/137774",
        "documented; eager's kernel fixed in pytorch#178334",
        None,
        frozenset({Symptom.VALUE}),
        _bf16_sequence,
    ),
)


@dataclass(frozen=True)
class Recognised:
    issue: KnownIssue
    leaves: tuple[str, ...]  # the divergent leaves it explains
    unexplained: tuple[str, ...]  # divergent leaves it does not


def recognise(leaves: Sequence[JudgedLeaf], graphs: Sequence[str]) -> Recognised | None:
    """The known cause that explains the most divergent leaves of a check (the first listed on a tie), or None."""
    divergent = [leaf for leaf in leaves if leaf.verdict is Verdict.DIVERGENT]
    if not divergent or not graphs:
        return None
    graph = Graph.read(graphs)
    best: Recognised | None = None
    for issue in KNOWN:
        explained = tuple(leaf.name for leaf in divergent if issue.explains(leaf, graph))
        if explained and (best is None or len(explained) > len(best.leaves)):
            rest = tuple(leaf.name for leaf in divergent if leaf.name not in explained)
            best = Recognised(issue, explained, rest)
    return best
