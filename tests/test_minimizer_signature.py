"""The signature guards on real checks: a slip to dropout is refused, and a candidate runs as a fresh interpreter
runs it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from engine import CheckOptions, ErrorKind, Runner, Verdict
from minimizer.interestingness import DivergenceOracle, Outcome
from minimizer.syntax import canonical

SLIP = Path(__file__).resolve().parent / "snippets" / "minimize_dropout_slip.py"


@pytest.mark.slow
def test_a_slip_to_dropout_is_refused(runner: Runner, tmp_path: Path) -> None:
    source = SLIP.read_text()
    oracle = DivergenceOracle(runner, CheckOptions(device="cpu", timeout_s=120), tmp_path / "oracle")
    signature = oracle.establish(source)
    assert signature.first_op == "aten.div.Tensor_mode" and not signature.state.training_ops
    training = canonical(source.replace(".eval()", ""))
    slipped = canonical(training.replace("seconds // self.bucket", "seconds"))  # the floor division gone, dropout on
    # without `.eval()` the program still diverges as the user runs it (leaf `out`, symptom `value`, as before)
    assert (
        runner.check(training, CheckOptions(device="cpu", timeout_s=120), run_dir=tmp_path / "plain").verdict
        is Verdict.DIVERGENT
    )
    # refused twice over: dropout in training mode is another eval state, and candidates run with
    # fallback_random (the floor division survives it), under which the slipped program's masks agree
    outcomes = [outcome for outcome, _ in oracle.classify_many([training, slipped])]
    assert outcomes == [Outcome.OTHER_STATE, Outcome.NOT_DIVERGENT], outcomes


def test_a_candidate_is_loaded_as_a_fresh_interpreter_loads_it(runner: Runner, tmp_path: Path) -> None:
    # what a sequence edit made of `Callable[[], nn.Module]`: Python evaluates the annotation at class creation
    program = (
        "from dataclasses import dataclass\nfrom typing import Callable\nimport torch\n\n@dataclass\nclass Cfg:\n"
        "    make: Callable[()] = None\n\nfn = torch.neg\ninputs = (torch.ones(2),)\n"
    )
    fresh = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert fresh.returncode == 1 and "TypeError: Callable must be used as Callable[[arg, ...], result]" in fresh.stderr
    result = runner.check(program, CheckOptions(device="cpu"), run_dir=tmp_path / "check")
    assert (
        result.error is not None
        and result.error.kind is ErrorKind.SNIPPET
        and "Callable must be used" in result.error.message
    )
