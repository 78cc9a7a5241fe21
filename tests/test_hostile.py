"""A catalog of hostile snippets: each ends with a clear error of the right kind, and the next check works.

The quick ones of the same family (syntax error, raise, sys.exit, os._exit, segfault, endless loop, memory
bomb, generator output) are in test_bad_input.py; these are about the sandbox.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from engine import ErrorKind, Verdict

TENSOR = "import torch\ninputs = (torch.randn(3),)\n"
SIMPLE = "import torch\ndef fn(x):\n    return x + 1\ninputs = (torch.ones(3),)\n"


def expect(r, kind: ErrorKind, *words: str) -> None:
    assert (r.verdict, r.error.kind) == (Verdict.ERROR, kind), r.explanation
    for word in words:
        assert word in r.error.message, r.error.message


def test_import_error(check):
    expect(
        check("import torch\nimport no_such_module_xyz\nfn = 1\ninputs = ()\n"),
        ErrorKind.SNIPPET,
        "No module named 'no_such_module_xyz'",
    )


@pytest.mark.slow
def test_fork_bomb_is_capped_and_cleaned_up(check):
    bomb = TENSOR + "import os\ndef fn(x):\n    while True:\n        os.fork()\n"
    r = check(bomb, timeout_s=60)
    assert r.verdict is Verdict.ERROR and r.error.kind in (ErrorKind.PROCESSES, ErrorKind.EAGER), r.explanation
    assert check(SIMPLE).verdict is Verdict.MATCH


def test_printing_100_mb_stops_at_the_output_limit(check):
    flood = (
        TENSOR + "import sys\ndef fn(x):\n    line = 'x' * 1023 + '\\n'\n    for _ in range(100 * 1024):\n       "
        " sys.stdout.write(line)\n    return x\n"
    )
    r = check(flood, max_output_mb=8, timeout_s=120)
    if r.verdict is Verdict.ERROR:
        expect(r, ErrorKind.OUTPUT, "printed more than 8 MB")
    else:  # finished printing before the watchdog's next look: then the log is still bounded by the file limit
        assert Path(r.run_dir, "output.log").stat().st_size <= 256 * 1024 * 1024


def test_huge_output_tensor_hits_the_memory_limit(check):
    expect(check(TENSOR + "def fn(x):\n    return torch.ones(2**31)\n", memory_limit_mb=4096), ErrorKind.MEMORY)


def test_writing_outside_the_run_directory_is_refused(check, tmp_path):
    target = Path("/tmp") / f"divergence-escape-{uuid.uuid4().hex}"
    r = check(TENSOR + f"def fn(x):\n    open({str(target)!r}, 'w').write('escaped')\n    return x\n")
    expect(r, ErrorKind.EAGER, "Permission denied")
    assert not target.exists()


def test_environment_secrets_are_not_visible(check, monkeypatch):
    # the worker inherits the environment it was started with; the child's is scrubbed to an allow-list
    assert "DIVERGENCE_TEST_SECRET" not in os.environ
    r = check(
        TENSOR + "import os\ndef fn(x):\n    return x + len(os.environ.get('AWS_SECRET_ACCESS_KEY', '') +"
        " os.environ.get('GITHUB_TOKEN', ''))\n"
    )
    assert r.verdict is Verdict.MATCH  # nothing to read: both sides add zero


def test_network_is_unreachable(check):
    r = check(
        TENSOR + "import socket\ndef fn(x):\n    socket.create_connection(('127.0.0.1', 22), timeout=2)\n    return x\n"
    )
    if any("network not isolated" in note for note in r.notes):
        pytest.skip("this host refuses new network namespaces (not root)")
    assert r.verdict is Verdict.ERROR and r.error.kind is ErrorKind.EAGER
    assert "Network is unreachable" in r.error.message or "Connection refused" in r.error.message


def test_non_tensor_output_is_compared_by_type_not_refused(check):
    r = check(TENSOR + "def fn(x):\n    return {'a': object(), 'x': x + 1}\n")
    assert r.verdict is Verdict.MATCH, r.explanation
    assert r.leaf("out['a']").eager_value == "<builtins.object object>"


def test_a_backend_that_raises_is_a_compile_error(check):
    broken = (
        TENSOR + "def fn(x):\n    return x * 2\ndef backend(gm, example_inputs):\n    raise RuntimeError('only when"
        " compiled')\ncompile_kwargs = {'backend': backend}\n"
    )
    expect(check(broken), ErrorKind.COMPILE, "only when compiled")


@pytest.mark.parametrize("signal_name", ["SIGABRT"])
def test_abort_in_native_code(check, signal_name):
    expect(check(TENSOR + "import os\ndef fn(x):\n    os.abort()\n"), ErrorKind.CRASH, signal_name)


def test_the_server_still_serves_after_the_catalog(check):
    assert check(SIMPLE).verdict is Verdict.MATCH
