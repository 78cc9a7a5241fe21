"""Soak: N checks in a row through one warm worker; prints leaked processes, temp files and memory growth.

    python benchmarks/soak.py [N]

A healthy run shows the same process count after every check, no new files in the temp directory, and
flat memory for the caller and the warm worker (figures every 10 checks).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

PROGRAMS = [
    "import torch\ndef fn(x):\n    return torch.relu(x) * 2 + 1\ninputs = (torch.randn(64, 64),)\n",
    "import torch\ndef fn(x):\n    return (x @ x.t()).sum(-1)\ndef inputs():\n    return (torch.randn(32, 32),)\n",
    # errors must not leak either
    "import torch\ndef fn(x):\n    raise ValueError('broken on purpose')\ninputs = (torch.randn(3),)\n",
]


def rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def descendants(pid: int) -> int:
    from engine.runner import descendants as _descendants

    return len(_descendants(pid)) - 1


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    # a temp directory of our own (the worker inherits it), so other programs' files on a shared /tmp don't count
    private_tmp = tempfile.mkdtemp(prefix="soak-tmp-")
    os.environ["TMPDIR"] = tempfile.tempdir = private_tmp
    with tempfile.TemporaryDirectory() as home:
        os.environ["DIVERGENCE_HOME"] = home
        from engine import CheckOptions, Runner

        tmp_before = set(os.listdir(tempfile.gettempdir()))
        with Runner() as runner:
            runner.start()
            worker = runner._proc.pid  # noqa: SLF001 (a benchmark may look inside)
            print(
                f"{'checks':>6} {'seconds':>8} {'worker children':>15} {'worker MB':>9} {'caller MB':>9}"
                f" {'new temp files':>14}"
            )
            start = time.perf_counter()
            verdicts: dict[str, int] = {}
            for i in range(1, n + 1):
                result = runner.check(PROGRAMS[i % len(PROGRAMS)], CheckOptions(timeout_s=120))
                verdicts[result.verdict.value] = verdicts.get(result.verdict.value, 0) + 1
                if i == 1 or i % 10 == 0:
                    new_tmp = len(set(os.listdir(tempfile.gettempdir())) - tmp_before)
                    print(
                        f"{i:6d} {time.perf_counter() - start:8.1f} {descendants(worker):15d} {rss_mb(worker):9.0f}"
                        f" {rss_mb(os.getpid()):9.0f} {new_tmp:14d}",
                        flush=True,
                    )
            # Inductor makes torchinductor_<user> once (its per-user scratch); anything else growing is a leak
            print(
                "new in the temp directory:", sorted(set(os.listdir(tempfile.gettempdir())) - tmp_before) or "nothing"
            )
        print("verdicts:", verdicts)


if __name__ == "__main__":
    main()
