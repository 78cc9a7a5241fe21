"""Bad snippets end with a clear error of the right kind, and the shared worker keeps serving."""

import pytest

from engine import ErrorKind, Verdict

TENSOR = "import torch\ninputs = (torch.randn(3),)\n"
CASES = {
    "syntax": ("import torch\ndef fn(x)\n    return x\n", ErrorKind.SNIPPET, "syntax error"),
    "missing_fn": ("import torch\ninputs = (torch.randn(3),)\n", ErrorKind.SNIPPET, "fits no snippet style"),
    "raises": (
        TENSOR + "def fn(x):\n    raise ValueError('boom from user code')\n",
        ErrorKind.EAGER,
        "boom from user code",
    ),
    "raises_on_load": (
        "import torch\nraise RuntimeError('bad module')\nfn = 1\ninputs = ()\n",
        ErrorKind.SNIPPET,
        "bad module",
    ),
    "sys_exit": ("import sys, torch\nsys.exit(4)\nfn = 1\ninputs = ()\n", ErrorKind.SNIPPET, "sys.exit(4)"),
    "os_exit": (
        "import os, torch\nprint('leaving now', flush=True)\nos._exit(3)\nfn = 1\ninputs = ()\n",
        ErrorKind.CRASH,
        "status 3",
    ),
    "segfault": (
        TENSOR + "import ctypes\ndef fn(x):\n    ctypes.string_at(0)\n    return x\n",
        ErrorKind.CRASH,
        "SIGSEGV",
    ),
    "huge_allocation": (TENSOR + "def fn(x):\n    return torch.empty(10**11)\n", ErrorKind.MEMORY, "allocate"),
    "endless_loop": (TENSOR + "def fn(x):\n    while True:\n        pass\n", ErrorKind.TIMEOUT, "wall-time limit"),
    "generator_output": (
        TENSOR + "def fn(x):\n    return (i for i in range(3))\n",
        ErrorKind.SNIPPET,
        "not an iterator",
    ),
    "inputs_not_tuple": (
        "import torch\ndef fn(x): return x\ndef inputs(): return torch.randn(3)\n",
        ErrorKind.SNIPPET,
        "wrap a single tensor",
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_snippet_reports_its_kind(check, name):
    source, kind, words = CASES[name]
    r = check(source, timeout_s=15 if name == "endless_loop" else 120, memory_limit_mb=4096)
    assert (r.verdict, r.error.kind) == (Verdict.ERROR, kind), r.explanation
    assert words in r.error.message, r.error.message
    assert r.exit_code == 2


def test_output_tail_is_captured_when_the_interpreter_dies(check):
    r = check(CASES["os_exit"][0])
    assert "leaving now" in r.error.output_tail


@pytest.mark.slow
def test_worker_still_serves_after_a_crash(check):
    assert check(CASES["segfault"][0]).error.kind is ErrorKind.CRASH
    assert check("import torch\ndef fn(x):\n    return x + 1\ninputs = (torch.ones(3),)\n").verdict is Verdict.MATCH
