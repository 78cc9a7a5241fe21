"""The program editor: a syntax-highlighting code editor (PyPI streamlit-code-editor) or Streamlit's plain text area.

`st.session_state["source"]` is the program either way; the Run button reads it. The plain text area is that
key's own widget. The highlighted editor is a custom component that keeps its own text in the browser, so:

- what the user types reaches `source` when the editor loses focus (which a click on Run does first, so an edit
  followed by Run runs the edited text) or on Ctrl+Enter;
- a program put into `source` from outside (a gallery case, an upload, a stored run's snippet, the plain
  editor) is noticed here and replaces the editor's text: the component gets a new key (a version counter),
  which mounts a fresh editor holding that text.

The highlighted editor is the default where it can work: the package imports and the session has a browser
on the other end (request headers). Without one, e.g. under streamlit.testing's AppTest, which cannot drive
custom components, or when the package is missing, the text area is used and nothing is said.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

import streamlit as st

SOURCE = "source"
MODE = "editor_mode"
HIGHLIGHTED = "highlighted"
PLAIN = "plain"
_VERSION = "editor_version"  # bumped whenever `source` changes from outside the highlighted editor
_SHOWN = "editor_shown"  # the text the current highlighted editor holds, as far as the server knows
_EVENT = "editor_event"  # id of the last editor response already applied
_LINES = (16, 30)  # the editor grows from 16 to 30 lines, then scrolls
# After a paste the browser scrolls Ace's scroller element itself (to show its hidden textarea): the code moves
# up while the line numbers stay, a row below their lines. Ace scrolls by transforms and never expects that
# native offset, so a watcher in the page (same origin as the component's frame) puts it back to 0.
_ALIGN_GUTTER = """<script>
const fix = () => window.parent.document.querySelectorAll("iframe[title*='code_editor']").forEach(f => {
  try {
    f.contentDocument.querySelectorAll(".ace_scroller").forEach(s => {
      if (s.scrollTop) s.scrollTop = 0;  // a paste before the listener below was there
      if (s.dxAligned) return;
      s.dxAligned = true;
      s.addEventListener("scroll", () => { if (s.scrollTop) s.scrollTop = 0; });
    });
  } catch (e) {}
});
fix(); setInterval(fix, 500);
</script>"""


@dataclass(frozen=True)
class Editors:
    """What this session can offer."""

    highlighted: bool  # the highlighting component imports and a browser can render it

    @property
    def modes(self) -> tuple[str, ...]:
        return (HIGHLIGHTED, PLAIN) if self.highlighted else (PLAIN,)


def _component() -> Callable[..., Any] | None:
    """streamlit-code-editor's component function, or None where it is not installed or does not import."""
    try:
        return importlib.import_module("code_editor").code_editor  # type: ignore[no-any-return]
    except Exception:  # noqa: BLE001 - any failure to import means: no highlighted editor
        return None


_ENTRY_POINTS = ("fn", "inputs", "get_inputs", "get_init_inputs", "main")
NAME_CHARS = 40


def program_name(source: str) -> str:
    """A pasted program's name in the run list (parsed, never run): the model the check calls (`fn = SensorEncoder()`,
    `fn = model` with `model = GPT2LMHeadModel(config)`, a `fn` that calls such a model, KernelBench's `Model`), else
    the class no other class uses (helpers like a `PhaseEmbed` inside a `SensorEncoder` are not the program), else a
    helper function, else what `fn` computes (`torch.softmax(x, -1) * 3.0`; a bare `x` says nothing), else the first
    entry point."""
    try:
        body = ast.parse(source).body
    except (SyntaxError, ValueError):
        return "pasted program"
    classes = [n for n in body if isinstance(n, ast.ClassDef)]
    functions = [n.name for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    named = [n for n in functions if n not in _ENTRY_POINTS]
    assigned = [
        t.id for n in body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name) and t.id == "fn"
    ]
    first = (
        [m for m in [_model_called(body)] if m]
        or _outermost(classes)
        or named
        or [c for c in [_computes(body)] if c]
        or functions
        or assigned
        or [None]
    )[0]
    return f"{first} (pasted)" if first else "pasted program"


def _constructed(value: ast.expr | None) -> str | None:
    """The class a value is built from: `SensorEncoder().eval().to(torch.bfloat16)` -> SensorEncoder."""
    while isinstance(value, ast.Call):
        func = value.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call):  # .eval(), .to(...)
            value = func.value
            continue
        if isinstance(func, ast.Attribute) and func.attr == "from_pretrained" and isinstance(func.value, ast.Name):
            return func.value.id
        if isinstance(func, ast.Name) and func.id[:1].isupper():
            return func.id
        return None
    return None


def _model_called(body: list[ast.stmt]) -> str | None:
    """The model class the entry point is or calls."""
    built: dict[str, str] = {}
    for node in body:
        if isinstance(node, ast.Assign):
            cls = _constructed(node.value)
            for t in node.targets:
                if isinstance(t, ast.Name):
                    if cls:
                        built[t.id] = cls
                    elif isinstance(node.value, ast.Name) and node.value.id in built:  # fn = model
                        built[t.id] = built[node.value.id]
    if "fn" in built:
        return built["fn"]
    for node in body:
        if isinstance(node, ast.FunctionDef) and node.name == "fn":
            for sub in ast.walk(node):
                if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id in built:
                    return built[sub.func.id]
    if any(isinstance(n, ast.ClassDef) and n.name == "Model" for n in body):  # KernelBench
        return "Model"
    return None


def _outermost(classes: list[ast.ClassDef]) -> list[str]:
    """Classes no other class of the program uses (by name), the last one first: the model, not its parts."""
    used = {
        sub.id
        for c in classes
        for sub in ast.walk(c)
        if isinstance(sub, ast.Name) and sub.id != c.name and sub.id in {k.name for k in classes}
    }
    return [c.name for c in reversed(classes) if c.name not in used]


def _computes(body: list[ast.stmt]) -> str | None:
    """What the entry point `fn` returns, as written (`torch.softmax(x, -1) * 3.0`), shortened; None if unreadable."""
    value: ast.expr | None = None
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "fn":
            returns = [s for s in node.body if isinstance(s, ast.Return) and s.value is not None]
            value = returns[-1].value if returns else None
            if isinstance(value, ast.Name):  # `return out`: what `out` was last set to
                sets = [
                    s.value
                    for s in node.body
                    if isinstance(s, ast.Assign)
                    and any(isinstance(t, ast.Name) and t.id == value.id for t in s.targets)
                ]
                value = sets[-1] if sets else value
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "fn" for t in node.targets):
            value = node.value.body if isinstance(node.value, ast.Lambda) else node.value
    if value is None:
        return None
    if isinstance(value, ast.Name):  # a bare `x` names nothing about the program
        return None
    text = ", ".join(ast.unparse(v) for v in value.elts) if isinstance(value, ast.Tuple) else ast.unparse(value)
    text = " ".join(text.split())
    return text if len(text) <= NAME_CHARS else text[: NAME_CHARS - 1].rstrip() + "…"


def editors() -> Editors:
    return Editors(highlighted=_component() is not None and bool(st.context.headers))


def take_response(state: MutableMapping[str, Any], response: Any) -> bool:
    """Apply the highlighted editor's latest response to `source`; True when it changed the program.

    A response is applied once (by its id): the component repeats its last value on every rerun, and a
    program loaded since must not be overwritten by it. The component's untouched default has an empty id.
    """
    if not isinstance(response, dict) or not response.get("id") or response["id"] == state.get(_EVENT):
        return False
    state[_EVENT] = response["id"]
    text = response.get("text")
    if not isinstance(text, str) or text == state.get(SOURCE):
        state[_SHOWN] = state.get(SOURCE)
        return False
    state[SOURCE] = text
    state[_SHOWN] = text
    return True


def component_key(version: int) -> str:
    return f"source_editor:{version}"


def take_pending(state: MutableMapping[str, Any]) -> bool:
    """Apply the highlighted editor's latest response before anything else; True when it changed the program.

    A click elsewhere (the "plain text" switch, a button) first blurs the editor; its text arrives in the
    same rerun, which may not show the editor at all. A program put into `source` from outside since the
    editor was last in sync wins over it.
    """
    if SOURCE not in state or state.get(_SHOWN) != state[SOURCE]:
        return False
    return take_response(state, state.get(component_key(int(state.get(_VERSION, 0)))))


def sync_version(state: MutableMapping[str, Any]) -> int:
    """The highlighted editor's version: a new one (a fresh editor) when `source` changed behind its back."""
    if state.get(_SHOWN) != state.get(SOURCE, ""):
        state[_VERSION] = int(state.get(_VERSION, 0)) + 1
        state[_SHOWN] = state.get(SOURCE, "")
    return int(state.get(_VERSION, 0))


def render(on_edit: Callable[[], None], placeholder: str) -> None:
    """The mode switch and the editor; `on_edit` runs when the user changed the program in it."""
    state = st.session_state
    if take_pending(state):
        on_edit()
    offer = editors()
    if state.get(MODE) not in offer.modes:
        state[MODE] = offer.modes[0]
    if len(offer.modes) > 1:
        st.radio(
            "Editor",
            offer.modes,
            key=MODE,
            horizontal=True,
            format_func=lambda m: "highlighted" if m == HIGHLIGHTED else "plain text",
        )
    component = _component() if state[MODE] == HIGHLIGHTED else None
    # one container either way, so what follows the editor (the Run button) keeps its place in the page when
    # the mode changes: a moved element is briefly there twice, the stale copy beside the new one
    with st.container():
        if component is None:
            st.text_area("Program", key=SOURCE, height=340, placeholder=placeholder, on_change=on_edit)
        else:
            _highlighted(component, on_edit, placeholder)


def _highlighted(component: Callable[..., Any], on_edit: Callable[[], None], placeholder: str) -> None:
    state = st.session_state
    # `source` is the text area's widget key; in a run without that widget Streamlit would drop the key with
    # the widget. Writing it back makes it plain session state, which survives.
    state[SOURCE] = state.get(SOURCE, "")
    version = sync_version(state)
    response = component(
        state[SOURCE],
        lang="python",
        height=list(_LINES),
        response_mode="blur",
        options={"showLineNumbers": True, "tabSize": 4, "useSoftTabs": True},
        props={"placeholder": placeholder},
        key=component_key(version),
    )
    if take_response(state, response):
        on_edit()
    st.iframe(_ALIGN_GUTTER, height=1)
    st.caption("An edit applies when you click outside the editor (a click on Run check does) or press Ctrl+Enter.")
