"""How a step of a check fails inside the child: `StageError`, and `stage_error`, which words a caught exception.

Apart from the runs because every step of the child raises or catches it: loading and compiling
(execution.py), each compared call (comparison.py), and the localization steps after a check (bisect.py,
intermediates.py).
"""

from __future__ import annotations

import os
import re
import traceback
from pathlib import Path

from engine.judge.verdicts import ErrorKind


class StageError(BaseException):
    """A stage of the check failed. A BaseException, so a snippet's `except Exception` cannot swallow it."""

    def __init__(self, kind: ErrorKind, message: str, tb: str = "") -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.tb = tb


_TORCH_ADVICE = re.compile(r"\s*Set TORCHDYNAMO_VERBOSE=1 for the internal stack trace.*?(?=\n\n|$)", re.S)


def stage_error(kind: ErrorKind, exc: BaseException, what: str) -> StageError:
    # torch's "Set TORCHDYNAMO_VERBOSE=1 ..." advice names settings of a worker the user does not run; the
    # traceback beside the message has the stack it offers
    text = _TORCH_ADVICE.sub("", f"{type(exc).__name__}: {exc}").rstrip()
    if isinstance(exc, MemoryError) or "can't allocate memory" in text or "out of memory" in text.lower():
        kind = ErrorKind.MEMORY
    if isinstance(exc, SystemExit):
        text = f"the snippet called sys.exit({exc.code!r})"
    return StageError(kind, f"{what}: {text}", user_traceback(exc))


_ENGINE_DIR = str(Path(__file__).resolve().parents[1]) + os.sep  # engine/: the harness that called the user's code


def user_traceback(exc: BaseException) -> str:
    """The exception's traceback without the frames of our own harness (their server paths mean nothing to the user),
    through its causes and contexts; torch's frames stay (a compile error's stack is torch's). Where nothing but
    our frames is left (a fault of our own), the traceback is kept whole."""
    whole = traceback.TracebackException.from_exception(exc)
    seen: set[int] = set()
    pending = [whole]
    while pending:
        part = pending.pop()
        if id(part) in seen:
            continue
        seen.add(id(part))
        kept = [frame for frame in part.stack if not frame.filename.startswith(_ENGINE_DIR)]
        if kept:
            part.stack = traceback.StackSummary.from_list(kept)
        pending.extend(p for p in (part.__cause__, part.__context__) if p is not None)
    return "".join(whole.format())
