"""Divergence Explorer's engine: run a PyTorch snippet eagerly and compiled, compare every element.

Importing this package does not import torch; checks run in a worker process.
"""

from engine.api import check_file, check_source, default_runner, load_result
from engine.judge.verdicts import ErrorKind, LeafKind, Symptom, Verdict, Witness
from engine.live import NotShippable, check
from engine.localization.localize import STEPS as LOCALIZATION_STEPS
from engine.localization.localize import Localization, localize_file, localize_source
from engine.localization.localize import localize as run_localization  # not `localize`: that name is the submodule
from engine.localization.probes import ProbeKind, ProbeOutcome, ProbeReport, ProbeStatus, probe_file, run_probes
from engine.localization.probes import probe_source as probe
from engine.options import CheckOptions, OptionsError
from engine.paths import home as data_dir
from engine.result import CheckResult, ErrorInfo, GeneratedCode, Kernel, LeafResult, OutputCode, SeedOutcome
from engine.runner import Job, Progress, Runner
from engine.snippet import SnippetError, SnippetStyle, detect_style

__all__ = [
    "LOCALIZATION_STEPS",
    "Localization",
    "ProbeKind",
    "ProbeOutcome",
    "ProbeReport",
    "ProbeStatus",
    "run_localization",
    "run_probes",
    "localize_file",
    "localize_source",
    "probe",
    "probe_file",
    "CheckOptions",
    "CheckResult",
    "ErrorInfo",
    "ErrorKind",
    "GeneratedCode",
    "Job",
    "Kernel",
    "NotShippable",
    "LeafKind",
    "LeafResult",
    "OptionsError",
    "OutputCode",
    "Progress",
    "Runner",
    "SeedOutcome",
    "SnippetError",
    "SnippetStyle",
    "Symptom",
    "Verdict",
    "Witness",
    "check",
    "check_file",
    "check_source",
    "data_dir",
    "default_runner",
    "detect_style",
    "load_result",
]
