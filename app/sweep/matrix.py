"""The option matrix of a sweep: `KEY=V1,V2` axes multiplied into one set of check options per combination.

Keys are the check options that change what is compiled or judged (device, backend, mode, dynamic,
fullgraph, dtype, strict, backward, seeds, derive: the inputs re-derived as a probe re-derives them, with
special values or in another layout; engine/child/derive.py) and `config.NAME` for any Inductor config entry;
`fallback_random` and `emulate_precision_casts` are shorthands for their `config.` forms, and `configs`
names presets of Inductor config entries users turn on (app.sweep.presets: freezing, cpp_wrapper, ...). `none` (or
`default`) leaves an option unset, so the program's own compile_kwargs or torch's default apply.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.sweep.presets import PRESETS, preset
from engine.options import BACKENDS, CAST_DTYPES, INPUT_PROBES, MODES, CheckOptions, OptionsError

CONFIG_PREFIX = "config."
CONFIG_SHORTHANDS = ("fallback_random", "emulate_precision_casts")
_UNSET = ("none", "default")
_TRUE, _FALSE = ("true", "on", "yes", "1"), ("false", "off", "no", "0")
# option -> (the values it takes, whether it may be unset); None: any value of its type
_CHOICES: dict[str, tuple[tuple[str, ...] | None, bool]] = {
    "device": (("cpu", "cuda"), True),
    "backend": (BACKENDS, True),
    "mode": (MODES, True),
    "dtype": (CAST_DTYPES, True),
    "dynamic": (None, True),
    "fullgraph": (None, True),
    "strict": (None, False),
    "backward": (None, False),
    "seeds": (None, False),
    "derive": (INPUT_PROBES, True),
    "configs": (tuple(p.name for p in PRESETS), False),
}
_OPTION_NAMES = {"derive": "derive_inputs"}  # a matrix key -> its CheckOptions field, where they differ
KEYS = tuple(_CHOICES) + CONFIG_SHORTHANDS


class MatrixError(ValueError):
    """An axis of the matrix names an unknown option or a value it cannot take."""


@dataclass(frozen=True)
class Axis:
    key: str  # an option name, or config.NAME
    values: tuple[Any, ...]


@dataclass(frozen=True)
class Cell:
    """One combination: the values set (axis order kept) and a label that names them."""

    values: tuple[tuple[str, Any], ...]

    @property
    def label(self) -> str:
        return " ".join(f"{key}={_show(value)}" for key, value in self.values)

    def apply(self, options: Mapping[str, Any]) -> CheckOptions:
        """These values over a program's base options (a CheckOptions JSON mapping)."""
        data = dict(options)
        config = dict(data.get("inductor_config", {}))
        for key, value in self.values:
            if key.startswith(CONFIG_PREFIX):
                config[key[len(CONFIG_PREFIX) :]] = value
            elif key == "configs":
                config.update(preset(value).entries)
            else:
                data[_OPTION_NAMES.get(key, key)] = value
        data["inductor_config"] = config
        try:
            return CheckOptions.parse(data)
        except (OptionsError, TypeError) as exc:
            raise MatrixError(f"{self.label or 'the base options'}: {exc}") from None


def parse_axis(text: str) -> Axis:
    """`backend=inductor,aot_eager` -> Axis('backend', ('inductor', 'aot_eager'))."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key or not raw.strip():
        raise MatrixError(f"--matrix expects KEY=V1,V2,..., got {text!r}")
    if key in CONFIG_SHORTHANDS:
        key = CONFIG_PREFIX + key
    if key.startswith(CONFIG_PREFIX):
        if not key[len(CONFIG_PREFIX) :]:
            raise MatrixError(
                f"--matrix {text!r}: config. needs an Inductor config name, e.g. config.max_autotune=True,False"
            )
        values = tuple(_literal(v.strip()) for v in raw.split(","))
    elif key in _CHOICES:
        values = tuple(_option_value(key, v.strip()) for v in raw.split(","))
    else:
        raise MatrixError(
            f"--matrix {text!r}: unknown option {key!r}; use one of {', '.join(KEYS)}, or config.NAME for an Inductor"
            " config entry"
        )
    unique = tuple(dict.fromkeys(values))  # a value given twice would make two jobs with one key
    return Axis(key, unique)


def cells(axes: Sequence[Axis]) -> list[Cell]:
    """Every combination, the first axis varying slowest; one empty cell without axes."""
    keys = [a.key for a in axes]
    if len(set(keys)) != len(keys):
        raise MatrixError(
            f"--matrix names {', '.join(sorted({k for k in keys if keys.count(k) > 1}))} twice; give all values in one"
            " KEY=V1,V2"
        )
    return [Cell(tuple(zip(keys, combo, strict=True))) for combo in itertools.product(*(a.values for a in axes))]


def _option_value(key: str, raw: str) -> Any:
    choices, unsettable = _CHOICES[key]
    low = raw.lower()
    if low in _UNSET and unsettable:
        return None
    if key == "seeds":
        try:
            value = int(raw)
        except ValueError:
            raise MatrixError(f"--matrix seeds={raw!r}: expected a whole number") from None
        if value < 1:
            raise MatrixError("--matrix seeds: at least 1")
        return value
    if choices is None:  # a boolean
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise MatrixError(f"--matrix {key}={raw!r}: expected true or false{' or none' if unsettable else ''}")
    if raw not in choices:
        raise MatrixError(
            f"--matrix {key}={raw!r}: expected one of {', '.join(choices)}{' or none' if unsettable else ''}"
        )
    return raw


def _literal(raw: str) -> Any:
    try:
        return ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        return raw


def _show(value: Any) -> str:
    return "none" if value is None else str(value)
