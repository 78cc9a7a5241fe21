"""One check, start to finish, inside a worker process: load, run eager and compiled, compare, judge.

Never imported by the caller's process: it imports torch and runs user code.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import platform
import re
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from engine import arrays as stored_arrays
from engine.child import casting, inside
from engine.child.capture import capture_generated_code
from engine.child.comparison import CallOutcome, CallSettings, compare_call
from engine.child.compile_progress import compile_progress
from engine.child.errors import StageError, stage_error
from engine.child.leaf_builder import StoredLeaf
from engine.child.seeding import seed_everything
from engine.judge import family, mechanisms, oracle
from engine.judge.metrics import host_array
from engine.judge.verdicts import ErrorKind, Symptom, Verdict, worst
from engine.nodes import InsideReport
from engine.options import CheckOptions
from engine.result import TRACE_DIR, CheckResult, ErrorInfo, GeneratedCode, LeafResult, ScalarRounding, SeedOutcome
from engine.snippet import SnippetError, SnippetStyle, detect_style, execute, program_from_namespace

_CAST = {"bf16": torch.bfloat16, "fp16": torch.float16}
Emit = Callable[..., None]  # emit(stage) or emit(stage, detail): the live stage, and what it is doing now


@dataclasses.dataclass
class Run:
    """The mutable bookkeeping of one check."""

    options: CheckOptions
    source: str
    filename: str
    emit_event: Emit
    device: str = "cpu"
    style: SnippetStyle | None = None
    stage: str = "loading"
    stage_start: float = dataclasses.field(default_factory=time.monotonic)
    stage_seconds: dict[str, float] = dataclasses.field(default_factory=dict)
    code: GeneratedCode = dataclasses.field(default_factory=GeneratedCode)  # kept even when a later stage fails
    namespace: dict[str, Any] | None = None  # live objects handed over in-process, instead of executing source
    trace_dir: Path | None = None
    compiled_failure: str = "the compiled program raised (eager did not)"
    notes: list[str] = dataclasses.field(default_factory=list)  # shared by every stage, kept on failure too
    owner_pid: int = dataclasses.field(default_factory=os.getpid)
    # the program as loaded for the check, while its modules' state is as loaded:
    # a re-check reuses it instead of executing the snippet again, which cost a second copy of the model and its
    # build time (+1.9 GB and 14 s for a 1.1B Llama). Python-level state the snippet keeps (a call counter) is
    # not restored; the check's own runs see it advance between eager and compiled too.
    loaded: Any = None  # engine.snippet's Program
    inside: Any = None  # engine.child.inside.Capture while the check judges inside the program

    def guard_fork(self) -> None:
        """A process the snippet forked that wandered back into the harness must not report or write."""
        if os.getpid() != self.owner_pid:
            os._exit(0)

    def emit(self, stage: str) -> None:
        self.guard_fork()
        now = time.monotonic()
        self.stage_seconds[self.stage] = self.stage_seconds.get(self.stage, 0.0) + now - self.stage_start
        self.stage, self.stage_start = stage, now
        self.emit_event(stage)

    def detail(self, text: str) -> None:
        """What the current stage is doing now (engine/child/compile_progress.py): shown live, not timed apart."""
        self.guard_fork()
        self.emit_event(self.stage, text)

    def settings(self) -> CallSettings:
        o = self.options
        settings = CallSettings(
            strict=o.strict,
            factor=o.benign_factor,
            noise_ulps=o.noise_ulps,
            backward=o.backward,
            fp64_reference=o.fp64_reference,
            max_stored_elements=o.max_stored_elements,
            emit=self.emit,
            notes=self.notes,
        )
        settings.compiled_failure = self.compiled_failure
        return settings


@dataclasses.dataclass(frozen=True)
class _Checked:
    """A check's judged leaves once every seed ran and every re-check settled, and what the result keeps of it."""

    leaves: list[LeafResult]
    seeds: list[SeedOutcome]
    arrays: dict[str, StoredLeaf]
    outcomes: list[tuple[int, list[CallOutcome]]]
    code: GeneratedCode
    inside: InsideReport

    def verdict(self) -> tuple[Verdict, str]:
        """The check's verdict and its sentence: the outputs', unless a value inside the program diverges."""
        verdict = worst([leaf.verdict for leaf in self.leaves])
        explanation = oracle.summarize(verdict, [(leaf.name, leaf.verdict, leaf.explanation) for leaf in self.leaves])
        found = self.inside
        if found is not None and found.first is not None and verdict.severity < Verdict.DIVERGENT.severity:
            # a value inside the program diverges: the outputs may hide it (a pooled prediction), the bug is there
            verdict = Verdict.DIVERGENT
            explanation = f"divergent inside the program: {found.explanation}; the outputs: {explanation}"
        if len(self.seeds) > 1:
            explanation += f"; over {len(self.seeds)} seeds: " + ", ".join(
                f"{s.seed}: {s.verdict.value}" for s in self.seeds
            )
        return verdict, explanation


def run_check(
    source: str,
    filename: str,
    options: CheckOptions,
    run_dir: Path,
    emit: Emit,
    namespace: dict[str, Any] | None = None,
    notes: tuple[str, ...] = (),
    after: Callable[[Run, CheckResult], None] | None = None,
) -> CheckResult:
    """Check a snippet and write result.json and its arrays (engine.arrays) into run_dir. Never raises for user errors.

    `namespace` replaces executing the source (the explicit in-process mode of `engine.check`).
    `after` runs once the result is saved, in the same process and state (a localization step).
    """
    run = Run(
        options, source, filename, emit, namespace=namespace, trace_dir=run_dir / TRACE_DIR if options.trace else None
    )
    run.notes.extend(notes)
    run.emit("loading")
    try:
        run.style = detect_style(source, filename)
        run.device = _pick_device(options)
        if options.triton_cpu:
            _enable_triton_cpu(run)
        with inductor_config_patch(options.inductor_config):
            checked = _check(run)
    except SnippetError as exc:
        return _finish_error(run, run_dir, ErrorInfo(ErrorKind.SNIPPET, str(exc)), run.code)
    except StageError as exc:
        return _finish_error(run, run_dir, ErrorInfo(exc.kind, exc.message, exc.tb), run.code)
    except _OptionsProblem as exc:
        return _finish_error(run, run_dir, ErrorInfo(ErrorKind.OPTIONS, str(exc)), run.code)
    verdict, explanation = checked.verdict()
    if checked.arrays:
        run.emit("saving")
        _save_arrays(run_dir, checked.arrays)
    run.emit("done")
    result = CheckResult(
        verdict=verdict,
        explanation=explanation,
        options=options,
        style=run.style.value if run.style else None,
        leaves=tuple(checked.leaves),
        code=checked.code,
        seeds=tuple(checked.seeds),
        notes=tuple(run.notes),
        environment=environment(run.device),
        stage_seconds=run.stage_seconds,
        peak_rss_mb=peak_rss_mb(),
        peak_device_mb=peak_device_mb(run.device),
        run_dir=str(run_dir),
        scalar_roundings=_scalar_roundings(checked.outcomes),
        inside=checked.inside,
    )
    run.guard_fork()
    result.save(run_dir)
    if after is not None and result.verdict is not Verdict.ERROR:  # nothing to localize in an error
        after(run, result)
    return result


def _check(run: Run) -> _Checked:
    """Every seed compared, the buffers inside judged, one false-alarm budget over both, the re-checks."""
    skipped = _inside_skipped(run.options)
    if skipped is None:
        run.inside = inside.Capture(run.filename, run.options.inside_max_mb << 20)
    outcomes, code = _check_all_seeds(run)
    judged = _judge_inside(run, outcomes, skipped)
    # one false-alarm budget over the outputs of every seed and call and the buffers judged inside
    decision = budget_decision(outcomes, judged.items if isinstance(judged, inside.Judged) else ())
    outcomes = settle_budget(outcomes, decision=decision)
    if isinstance(judged, inside.Judged):
        inside.settle(judged, decision)
    leaves, seeds, arrays = _pick_worst_seed(outcomes)
    leaves, seeds = _rechecked(run, outcomes, leaves, seeds, judged, decision)
    found = _finish_inside(run, judged, outcomes)
    return _Checked(leaves, seeds, arrays, outcomes, code, found)


def _rechecked(
    run: Run,
    outcomes: list[tuple[int, list[CallOutcome]]],
    leaves: list[LeafResult],
    seeds: list[SeedOutcome],
    judged: inside.Judged | InsideReport,
    decision: family.Decision,
) -> tuple[list[LeafResult], list[SeedOutcome]]:
    """The leaves (and the seeds' summary) after the re-checks that name a mechanism: random numbers drawn by
    Inductor's generator, then bf16/fp16 values kept in fp32 (with the buffers inside that may be that)."""
    options = run.options
    rng_config: dict[str, Any] = {}
    paths = _Paths.of(outcomes, seeds)
    if _wants_rng_recheck(options, outcomes, leaves):
        leaves = _recheck(run, leaves, seeds, RNG_RECHECK, evidence=paths.draws)
        seeds = _resummarize_worst_seed(seeds, leaves)
        rng_config = dict(RNG_RECHECK.config)  # masks must agree for a precision re-check to see anything
    # nodes that differ only where compiled keeps a bf16/fp16 value in fp32 are looked at under emulation too
    inside_again = (
        inside.Capture(run.filename, options.inside_max_mb << 20)
        if isinstance(judged, inside.Judged) and inside.may_be_precision(judged)
        else None
    )
    if _wants_precision_recheck(options, outcomes, leaves) or inside_again is not None:
        paths.graph_trips = mechanisms.round_trips(run.code.fx_graphs)
        leaves = _recheck(
            run,
            leaves,
            seeds,
            PRECISION_RECHECK,
            rng_config,
            paths.round_trips,
            unsaid=_same_compile_as_minimizer(options, outcomes),
            capture=inside_again,
        )
        seeds = _resummarize_worst_seed(seeds, leaves)
        if inside_again is not None and isinstance(judged, inside.Judged):
            _explain_inside(run, judged, inside_again, outcomes, decision)
    return leaves, seeds


def _inside_skipped(options: CheckOptions) -> str | None:
    """Why the check does not judge inside the program, or None when it does."""
    if not options.inside:
        return "turned off (inside=False, --no-inside)"
    if options.backend not in (None, "inductor"):
        return f"the backend is {options.backend}: only Inductor's code reports its buffers"
    if options.strict:
        return "--strict: every bit of the outputs is judged already"
    if options.triton_cpu:
        return "Triton on CPU runs the kernels in its interpreter"
    if options.localize is not None:
        return "a localization step runs instead"
    import torch._inductor.config as inductor_config

    # the hooks are Python lines in the wrapper: a C++ wrapper with them does not compile (checked on torch 2.13)
    if options.inductor_config.get("cpp_wrapper") or inductor_config.cpp_wrapper:
        return "cpp_wrapper: Inductor's intermediate hooks exist only in the Python wrapper"
    return None


def _judge_inside(
    run: Run, outcomes: list[tuple[int, list[CallOutcome]]], skipped: str | None
) -> inside.Judged | InsideReport:
    """The inside stage: every buffer the compiled code stored in its first call, judged (engine/child/inside.py)."""
    if skipped is not None:
        return InsideReport("skipped", f"not judged inside: {skipped}")
    capture, run.inside = run.inside, None
    late = _past_time_budget(run, run.stage_seconds.get("eager", 0.0) + run.stage_seconds.get("fp64 reference", 0.0))
    if late is not None:
        return InsideReport("skipped", f"not judged inside: {late}")
    stored = sum(len(g.values) for g in capture.graphs)
    if stored:
        run.emit("inside")
        run.detail(f"{stored} buffers compiled code stored, against the same graph run eagerly and in float64")
    try:
        return inside.judge(
            capture,
            run.options,
            _scalar_roundings(outcomes),
            run.code.output_code,
            undefined=_met_uninitialized(outcomes),
        )
    except Exception as exc:  # best effort, like the localization: the outputs' verdict stands
        return InsideReport("failed", f"judging inside failed: {type(exc).__name__}: {str(exc)[:300]}")


def _past_time_budget(run: Run, runs: float) -> str | None:
    """Why the inside stage would not finish in the check's time limit: it costs about one eager and one float64
    run of the graph (and its float32 twin), measured here by the check's own eager and fp64 stages; the result
    must still be written after it."""
    elapsed = sum(run.stage_seconds.values()) + time.monotonic() - run.stage_start
    needed = 2.0 * runs + 30.0
    if elapsed + needed > run.options.timeout_s:
        return (
            f"{elapsed:.0f} s of the check's {run.options.timeout_s:.0f} s time limit are spent and it needs about "
            f"{needed:.0f} s more (--timeout allows more)"
        )
    return None


def _met_uninitialized(outcomes: list[tuple[int, list[CallOutcome]]]) -> bool:
    return any(leaf.unwritten for _, calls in outcomes for call in calls for leaf in call.leaves)


def _explain_inside(
    run: Run,
    judged: inside.Judged,
    again: inside.Capture,
    outcomes: list[tuple[int, list[CallOutcome]]],
    decision: family.Decision,
) -> None:
    """The diverging nodes judged once more in the precision re-check's compile: those that no longer diverge, with
    an unrounded bf16/fp16 value on their path, are precision-cast (engine/child/inside.py)."""
    run.emit("inside")
    run.detail("the diverging buffers again, compiled with emulate_precision_casts")
    try:
        rejudged = inside.judge(
            again,
            run.options,
            _scalar_roundings(outcomes),
            run.code.output_code,
            undefined=_met_uninitialized(outcomes),
        )
        inside.settle(rejudged, decision)  # the same shares of the budget as the check's own judgement
        inside.explain_by_precision(judged, rejudged)
    except Exception as exc:  # best effort: the nodes keep their verdicts
        judged.notes.append(f"the inside re-check under emulate_precision_casts failed: {type(exc).__name__}: {exc}")


def _finish_inside(
    run: Run, judged: inside.Judged | InsideReport, outcomes: list[tuple[int, list[CallOutcome]]]
) -> InsideReport:
    if isinstance(judged, InsideReport):
        return judged
    if judged.diffs and _past_time_budget(run, 30.0) is not None:  # a compile of one kernel: leave it out
        judged.notes.append("the values inside the first diverging buffer's kernel were not exposed: no time left")
        return inside.finish(judged, run.options, _scalar_roundings(outcomes), narrow=False)
    if judged.diffs:
        first = judged.diffs[0]
        run.emit("inside")
        run.detail(
            f"{first.node} diverges: exposing the values inside {first.kernel or 'its kernel'} (a small compile)"
        )
    try:
        return inside.finish(judged, run.options, _scalar_roundings(outcomes))
    except Exception as exc:  # best effort, like the localization: the outputs' verdict stands
        return InsideReport("failed", f"judging inside failed: {type(exc).__name__}: {str(exc)[:300]}")


def _derived(run: Run, args: Any, seed: int) -> Any:
    """A probe's inputs: the snippet's own, re-derived (special values, layouts, sizes) from `seed`."""
    if run.options.derive_inputs is None:
        return args
    from engine.child.derive import NotApplicable, derive
    from engine.protocol import NOT_APPLICABLE

    try:
        return derive(run.options.derive_inputs, args, seed)
    except NotApplicable as exc:
        raise StageError(ErrorKind.OPTIONS, NOT_APPLICABLE + str(exc)) from None


def _compare_calls(
    run: Run,
    fn: Any,
    compiled: Any,
    args: Any,
    make_inputs: Callable[[], Any],
    seed: int,
    dtype: Any,
    settings: CallSettings,
) -> list[CallOutcome]:
    """Call 0 on `args`; with `calls` > 1, call k on the inputs of seed + k, the compiled callable and any
    state it changed carried over: guards, caches and mutated state only show on a re-execution."""
    calls = run.options.calls
    outcome, _ = compare_call(fn, compiled, args, {}, seed, settings, prefix="call0: " if calls > 1 else "")
    outcomes = [outcome]
    for k in range(1, calls):
        try:
            seed_everything(seed + k)
            args_k = _derived(run, casting.move(make_inputs(), run.device, dtype), seed + k)
        except (SnippetError, StageError):
            raise
        except BaseException as exc:
            raise stage_error(ErrorKind.SNIPPET, exc, "making the inputs raised") from None
        outcomes.append(compare_call(fn, compiled, args_k, {}, seed + k, settings, prefix=f"call{k}: ")[0])
    return outcomes


class _OptionsProblem(Exception):
    pass


def _enable_triton_cpu(run: Run) -> None:
    from engine.child import triton_cpu

    reason = triton_cpu.unavailable_reason()
    if reason is not None:
        raise _OptionsProblem(f"Triton on CPU is off: {reason}")
    run.device = "cpu"
    triton_cpu.enable(interpret=True)
    run.compiled_failure = "Triton's interpreter could not run the generated kernels (their source is kept)"


def _interpreter_fits(run: Run, args: Any, settings: CallSettings) -> None:
    """Watch the interpreted launches: name each kernel as it starts, and generate only the source above the
    size limit or once the time left for interpreting is spent."""
    from engine.child import triton_cpu
    from engine.child.leaves import tensors_of

    total = sum(t.numel() for _, t in tensors_of(args, "args"))
    limit = run.options.triton_interpret_max_elements
    refuse = None
    if total > limit:
        refuse = (
            f"Triton source only: the inputs hold {total:,} elements, above the interpreter's limit of {limit:,} "
            "(triton_interpret_max_elements); the kernels were generated but not run, so there is no interpreted "
            "result to compare"
        )
    elapsed = sum(run.stage_seconds.values()) + time.monotonic() - run.stage_start
    budget = run.options.timeout_s - elapsed - 30  # left for the fp64 reference, the comparison and writing the result
    triton_cpu.watch_launches(
        lambda name: run.emit(f"interpreting {name}"),
        refuse,
        budget,
        lambda message, timed_out: StageError(ErrorKind.TIMEOUT if timed_out else ErrorKind.OPTIONS, message),
    )


def _pick_device(options: CheckOptions) -> str:
    if options.device == "cuda" and not torch.cuda.is_available():
        raise _OptionsProblem("device cuda was requested, but CUDA is not available on this host")
    return options.device or ("cuda" if torch.cuda.is_available() else "cpu")


@contextlib.contextmanager
def inductor_config_patch(overrides: Any) -> Iterator[None]:
    import torch._inductor.config as inductor_config

    patch = inductor_config.patch(dict(overrides))
    try:
        patch.__enter__()
    except (AttributeError, KeyError) as exc:
        raise _OptionsProblem(f"unknown Inductor config option: {exc}") from None
    try:
        yield
    finally:
        patch.__exit__(None, None, None)


def _check_all_seeds(run: Run) -> tuple[list[tuple[int, list[CallOutcome]]], GeneratedCode]:
    settings = run.settings()
    seeds = [run.options.seed + i for i in range(run.options.seeds)]
    program = (run.filename, run.source) if run.options.provenance and run.namespace is None else (None, None)
    watching = run.inside.active() if run.inside is not None else contextlib.nullcontext()
    with capture_generated_code(run.trace_dir, *program) as captured, compile_progress(run.detail), watching:
        try:
            if run.style is SnippetStyle.REPRO:
                outcomes = [(seed, run_repro(run, seed, settings)) for seed in seeds]
            else:
                outcomes = run_program(run, seeds, settings)
        finally:
            run.code = captured.result()
    return outcomes, run.code


def _load_namespace(run: Run, seed: int, as_main: bool) -> dict[str, Any]:
    if run.namespace is not None:
        return run.namespace
    seed_everything(seed)
    try:
        return execute(run.source, run.filename, as_main=as_main)
    except (StageError, SnippetError):
        raise
    except BaseException as exc:
        raise stage_error(ErrorKind.SNIPPET, exc, "the snippet raised while loading") from None


def run_program(run: Run, seeds: list[int], settings: CallSettings) -> list[tuple[int, list[CallOutcome]]]:
    """fn-inputs and KernelBench styles: compile once, call once per seed."""
    assert run.style is not None
    program, run.loaded = run.loaded, None
    if program is None:
        ns = _load_namespace(run, seeds[0], as_main=False)
        try:
            program = program_from_namespace(ns, run.style)
        except SnippetError:
            raise
        except BaseException as exc:
            raise stage_error(ErrorKind.SNIPPET, exc, "building the model raised") from None
    dtype = _CAST.get(run.options.dtype or "")
    casting.move_program(program.fn, run.device, dtype)
    kwargs = run.options.compile_kwargs(program.compile_kwargs)
    try:
        compiled = torch.compile(program.fn, **kwargs)
    except Exception as exc:
        raise stage_error(ErrorKind.COMPILE, exc, "torch.compile rejected the program") from None
    results = []
    for seed in seeds:
        if seed == seeds[0] or not program.inputs_are_fixed:
            seed_everything(seed)
            make_inputs = program.make_inputs
        else:  # a module-level tuple: only a fresh execution draws new values
            make_inputs = program_from_namespace(_load_namespace(run, seed, as_main=False), run.style).make_inputs
        try:
            seed_everything(seed)
            args = casting.move(make_inputs(), run.device, dtype)
        except (SnippetError, StageError):
            raise
        except BaseException as exc:
            raise stage_error(ErrorKind.SNIPPET, exc, "making the inputs raised") from None
        if run.options.triton_cpu:
            _interpreter_fits(run, args, settings)
        args = _derived(run, args, seed)
        results.append((seed, _compare_calls(run, program.fn, compiled, args, make_inputs, seed, dtype, settings)))
    if not settings.state_changed and not program.inputs_are_fixed and run.namespace is None:
        # no call changed a parameter or buffer, and the inputs are made afresh (a module-level tuple may have
        # been mutated): the program is as loaded, and a re-check may start from it
        run.loaded = program
    return results


def run_repro(run: Run, seed: int, settings: CallSettings) -> list[CallOutcome]:
    """A verbatim repro: run the script with torch.compile intercepted; every compiled call is compared."""
    outcomes: list[CallOutcome] = []
    real_compile = torch.compile
    options = run.options

    def checked(compiled: Callable[..., Any], original: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            args = _derived(run, args, seed + len(outcomes))
            outcome, out = compare_call(
                original, compiled, args, kwargs, seed + len(outcomes), settings, prefix=f"call{len(outcomes)}: "
            )
            outcomes.append(outcome)
            return out

        return _CheckedCallable(compiled, call)

    def intercept(model: Any = None, **kwargs: Any) -> Any:
        if model is None:
            return lambda m: intercept(m, **kwargs)
        compiled = real_compile(model, **options.compile_kwargs(kwargs))
        return checked(compiled, model)

    if options.dtype or options.device:
        settings.note("device and dtype options do not apply to a verbatim repro: the script chooses them")
    if options.backward:
        settings.note("--backward does not apply to a verbatim repro: it drives its own calls")
        settings.backward = False
    settings.output_goes_on = True  # the script carries on with compiled's output (its graph included)
    torch.compile = intercept  # type: ignore[assignment]
    try:
        _load_namespace(run, seed, as_main=True)
    except StageError as exc:
        if exc.kind is not ErrorKind.SNIPPET or not outcomes:
            raise
        settings.note(
            f"the script raised after {len(outcomes)} compared call(s); shown: those calls. "
            f"{exc.message.splitlines()[0][:300]}"
        )
    finally:
        torch.compile = real_compile  # type: ignore[assignment]
    if not outcomes:
        raise SnippetError(
            f"{run.filename} calls torch.compile but never called the compiled function, so there was nothing to "
            "compare"
        )
    return outcomes


class _CheckedCallable:
    """Stands in for what torch.compile returned: calls are checked, attributes reach the compiled object."""

    def __init__(self, compiled: Any, call: Callable[..., Any]) -> None:
        self.__dict__["_compiled"] = compiled
        self.__dict__["_call"] = call

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._call(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["_compiled"], name)


def budget_decision(
    outcomes: list[tuple[int, list[CallOutcome]]], inside: Sequence[family.Item] = ()
) -> family.Decision:
    """The check-level decision (engine/judge/family.py) over every leaf of every seed and call, and `inside`: the
    intermediates judged in the check (engine/child/inside.py), which share the budget."""
    items = [
        family.Item(_item_name(seed, i, leaf.name), family.Stage.OUTPUT, leaf.tests)
        for seed, calls in outcomes
        for i, call in enumerate(calls)
        for leaf in call.leaves
    ]
    return family.decide([*items, *inside])


def settle_budget(
    outcomes: list[tuple[int, list[CallOutcome]]],
    inside: Sequence[family.Item] = (),
    decision: family.Decision | None = None,
) -> list[tuple[int, list[CallOutcome]]]:
    """The check's false-alarm budget over every value it judged (engine/judge/family.py): each leaf of each seed
    and call judged alone was given the whole budget; a leaf whose element tests do not survive their share of it
    takes its fallback verdict, and says so. `inside`: the intermediates judged in the check, which share it;
    `decision`: the decision already taken over both (budget_decision)."""
    decision = decision or budget_decision(outcomes, inside)
    settled = []
    for seed, calls in outcomes:
        new_calls = []
        for i, call in enumerate(calls):
            leaves = [_settle_leaf(leaf, decision, _item_name(seed, i, leaf.name)) for leaf in call.leaves]
            new_calls.append(dataclasses.replace(call, leaves=leaves))
        settled.append((seed, new_calls))
    return settled


def _item_name(seed: int, call: int, leaf: str) -> str:
    return f"seed {seed} call {call}: {leaf}"


def _settle_leaf(leaf: LeafResult, decision: family.Decision, name: str) -> LeafResult:
    if leaf.fallback is None or decision.fired(name):
        return leaf
    share = decision.share(name)
    strongest = min((t for t in leaf.tests if t.effect), key=lambda t: t.log10p, default=None)
    why = (
        f"; the element rule's {strongest.name} test (log10 p <= {strongest.log10p:.1f}) is within what chance gives "
        f"at this value's share of the check's false-alarm budget ({share:.2g} of {decision.budget:g})"
        if strongest is not None
        else ""
    )
    return dataclasses.replace(
        leaf,
        verdict=leaf.fallback.verdict,
        explanation=leaf.fallback.explanation + why,
        symptoms=(Symptom.VALUE,) if leaf.fallback.verdict is Verdict.EAGER_INACCURATE else (),
        nearer=leaf.fallback.nearer,
        fallback=None,
    )


def _scalar_roundings(outcomes: list[tuple[int, list[CallOutcome]]]) -> tuple[ScalarRounding, ...]:
    """Each rounding the faithful reference made, once (frozen, so equal roundings are one key), in order first met."""
    return tuple(dict.fromkeys(r for _, calls in outcomes for call in calls for r in call.roundings))


def merge_outcomes(outcomes: list[CallOutcome]) -> tuple[list[LeafResult], dict[str, StoredLeaf], bool]:
    leaves: list[LeafResult] = []
    arrays: dict[str, StoredLeaf] = {}
    low = False
    for o in outcomes:
        leaves.extend(o.leaves)
        arrays.update(o.arrays)
        low = low or o.low_precision
    return leaves, arrays, low


def _pick_worst_seed(
    outcomes: list[tuple[int, list[CallOutcome]]],
) -> tuple[list[LeafResult], list[SeedOutcome], dict[str, StoredLeaf]]:
    seeds: list[SeedOutcome] = []
    best: tuple[int, list[LeafResult], dict[str, StoredLeaf]] | None = None
    for seed, calls in outcomes:
        leaves, arrays, _ = merge_outcomes(calls)
        verdict = worst([leaf.verdict for leaf in leaves])
        seeds.append(
            SeedOutcome(
                seed,
                verdict,
                oracle.summarize(verdict, [(leaf.name, leaf.verdict, leaf.explanation) for leaf in leaves]),
            )
        )
        if best is None or verdict.severity > best[0]:
            best = (verdict.severity, leaves, arrays)
    assert best is not None
    return best[1], seeds, best[2]


def _resummarize_worst_seed(seeds: list[SeedOutcome], leaves: list[LeafResult]) -> list[SeedOutcome]:
    """The leaves shown are the worst seed's; after a recheck its summary must say what they now say."""
    worst_seed = max(seeds, key=lambda s: s.verdict.severity).seed
    verdict = worst([leaf.verdict for leaf in leaves])
    summary = oracle.summarize(verdict, [(leaf.name, leaf.verdict, leaf.explanation) for leaf in leaves])
    return [SeedOutcome(s.seed, verdict, summary) if s.seed == worst_seed else s for s in seeds]


_CAST_CALLS = {"bfloat16", "half", "to", "float", "type_as", "double"}  # Dynamo-graph calls that are ATen casts


@dataclasses.dataclass
class _Paths:
    """The evidence a mechanism needs, leaf by leaf: the round trips and draws among that leaf's own ancestors, as
    eager's traced ATen ops computed it (engine/child/faithful.py). A leaf the trace did not name (a mutated input,
    module state, a gradient) falls back to the program's: there the mechanism is named from the program as a whole."""

    trips: dict[str, tuple[str, ...]]  # leaf -> "producer -> consumer" pairs on its path
    draws_of: dict[str, tuple[str, ...]]  # leaf -> random ops on its path
    dtypes: dict[str, str]  # pair -> dtype
    all_draws: tuple[str, ...]
    traced: bool
    graph_trips: tuple[mechanisms.RoundTrip, ...] = ()  # the Dynamo graph's, with program lines (for the wording)

    @classmethod
    def of(cls, outcomes: list[tuple[int, list[CallOutcome]]], seeds: list[SeedOutcome]) -> _Paths:
        worst_seed = max(seeds, key=lambda s: s.verdict.severity).seed
        calls = [call for seed, calls in outcomes if seed == worst_seed for call in calls]
        trips: dict[str, tuple[str, ...]] = {}
        draws: dict[str, tuple[str, ...]] = {}
        for call in calls:
            trips.update(call.leaf_round_trips or {})
            draws.update(call.leaf_draws or {})
        return cls(
            trips,
            draws,
            {pair: dtype for _, cs in outcomes for call in cs for pair, dtype in call.round_trips},
            tuple(dict.fromkeys(op for _, cs in outcomes for call in cs for op in call.random_ops)),
            any(call.leaf_round_trips is not None for call in calls),
        )

    def draws(self, leaf: LeafResult) -> str | None:
        ops = self.draws_of.get(leaf.name, self.all_draws if leaf.name not in self.trips else ())
        return mechanisms.random_evidence(ops) if ops else None

    def round_trips(self, leaf: LeafResult) -> str | None:
        if leaf.name in self.trips:
            pairs = self.trips[leaf.name]
            if not pairs:
                return None
            # name the Dynamo graph's round trip, with its program line, whose producer is one on this leaf's path
            producers = {pair.split(" -> ")[0].split(".")[1] for pair in pairs if "." in pair}
            if producers & {"_to_copy", "convert_element_type"}:
                producers |= _CAST_CALLS
            named = [t for t in self.graph_trips if re.sub(r"_\d+$", "", t.node) in producers]
            if named:
                return mechanisms.precision_cast_evidence(named)
            if not self.graph_trips:  # the program's own graph shows none: they are inside a library call
                return mechanisms.aten_round_trip_evidence([(p, self.dtypes.get(p, "bf16/fp16")) for p in pairs])
            shown = "; ".join(f"{self.dtypes.get(pair, 'bf16/fp16')} between {pair}" for pair in pairs[:2])
            more = f" (and {len(pairs) - 2} more)" if len(pairs) > 2 else ""
            return f"on this value's own path eager rounds to {shown}{more}, and a fused kernel keeps it in fp32"
        if self.graph_trips:
            return mechanisms.precision_cast_evidence(self.graph_trips)
        pairs = tuple(self.dtypes.items())
        return mechanisms.aten_round_trip_evidence(pairs) if pairs else None


def _wants_precision_recheck(
    options: CheckOptions, outcomes: list[tuple[int, list[CallOutcome]]], leaves: list[LeafResult]
) -> bool:
    """Value drift that a low-precision round trip could explain gets a second compile with emulation on.

    Any value-divergent leaf qualifies (a program may cast to bf16 internally and return fp32); a benign
    one only where low precision is visible, since fp32 reassociation is the usual cause there.
    """
    if (
        not options.recheck_precision_casts
        or options.inductor_config.get("emulate_precision_casts")
        or options.triton_cpu
    ):
        return False
    if options.backend not in (None, "inductor"):
        return False
    low = options.dtype is not None or any(o.low_precision for _, calls in outcomes for o in calls)
    value_leaves = [leaf for leaf in leaves if not leaf.structural]
    return any(leaf.verdict in (Verdict.DIVERGENT, Verdict.EAGER_INACCURATE) for leaf in value_leaves) or (
        low and any(leaf.verdict is Verdict.BENIGN for leaf in value_leaves)
    )


@dataclasses.dataclass(frozen=True)
class Recheck:
    """A second compile under one Inductor flag; a leaf whose difference it removes gets the named verdict, when
    the program shows evidence of the mechanism (engine/judge/mechanisms.py)."""

    stage: str
    config: dict[str, Any]
    verdict: Verdict
    may_explain: Callable[[LeafResult], bool]  # which leaves the flag could explain at all
    mechanism: Callable[[LeafResult, str], str]  # the sentence that names the mechanism, from the leaf and the evidence
    missing: str  # what is missing when there is no evidence


def _cast_mechanism(leaf: LeafResult, evidence: str) -> str:
    cast = f"a {leaf.dtype}" if leaf.dtype in ("bfloat16", "float16") else "an internal bf16/fp16"
    return f"Inductor skipped {cast} round trip that eager performs: {evidence}"


def _random_mechanism(leaf: LeafResult, evidence: str) -> str:
    return (
        f"{evidence}, and compiled draws its random numbers from Inductor's own generator, not ATen's, so the draws "
        "differ (intended, pytorch#118735; set fallback_random=True, --fallback-random, where they must agree)"
    )


# value-derived symptoms: what different random draws can cause (a dropped element's log is -inf on one side only)
_VALUE_SYMPTOMS = frozenset({Symptom.VALUE, Symptom.NAN, Symptom.INF, Symptom.SIGNED_ZERO})

PRECISION_RECHECK = Recheck(
    "precision-cast recheck",
    {"emulate_precision_casts": True},
    Verdict.PRECISION_CAST,
    lambda leaf: not leaf.structural,
    _cast_mechanism,
    "no bf16/fp16 value on this value's own path is one that eager rounds and a fused kernel could keep in fp32",
)
RNG_RECHECK = Recheck(
    "rng recheck",
    {"fallback_random": True},
    Verdict.RNG,
    lambda leaf: set(leaf.symptoms) <= _VALUE_SYMPTOMS,
    _random_mechanism,
    "no op on this value's own path drew random numbers in eager's run",
)


def _wants_rng_recheck(
    options: CheckOptions, outcomes: list[tuple[int, list[CallOutcome]]], leaves: list[LeafResult]
) -> bool:
    """Values that differ in a program that draws random numbers get a second compile with fallback_random on.

    Benign leaves qualify too: where the fp64 reference draws its own numbers (CUDA's stream depends on the
    dtype), eager is as far from it as compiled, and different draws pass the three-way rule.
    """
    if not options.recheck_random or options.inductor_config.get("fallback_random") or options.triton_cpu:
        return False
    if options.backend not in (None, "inductor"):  # fallback_random is Inductor's; other backends call ATen's RNG
        return False
    if not any(o.drew_random for _, calls in outcomes for o in calls):
        return False
    return any(
        leaf.verdict in (Verdict.DIVERGENT, Verdict.EAGER_INACCURATE, Verdict.BENIGN) and RNG_RECHECK.may_explain(leaf)
        for leaf in leaves
    )


def _same_compile_as_minimizer(options: CheckOptions, outcomes: list[tuple[int, list[CallOutcome]]]) -> dict[str, Any]:
    """fallback_random for a precision re-check of a program that drew no random numbers.

    It changes nothing there (it only concerns random ops), but it is part of Inductor's cache key, and
    the minimizer checks a divergence with both fallback_random and emulate_precision_casts on: with it,
    the minimizer's first compile of the program (and of every candidate whose graph is unchanged) is a
    cache hit on this re-check's.
    """
    if options.inductor_config.get("fallback_random") is not None or any(
        o.drew_random for _, calls in outcomes for o in calls
    ):
        return {}
    return {"fallback_random": True}


def _recheck(
    run: Run,
    leaves: list[LeafResult],
    seeds: list[SeedOutcome],
    recheck: Recheck,
    also: dict[str, Any] | None = None,
    evidence: Callable[[LeafResult], str | None] = lambda leaf: None,
    unsaid: dict[str, Any] | None = None,
    capture: inside.Capture | None = None,
) -> list[LeafResult]:
    """Re-run the worst seed with the recheck's flag (and `also`; and `unsaid`, flags that change nothing here and
    go unmentioned); leaves whose difference it removes get its verdict when `evidence` names the mechanism in the
    program, and keep theirs, saying so, when nothing does."""
    import torch._dynamo
    import torch._inductor.config as inductor_config

    worst_seed = max(seeds, key=lambda s: s.verdict.severity).seed
    settings = run.settings()
    run.emit(recheck.stage)
    torch._dynamo.reset()
    config = {**(also or {}), **recheck.config}
    try:
        watching = capture.active() if capture is not None else contextlib.nullcontext()
        with inductor_config.patch({**(unsaid or {}), **config}), compile_progress(run.detail), watching:
            if run.style is SnippetStyle.REPRO:
                calls = run_repro(run, worst_seed, settings)
            else:
                calls = run_program(run, [worst_seed], settings)[0][1]
    except (StageError, SnippetError) as exc:
        run.notes.append(f"{recheck.stage} failed: {str(exc)[:200]}")
        return leaves
    calls = settle_budget([(worst_seed, calls)])[0][1]
    rechecked = {leaf.name: leaf for leaf in merge_outcomes(calls)[0]}
    flags = ", ".join(f"{k}={v}" for k, v in config.items())
    return [_after_recheck(leaf, rechecked.get(leaf.name), recheck, flags, evidence) for leaf in leaves]


def _after_recheck(
    leaf: LeafResult,
    again: LeafResult | None,
    recheck: Recheck,
    flags: str,
    evidence: Callable[[LeafResult], str | None],
) -> LeafResult:
    """One leaf after a recheck whose run gave `again` for it (see _recheck)."""
    if again is None or not recheck.may_explain(leaf):
        return leaf
    differed = leaf.verdict in (Verdict.DIVERGENT, Verdict.EAGER_INACCURATE)
    fixed = (differed and again.verdict in (Verdict.MATCH, Verdict.BENIGN)) or (
        leaf.verdict is Verdict.BENIGN and again.verdict is Verdict.MATCH
    )
    found = evidence(leaf) if fixed else None
    if fixed and found is not None:
        outcome = "bit-identical" if again.verdict is Verdict.MATCH else f"benign ({again.explanation})"
        why = f"{leaf.explanation.split(';')[0]}; with {flags} it is {outcome}: {recheck.mechanism(leaf, found)}"
        return dataclasses.replace(leaf, verdict=recheck.verdict, explanation=why)
    if fixed:
        return dataclasses.replace(
            leaf, explanation=f"{leaf.explanation}; {mechanisms.unexplained(flags, recheck.missing)}"
        )
    if recheck is RNG_RECHECK and _with_eager_draws(leaf, again, evidence):
        return _judged_with_eager_draws(leaf, again, flags)
    if leaf.verdict is Verdict.DIVERGENT and again.verdict is Verdict.DIVERGENT and recheck is RNG_RECHECK:
        # say so: the random draws are not what makes this leaf differ (a minimizer must not chase them)
        return dataclasses.replace(
            leaf, explanation=f"{leaf.explanation}; still divergent with {flags}: {again.explanation.split(';')[0]}"
        )
    return leaf


def _with_eager_draws(leaf: LeafResult, again: LeafResult, evidence: Callable[[LeafResult], str | None]) -> bool:
    """Whether a value computed from draws is eager-inaccurate when compiled uses eager's draws (the rng recheck's
    `again`) while the first compile, with its own draws, made it divergent or benign."""
    first = leaf.verdict in (Verdict.DIVERGENT, Verdict.BENIGN)
    return first and again.verdict is Verdict.EAGER_INACCURATE and evidence(leaf) is not None


def _judged_with_eager_draws(leaf: LeafResult, again: LeafResult, flags: str) -> LeafResult:
    """The leaf judged from the rng recheck's run: the reference replays eager's draws, so only compiled's values from
    the same draws can be judged against it; the first compile's came from Inductor's own generator (bf16
    fractional_max_pool2d: its windows from other samples looked 5x further from the reference than eager's)."""
    return dataclasses.replace(
        leaf,
        verdict=again.verdict,
        nearer=again.nearer,
        witness=again.witness,
        explanation=(
            f"{again.explanation}; judged with {flags}, under which compiled uses eager's random draws as the "
            f"reference does (without it compiled draws its own: {leaf.explanation.split(';')[0]})"
        ),
    )


def _save_arrays(run_dir: Path, arrays: dict[str, StoredLeaf]) -> None:
    """Every kept leaf's values, copied to the host one leaf at a time (engine.arrays' uncompressed files)."""

    def leaves() -> Iterator[tuple[str, dict[str, np.ndarray], dict[str, np.ndarray]]]:
        for name, leaf in arrays.items():
            ops = leaf.operands
            values = {} if ops is None else {"eager": ops.eager, "compiled": ops.compiled, "ref": ops.ref}
            yield name, {kind: host_array(t) for kind, t in values.items() if t is not None}, leaf.summary

    stored_arrays.write(run_dir, leaves())


def _finish_error(run: Run, run_dir: Path, error: ErrorInfo, code: GeneratedCode) -> CheckResult:
    run.emit("done")
    result = CheckResult(
        verdict=Verdict.ERROR,
        explanation=f"error ({error.kind.value}): {error.message.splitlines()[0] if error.message else ''}",
        options=run.options,
        style=run.style.value if run.style else None,
        error=error,
        code=code,
        notes=tuple(run.notes),
        environment=environment(run.device),
        stage_seconds=run.stage_seconds,
        peak_rss_mb=peak_rss_mb(),
        run_dir=str(run_dir),
    )
    run.guard_fork()
    result.save(run_dir)
    return result


def peak_device_mb(device: str) -> float | None:
    """On CUDA, the allocator's peak for this process (the check's tensors, not the CUDA context), in MiB."""
    if device != "cuda" or not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return None
    return torch.cuda.max_memory_allocated() / 2**20


def peak_rss_mb() -> float:
    """This process's largest resident set so far, in MiB (Linux reports kilobytes)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def environment(device: str) -> dict[str, str]:
    env = {
        "torch": torch.__version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "device": device,
    }
    if device == "cuda" and torch.cuda.is_available():
        env["gpu"] = torch.cuda.get_device_name(0)
        env["cuda"] = str(torch.version.cuda)
    try:
        import triton

        env["triton"] = triton.__version__
    except ImportError:
        pass
    return env


def internal_error(options: CheckOptions, run_dir: Path, exc: BaseException) -> CheckResult:
    """A bug of ours: still a result, with the traceback, so nothing is silently lost."""
    result = CheckResult(
        verdict=Verdict.ERROR,
        explanation=f"error (internal): {type(exc).__name__}: {exc}",
        options=options,
        error=ErrorInfo(ErrorKind.INTERNAL, f"{type(exc).__name__}: {exc}", "".join(traceback.format_exception(exc))),
        run_dir=str(run_dir),
    )
    result.save(run_dir)
    return result
