"""The check's settings as Streamlit widgets, and the CheckOptions they stand for.

Every widget has a key under `opt_`, so a gallery case can fill the form by writing session state before
the widgets are drawn (in a callback), and tests can set them by key.
"""

from __future__ import annotations

import ast
from collections.abc import MutableMapping
from typing import Any

import streamlit as st

from engine import CheckOptions, OptionsError
from engine.options import BACKENDS, CAST_DTYPES
from engine.options import MODES as ENGINE_MODES

AUTO = "auto"
MODES = (AUTO, *ENGINE_MODES)
TRISTATE = (AUTO, "on", "off")
DTYPES = ("as written", *CAST_DTYPES)
FLAGS = ("fallback_random", "emulate_precision_casts")  # the Inductor flags that change numerics

DEFAULTS: dict[str, Any] = {
    "opt_device": AUTO,
    "opt_backend": "inductor",
    "opt_mode": AUTO,
    "opt_dynamic": AUTO,
    "opt_fullgraph": AUTO,
    "opt_dtype": "as written",
    "opt_seeds": 1,
    "opt_seed": 0,
    "opt_backward": False,
    "opt_strict": False,
    "opt_fallback_random": False,
    "opt_emulate_precision_casts": False,
    "opt_fp64": True,
    "opt_recheck": True,
    "opt_recheck_random": True,
    "opt_factor": 2.0,
    "opt_timeout": 300.0,
    "opt_config": "",
    "opt_triton_cpu": False,
}


def _tristate(value: bool | None) -> str:
    return AUTO if value is None else ("on" if value else "off")


def _from_tristate(value: str) -> bool | None:
    return None if value == AUTO else value == "on"


def widget_values(options: CheckOptions) -> dict[str, Any]:
    """The widget state that stands for these options."""
    config = dict(options.inductor_config)
    flags = {f"opt_{name}": bool(config.pop(name, False)) for name in FLAGS}
    return {
        "opt_device": options.device or AUTO,
        "opt_backend": options.backend or "inductor",
        "opt_mode": options.mode or AUTO,
        "opt_dynamic": _tristate(options.dynamic),
        "opt_fullgraph": _tristate(options.fullgraph),
        "opt_dtype": options.dtype or "as written",
        "opt_seeds": int(options.seeds),
        "opt_seed": int(options.seed),
        "opt_backward": bool(options.backward),
        "opt_strict": bool(options.strict),
        **flags,
        "opt_fp64": bool(options.fp64_reference),
        "opt_recheck": bool(options.recheck_precision_casts),
        "opt_recheck_random": bool(options.recheck_random),
        "opt_factor": float(options.benign_factor),
        "opt_timeout": float(options.timeout_s),
        "opt_config": "\n".join(f"{k}={v!r}" for k, v in config.items()),
        "opt_triton_cpu": bool(options.triton_cpu),
    }


def fill(state: MutableMapping[str, Any], options: CheckOptions) -> None:
    """Set the widgets to these options (call from a callback, before the widgets are drawn)."""
    values = widget_values(options)
    if not options.triton_cpu:
        # a choice about what to see on this host, not a property of a case: loading one keeps it
        values.pop("opt_triton_cpu")
    state.update(values)


def init(state: MutableMapping[str, Any]) -> None:
    for key, value in DEFAULTS.items():
        state.setdefault(key, value)


def parse_config(text: str) -> dict[str, Any]:
    """KEY=VALUE lines (Python literals; anything else is a string), as `divergence check --config`."""
    config: dict[str, Any] = {}
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if "=" not in line:
            raise OptionsError(f"Inductor config line {n}: expected KEY=VALUE, got {line!r}")
        key, raw = line.split("=", 1)
        try:
            value = ast.literal_eval(raw.strip())
        except (ValueError, SyntaxError):
            value = raw.strip()
        config[key.strip()] = value
    return config


def options_from_state(state: MutableMapping[str, Any]) -> CheckOptions:
    """The CheckOptions the widgets stand for; raises OptionsError for a value the engine rejects."""
    config = parse_config(state["opt_config"])
    for name in FLAGS:
        if state[f"opt_{name}"]:
            config[name] = True
    return CheckOptions(
        device=None if state["opt_device"] == AUTO else state["opt_device"],
        backend=state["opt_backend"],
        mode=None if state["opt_mode"] == AUTO else state["opt_mode"],
        dynamic=_from_tristate(state["opt_dynamic"]),
        fullgraph=_from_tristate(state["opt_fullgraph"]),
        inductor_config=config,
        dtype=None if state["opt_dtype"] == "as written" else state["opt_dtype"],
        backward=bool(state["opt_backward"]),
        seeds=int(state["opt_seeds"]),
        seed=int(state["opt_seed"]),
        strict=bool(state["opt_strict"]),
        fp64_reference=bool(state["opt_fp64"]),
        recheck_precision_casts=bool(state["opt_recheck"]),
        recheck_random=bool(state["opt_recheck_random"]),
        benign_factor=float(state["opt_factor"]),
        timeout_s=float(state["opt_timeout"]),
        triton_cpu=bool(state["opt_triton_cpu"]),
    )


def render() -> None:
    """Draw the settings; read them back with options_from_state(st.session_state)."""
    init(st.session_state)
    st.markdown("**Settings**")
    # one widget per row: at 1024 px the settings column is ~230 px wide, too narrow for two selects side by side
    st.selectbox("Device", (AUTO, "cpu", "cuda"), key="opt_device", help="auto: CUDA when available, else the CPU")
    st.selectbox("Backend", BACKENDS, key="opt_backend")
    st.selectbox("Mode", MODES, key="opt_mode", help="auto: the snippet's compile_kwargs, else torch's default")
    st.selectbox("Dynamic shapes", TRISTATE, key="opt_dynamic")
    st.selectbox("Cast to", DTYPES, key="opt_dtype", help="cast the model and floating inputs first")
    st.number_input(
        "Seeds",
        min_value=1,
        max_value=16,
        step=1,
        key="opt_seeds",
        help="re-run with N input seeds and report the worst",
    )
    st.checkbox("Backward", key="opt_backward", help="also compare the gradients of the inputs and parameters")
    st.checkbox(
        "Strict: bit-exact",
        key="opt_strict",
        help="any bit difference, signed zeros and NaN payloads included, is divergent",
    )
    st.checkbox(
        "fallback_random",
        key="opt_fallback_random",
        help="Inductor config: compiled code draws random numbers with eager's RNG",
    )
    st.checkbox(
        "emulate_precision_casts",
        key="opt_emulate_precision_casts",
        help="Inductor config: round bf16/fp16 intermediates as eager does",
    )
    st.checkbox(
        "Triton on CPU",
        key="opt_triton_cpu",
        help=(
            "After the check, compile again with Inductor's Triton backend for CPU tensors in a separate worker, show"
            " those Triton kernels, and run them in Triton's interpreter: interpreted Triton on CPU, not GPU Triton."
        ),
    )
    with st.expander("More settings"):
        st.number_input("First seed", min_value=0, step=1, key="opt_seed")
        st.selectbox("Fullgraph", TRISTATE, key="opt_fullgraph")
        st.checkbox("fp64 reference", key="opt_fp64")
        st.checkbox("Re-check low-precision drift with emulate_precision_casts", key="opt_recheck")
        st.checkbox("Re-check a program that draws random numbers with fallback_random", key="opt_recheck_random")
        st.number_input(
            "Benign factor",
            min_value=1.0,
            step=0.5,
            key="opt_factor",
            help="how much further from fp64 than eager compiled may be and stay benign",
        )
        st.number_input("Timeout (s)", min_value=5.0, step=30.0, key="opt_timeout")
        st.text_area("Other Inductor config (KEY=VALUE per line)", key="opt_config", height=80)
