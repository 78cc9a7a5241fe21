"""Every buffer the compiled code stores, reported by the FX node it computes, without changing what is compiled.

Inductor's `generate_intermediate_hooks` writes `run_intermediate_hooks(node_name, buffer)` into the output
code after a kernel stores a buffer, so that a hook sees the value the compiled code materialised, under the
name of the FX node it computes (its `origin_node`). In torch 2.13 only Triton kernels
(codegen/simd.py, the live outputs of each kernel) and extern kernels that allocate their result
(`generate_extern_kernel_alloc`) emit them; the C++ kernels of a CPU compile and the extern kernels that write
into a buffer (`extern_kernels.addmm(..., out=buf4)`, every matmul on CPU) emit none. `install` adds the same
line after those two, from the same information Inductor's own hooks use (a kernel's live output buffers, each
buffer's origin node). A piece of a `cat`/`stack` written in place into the concatenation's storage reports the
concatenation under its own node once the piece is written, so the last report holds the whole. Likewise a buffer
that an in-place fallback finishes after the kernel that stored it (a `scatter`/`scatter_reduce` that Inductor
lowers to a kernel copying the input, then `aten.scatter_reduce_` on that copy; `index_put_`; an in-place ATen
fallback) is reported again once the fallback has written it: the kernel's report is the copy, not the node's value.

A pointwise buffer that a later consumer realised (the input of a fallback kernel) has no origin node; it is reported
under the fused node whose value it holds (`_value_node`). A reduction's buffer without one is a partial result of its
node's lowering (`_pointwise`), not reported.

Only wrapper lines are added: the kernels, their fusion and their buffers are the same (a test holds the outputs
bit-identical with the hooks on), and without a registered hook a report is one Python call that does nothing.
`generate_intermediate_hooks` is part of Inductor's cache key, so code with the hooks is cached apart from code
without them; `cache_tag` adds this module's VERSION to the key, so code hooked by an older version of it (fewer
reports) is not loaded from a cache filled before.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

_INSTALLED: list[bool] = []
VERSION = 5  # raised whenever the hooks emitted change: 2 reports buffers again after in-place fallbacks, 3 reports
# buffers that a later consumer realised (no origin node of their own) under the node whose value they hold, 4 no
# longer reports buffers a kernel shares in place, 5 nor a reduction's partial result (a `mean`'s sum)


def cache_tag() -> str:
    """The cache-key tag for a compile with these hooks (torch.compiler.config.cache_key_tag, kept with it)."""
    import torch.compiler.config as compiler_config

    return f"{compiler_config.cache_key_tag}divergence-hooks-v{VERSION}"


def install() -> str | None:
    """Patch Inductor's C++ scheduling and extern-kernel codegen to emit hooks (once per process); None when
    done, else why not (another torch whose internals differ: only the kernels Inductor hooks itself report)."""
    if _INSTALLED:
        return None
    try:
        from torch._inductor import config as inductor_config
        from torch._inductor.codegen import cpp
        from torch._inductor.codegen.wrapper import PythonWrapperCodegen
        from torch._inductor.virtualized import V

        real_flush = cpp.CppScheduling.flush
        real_out = PythonWrapperCodegen.generate_extern_kernel_out
        mutating = {
            name: getattr(PythonWrapperCodegen, name)
            for name in ("generate_scatter_fallback", "generate_index_put_fallback", "generate_fallback_kernel")
        }
    except (ImportError, AttributeError) as exc:
        return f"this torch's Inductor has no C++ scheduling to hook ({exc})"

    def flush(self: Any) -> None:
        if not inductor_config.generate_intermediate_hooks:
            return real_flush(self)
        group = self.kernel_group
        try:
            # a buffer that another of the kernel's buffers takes over in place (one `in_out_ptr`) holds, once the
            # kernel is done, that other buffer's value: no name of such a group is reported (log_softmax's row sum
            # of exps becomes its log there, which was judged as `log` against the sum: cross entropy's false alarm)
            shared = set(group.args.inplace_buffers)
            live = set(group.args.live_output_buffers()) - shared
            stored = [(out.get_name(), out.node) for node in group.scheduled_nodes for out in node.get_outputs()]
        except Exception:  # an internal that moved: emit nothing rather than break the compile
            return real_flush(self)
        real_flush(self)
        wrapper = V.graph.wrapper_code
        for name, buffer in stored:
            if name in live:
                for line in _report(buffer, name):
                    wrapper.writeline(line)

    def generate_extern_kernel_out(self: Any, node: Any) -> None:
        real_out(self, node)
        if inductor_config.generate_intermediate_hooks and getattr(self, "supports_intermediate_hooks", False):
            for line in _report(node, node.get_name()):
                self.writeline(line)

    cpp.CppScheduling.flush = flush  # type: ignore[method-assign]
    PythonWrapperCodegen.generate_extern_kernel_out = generate_extern_kernel_out  # type: ignore[method-assign]
    for name, real in mutating.items():
        setattr(PythonWrapperCodegen, name, _reporting_mutations(real))
    _INSTALLED.append(True)
    return None


def _reporting_mutations(real: Callable[..., None]) -> Callable[..., None]:
    """`real` (a wrapper codegen method of an in-place fallback), followed by a report of every buffer it writes
    that the graph computed (not a graph input: those are no node's value)."""

    def generate(self: Any, node: Any) -> None:
        real(self, node)
        from torch._inductor import config as inductor_config
        from torch._inductor.virtualized import V

        if not (inductor_config.generate_intermediate_hooks and getattr(self, "supports_intermediate_hooks", False)):
            return
        try:
            written = [n for n in node.get_mutation_names() if n not in V.graph.graph_inputs]
            buffers = [(V.graph.get_buffer(n), n) for n in written]
        except Exception:  # an internal that moved: the kernel's own report stands
            return
        for buffer, name in buffers:
            for line in _report(buffer, name):
                self.writeline(line)

    return generate


def _report(buffer: Any, name: str) -> list[str]:
    """The hook line(s) for a buffer just stored: its own origin node, or, for a piece of a concatenation (a
    view into another buffer's storage), the concatenation's."""
    from torch._inductor import ir
    from torch._inductor.virtualized import V

    try:
        layout = buffer.get_layout()
        if isinstance(layout, ir.NonOwningLayout):
            name = layout.view.get_name()
            buffer = V.graph.get_buffer(name)
        origin = buffer.get_origin_node() if buffer is not None else None
        if origin is None and buffer is not None and _pointwise(buffer):
            origin = _value_node(buffer.get_origins(), buffer.get_dtype())
    except Exception:
        return []
    if origin is None:
        return []
    return [f"run_intermediate_hooks({origin.name!r}, {name})"]


def _pointwise(buffer: Any) -> bool:
    """Whether a buffer is computed element by element: a reduction's buffer without an origin node is a partial result
    of its node's lowering (`mean` stores the sum it then divides), not that node's value."""
    from torch._inductor import ir

    return isinstance(getattr(buffer, "data", None), ir.Pointwise)


def _value_node(origins: Any, dtype: Any) -> Any:
    """The FX node whose value a fused buffer holds, among the nodes fused into it, where the buffer has no origin node.

    Inductor sets a buffer's origin node where its node's lowering stores it; a chain of pointwise nodes that a later
    consumer needs stored (the input of a fallback kernel: `softplus(h).to(bf16)` before an ATen `native_dropout`)
    is realised by that consumer and has none, though it holds the chain's last value. That node is the one fused
    node no other fused node uses, among those whose value is a tensor of the buffer's dtype (the consumer that realised
    it is among the origins too: a fallback's value is a tuple or another tensor); with none or several (a buffer
    holding more than one node's value), no report.
    """
    import torch

    nodes = [
        n
        for n in origins
        if getattr(n, "op", None) == "call_function"
        and isinstance(n.meta.get("val"), torch.Tensor)
        and n.meta["val"].dtype == dtype
    ]
    inside = set(nodes)
    last = [n for n in nodes if not any(user in inside for user in n.users)]
    return last[0] if len(last) == 1 else None


@contextlib.contextmanager
def hooked(report: Callable[[str, Any], None]) -> Iterator[None]:
    """While active, `report(node_name, tensor)` sees every buffer the hooked compiled code stores."""
    from torch._inductor import hooks

    with hooks.intermediate_hook(report):
        yield
