"""Argument types that several `divergence` subcommands share."""

from __future__ import annotations

import argparse
import ast
from typing import Any


def config_pair(text: str) -> tuple[str, Any]:
    """`KEY=VALUE` of an Inductor config override; VALUE is a Python literal when it parses as one."""
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    key, raw = text.split("=", 1)
    try:
        value = ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        value = raw
    return key.strip(), value
