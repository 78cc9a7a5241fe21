"""A whole sweep: plan the jobs, run what is not finished, group divergences into bugs, minimize, report.

The order of effects for each job is what makes a killed sweep resumable: the job is marked running
(with its run directory) before it is handed out, and its outcome is committed to the state file before
anything else looks at it; the app's run list learns of it afterwards.

Zoo jobs (app.sweep.sources) add two steps. PyTorch's own check of each finished job is computed from its
stored arrays and kept beside our verdict (a job whose check was lost to a kill gets it on the next run).
A zoo program that ends in an error as a whole (one op_db sample whose compile fails, say) is split into
its parts, one sample each, which run as jobs of their own, so that one sample hides nothing else.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import sqlite3
import sys
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.store import DONE as RUN_DONE
from app.store import RunRecord, RunStore
from app.sweep import bugs as bug_rules
from app.sweep import matrix, registry, report
from app.sweep.corpus import Corpus, CorpusError, Program, find_programs, split
from app.sweep.jobs import LIMITS, JobOutcome, JobSpec, job_key
from app.sweep.progress import SweepProgress, duration
from app.sweep.pytorch_check import SAME, UNAVAILABLE, PyTorchCheck, harness_rule
from app.sweep.sources.registry import is_zoo
from app.sweep.state import DONE, QUEUED, BugRow, JobRow, SweepState
from app.sweep.tasks import CheckTask, MinimizeOutcome, MinimizeTask, Pool, write_minimization
from engine.judge.verdicts import Verdict
from engine.paths import new_run_dir
from engine.result import CheckResult

MINIMIZED_DIR = "minimized"
# a zoo program that ends in one of these errors as a whole is split into its parts (one sample each); a
# snippet or options error (its samples cannot be made, a package is missing), or an internal one (a bug of
# ours), would end every part the same way
SPLIT_ERRORS = ("compile", "eager", "crash", "timeout", "memory")
_SAMPLE = re.compile(
    r"\['(?:sample|input)\[(\d+)\]'\]"
)  # a zoo leaf's sample: out['sample[3]'], input args[0]['sample[3]'][1]


@dataclass(frozen=True, kw_only=True)
class SweepConfig:
    paths: tuple[str, ...]
    axes: tuple[matrix.Axis, ...] = ()
    base_options: Mapping[str, Any] = field(default_factory=dict)  # the options given outright (CheckOptions JSON)
    sweep_dir: Path | None = None
    slots: int | None = None  # -j: checks at once (local) or actors (Ray); default the cores, or the GPUs
    ray: str | None = None  # None: the local pool; "local": a local Ray instance; else a cluster address
    minimize: bool = False
    minimize_budget_s: float | None = None
    minimize_max: int | None = None  # at most this many new bugs per run (the most common first); the rest stay queued
    shrinkray: bool = True
    ablation: bool = True  # each bug's issue.md gets the ablation over backends
    retry_errors: bool = False
    ship_runs: bool = False  # Ray: actors on this node also return runs as archives (what remote nodes do)
    cache_dir: Path | None = None
    report: Path | None = None  # also write the HTML report here
    command: tuple[str, ...] = ()  # as typed, for the report


@dataclass(frozen=True)
class SweepSummary:
    sweep_dir: Path
    jobs: tuple[JobRow, ...]  # this sweep's jobs, most severe first
    bugs: tuple[BugRow, ...]
    ran: int  # checks run by this invocation
    elapsed_s: float
    pool: str  # what ran them ("" when nothing had to run)
    json_path: Path
    report_path: Path | None

    @property
    def counts(self) -> Counter[str]:
        return Counter(r.verdict or r.status for r in self.jobs)

    @property
    def exit_code(self) -> int:
        """1 when a job diverged, else 2 when one could not be checked, else 0 (as `divergence check`)."""
        verdicts = {r.verdict for r in self.jobs}
        if Verdict.DIVERGENT.value in verdicts:
            return 1
        if Verdict.ERROR.value in verdicts or any(r.status != DONE for r in self.jobs):
            return 2
        return 0


def plan(config: SweepConfig) -> tuple[list[JobSpec], Corpus, int]:
    """The jobs (programs x matrix cells, in that order), the corpus, and the number of cells."""
    corpus = find_programs(config.paths)
    cells = matrix.cells(config.axes)
    specs: list[JobSpec] = []
    for program in corpus.programs:
        specs.extend(_program_specs(program, config, cells, len(specs)))
    return specs, corpus, len(cells)


def _program_specs(
    program: Program, config: SweepConfig, cells: Sequence[matrix.Cell], start: int, label: str = ""
) -> list[JobSpec]:
    specs = []
    for cell in cells if not label else [c for c in cells if c.label == label]:
        # the program's own .toml options, then the options given outright, then the matrix
        options = cell.apply({**program.options, **config.base_options})
        path = str(program.path)
        accuracy = program.accuracy
        if accuracy is not None and accuracy.kind == SAME and options.backward:
            accuracy = harness_rule(backward=True)  # the harness's training tolerance
        specs.append(
            JobSpec(
                job_key(path, options),
                path,
                program.source,
                options,
                cell.label,
                start + len(specs),
                accuracy,
                program.info,
            )
        )
    return specs


def default_sweep_dir(config: SweepConfig) -> Path:
    """The same command names the same directory, so running it again resumes."""
    identity = {
        "paths": [p if is_zoo(p) else str(Path(p).expanduser().resolve()) for p in config.paths],
        "axes": [[a.key, list(a.values)] for a in config.axes],
        "options": {
            k: v for k, v in config.base_options.items() if k not in LIMITS
        },  # --timeout 900 resumes the same sweep
    }
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()[:8]
    first = config.paths[0] if config.paths else "sweep"
    stem = (
        re.sub(r"[^\w.+-]+", "-", first).strip("-")[:40] if is_zoo(first) else Path(first).expanduser().resolve().name
    )
    return registry.sweeps_root() / f"{stem.removesuffix('.py') or 'sweep'}-{digest}"


def run_sweep(config: SweepConfig, progress: SweepProgress | None = None, pool: Pool | None = None) -> SweepSummary:
    """Run the sweep to the end (or until Ctrl-C, which keeps every finished job); see the module docstring."""
    progress = progress or SweepProgress(quiet=True)
    specs, corpus, n_cells = plan(config)
    sweep_dir = (config.sweep_dir or default_sweep_dir(config)).expanduser().resolve()
    started = time.monotonic()
    with SweepState(sweep_dir, lock=True) as state:
        adopted, reset = state.recover()
        if adopted or reset:
            progress.note(
                f"resuming {sweep_dir}: {adopted} jobs that finished as the last sweep stopped kept, {reset} run again"
            )
        first = "created" not in state.meta()
        state.set_meta(
            **({"created": time.time()} if first else {}),
            command=list(config.command),
            paths=list(config.paths),
            matrix=[[a.key, list(a.values)] for a in config.axes],
            options=dict(config.base_options),
            updated=time.time(),
        )
        registry.register(sweep_dir)
        todo = state.plan(specs, retry_errors=config.retry_errors)
        keys = [s.key for s in specs]
        before = Counter(r.verdict for r in state.jobs(keys) if r.status == DONE and r.key not in {s.key for s in todo})
        progress.planned(len(specs), before, len(corpus.programs), n_cells, len(corpus.skipped))
        for line in corpus.skipped[:5]:
            progress.note(f"  skipped {line[:200]}")
        invocation = _Invocation(config, state, progress, pool, sweep_dir.name)
        invocation.programs = {str(p.path): p for p in corpus.programs}
        try:
            if todo:
                invocation.checks(todo)
            parts = invocation.split_errors(specs)
            specs = specs + parts
            keys = [s.key for s in specs]
            invocation.backfill_pytorch_checks(specs)
            if config.minimize:
                invocation.bugs([s for s in specs if s.key in _divergent_keys(state, keys)])
        finally:
            invocation.close()
        json_path = report.write_json(state)
        report_path = report.write_html(state, config.report) if config.report is not None else None
        rows = [r for r in state.by_severity() if r.key in set(keys)]
        bug_ids = {r.bug for r in rows if r.bug}
        return SweepSummary(
            sweep_dir,
            tuple(rows),
            tuple(b for b in state.bugs() if b.id in bug_ids),
            invocation.ran,
            time.monotonic() - started,
            invocation.pool_description,
            json_path,
            report_path,
        )


def _divergent_keys(state: SweepState, keys: Sequence[str]) -> set[str]:
    return {r.key for r in state.jobs(keys) if r.status == DONE and r.verdict == Verdict.DIVERGENT.value}


class _Invocation:
    """The parts of one invocation that share its pool (created on first need) and its state file."""

    def __init__(
        self, config: SweepConfig, state: SweepState, progress: SweepProgress, pool: Pool | None, sweep_name: str
    ) -> None:
        self.config = config
        self.state = state
        self.progress = progress
        self._pool = pool
        self._own_pool = pool is None
        self.pool_description = pool.description if pool is not None else ""
        self.sweep_name = sweep_name
        self.ran = 0
        self._running: set[str] = set()
        self._store: RunStore | None = RunStore()
        self._specs: dict[str, JobSpec] = {}  # by key: the jobs this invocation planned
        self.programs: dict[str, Program] = {}  # by path: the corpus's programs, and the parts split off them
        self._pytorch_warned = False

    @property
    def pool(self) -> Pool:
        if self._pool is None:
            began = time.monotonic()
            self._pool = make_pool(self.config)
            self.pool_description = self._pool.description
            for note in getattr(self._pool, "notes", []):
                self.progress.note(note)
            self.progress.note(f"{self._pool.description}, ready in {time.monotonic() - began:.1f} s")
        return self._pool

    def close(self) -> None:
        for key in self._running:  # handed out but not finished: stopped by Ctrl-C or an error
            self.state.unstart(key)
        self._running.clear()
        if self._own_pool and self._pool is not None:
            self._pool.close()
        self.progress.close()

    # -- the checks --
    def checks(self, todo: Sequence[JobSpec]) -> None:
        self._specs.update({s.key: s for s in todo})
        self.pool.run_checks(self._tasks(todo), self._started, self._finished)

    def _tasks(self, todo: Sequence[JobSpec]) -> Iterator[CheckTask]:
        for spec in todo:
            yield CheckTask(spec, new_run_dir())  # the run directory is made only when the job is handed out

    def _started(self, task: CheckTask) -> None:
        self.state.start(task.spec.key, task.run_dir)
        self._running.add(task.spec.key)
        self.progress.job_started()

    def _finished(self, task: CheckTask, outcome: JobOutcome) -> None:
        spec = task.spec
        self.state.finish(spec.key, outcome)
        self._running.discard(spec.key)
        self.ran += 1
        self._record_run(spec, outcome)
        pytorch = self._pytorch_check(spec, outcome.run_dir)
        self.progress.job_done(spec, outcome, pytorch.status if pytorch is not None else None)

    # -- PyTorch's own check, beside ours --
    def _pytorch_check(self, spec: JobSpec, run_dir: str) -> PyTorchCheck | None:
        if spec.accuracy is None:
            return None
        from app.sweep.pytorch_check import judge  # imports torch: only sweeps with zoo jobs pay for it

        program = self.programs.get(spec.program)
        try:
            reference = (
                program.pytorch_reference() if program is not None and program.pytorch_reference is not None else None
            )
            check = judge(spec.accuracy, run_dir, reference)
        except Exception as exc:  # a bug of ours must not stop the sweep; the row says what happened
            check = PyTorchCheck(
                spec.accuracy.describe(), UNAVAILABLE, note=f"PyTorch's check failed here: {type(exc).__name__}: {exc}"
            )
            if not self._pytorch_warned:
                self.progress.note(
                    f"note: PyTorch's check could not be computed for {spec.name} ({type(exc).__name__}: {exc}); the"
                    " sweep carries on"
                )
                self._pytorch_warned = True
        self.state.set_pytorch(spec.key, check)
        return check

    def backfill_pytorch_checks(self, specs: Sequence[JobSpec]) -> None:
        """Finished zoo jobs without PyTorch's check (the sweep stopped between the two, or adopted the job)."""
        rows = {r.key: r for r in self.state.jobs([s.key for s in specs])}
        missing = [
            s
            for s in specs
            if s.accuracy is not None
            and rows[s.key].status == DONE
            and rows[s.key].pytorch is None
            and rows[s.key].run_dir
        ]
        if missing:
            self.progress.note(
                f"PyTorch's own check for {len(missing)} finished job{'s' if len(missing) != 1 else ''} that lack it"
            )
        for spec in missing:
            self._pytorch_check(spec, rows[spec.key].run_dir or "")

    # -- zoo programs that ended in an error as a whole --
    def split_errors(self, specs: Sequence[JobSpec]) -> list[JobSpec]:
        """Run the parts of every zoo program whose job ended in an error as a whole; their specs (run or not)."""
        rows = {r.key: r for r in self.state.jobs([s.key for s in specs])}
        failed = [
            s
            for s in specs
            if rows[s.key].status == DONE
            and rows[s.key].error_kind in SPLIT_ERRORS
            and (program := self.programs.get(s.program)) is not None
            and program.parts is not None
        ]
        if not failed:
            return []
        cells = matrix.cells(self.config.axes)
        parts: list[JobSpec] = []
        for spec in failed:
            try:
                programs = split(self.programs[spec.program])
            except CorpusError as exc:
                self.progress.note(f"{spec.name}: cannot be split into its samples ({exc})")
                continue
            for program in programs:
                self.programs[str(program.path)] = program
                parts.extend(_program_specs(program, self.config, cells, len(specs) + len(parts), label=spec.label))
        todo = self.state.plan(parts, retry_errors=self.config.retry_errors)
        if todo:
            self.progress.note(
                f"{len(failed)} program{'s' if len(failed) != 1 else ''} ended in an error as a whole: "
                f"{len(todo)} of their {len(parts)} samples run one by one"
            )
            self.progress.more(len(todo))
            self.checks(todo)
        return parts

    def _record_run(self, spec: JobSpec, outcome: JobOutcome) -> None:
        """List the run in the app's store, so `?run=<id>` opens it like a run made in the app."""
        if self._store is None:
            return
        name = spec.name + (f" [{spec.label}]" if spec.label else "")
        record = RunRecord(
            id=outcome.run_id,
            created=time.time() - outcome.seconds,
            name=name,
            origin=f"sweep:{self.sweep_name}",
            run_dir=outcome.run_dir,
            options=spec.options,
            status=RUN_DONE,
            verdict=outcome.verdict.value,
            explanation=outcome.explanation,
            finished=time.time(),
        )
        try:
            self._store.add(record)
        except sqlite3.Error as exc:  # the sweep's own state has the job; only the app's listing is missing
            self.progress.note(f"note: the app's run list could not be updated ({exc}); the sweep carries on")
            self._store = None

    # -- bugs and minimizations --
    def bugs(self, divergent: Sequence[JobSpec]) -> None:
        self._specs.update({s.key: s for s in divergent})
        rows = {r.key: r for r in self.state.jobs([s.key for s in divergent])}
        unlocalized = [s for s in divergent if rows[s.key].bug is None]
        localize_root = self.state.dir / bug_rules.LOCALIZE_DIR
        fresh = [s for s in unlocalized if bug_rules.stored_report(localize_root / s.key) is None]
        for spec in unlocalized:
            if spec not in fresh:
                self._assign_bug(spec, rows[spec.key], bug_rules.stored_report(localize_root / spec.key))
        if fresh:
            self.progress.note(
                f"grouping {len(fresh)} divergent job{'s' if len(fresh) != 1 else ''} by bug: localizing the first"
                " diverging node of each"
            )
            tasks = [CheckTask(bug_rules.localization_spec(s), localize_root / s.key) for s in fresh]
            self.pool.run_checks(
                tasks,
                lambda task: None,
                lambda task, outcome: self._assign_bug(
                    task.spec, rows[task.spec.key], bug_rules.stored_report(task.run_dir)
                ),
            )
        jobs_of = Counter(r.bug for r in self.state.jobs([s.key for s in divergent]) if r.bug)
        # the bugs most jobs show first: with --minimize-max, those are the ones minimized
        queued = sorted(
            (b for b in self.state.bugs() if b.status == QUEUED and b.id in jobs_of), key=lambda b: -jobs_of[b.id]
        )
        if not queued:
            if divergent:
                self.progress.note("every bug found has been minimized before: nothing new to minimize")
            return
        limit = self.config.minimize_max if self.config.minimize_max is not None else len(queued)
        later = (
            f"; {len(queued) - limit} more stay queued for the next run (--minimize-max {limit})"
            if len(queued) > limit
            else ""
        )
        self.progress.note(f"{len(queued)} new bug{'s' if len(queued) != 1 else ''} to minimize{later}")
        specs = {s.key: s for s in divergent}
        tasks = [self._minimize_task(b, specs[b.representative]) for b in queued[:limit] if b.representative in specs]
        self.pool.run_minimizations(tasks, self._minimize_started, self._minimize_finished)

    def _assign_bug(self, spec: JobSpec, row: JobRow, localized: Any) -> None:
        try:
            result = CheckResult.load(Path(row.run_dir or ""))
        except (OSError, ValueError, KeyError, TypeError):
            return
        bug = bug_rules.bug_of(spec, result, localized)
        if bug is None:
            return
        self.state.set_bug(spec.key, bug.id)
        if not self.state.add_bug(bug.id, bug.description, spec.key):
            # a known bug: the smallest program that shows it is the one to minimize (while it waits)
            current = next((b for b in self.state.bugs() if b.id == bug.id), None)
            other = self._specs.get(current.representative) if current else None
            if (
                current is not None
                and current.status == QUEUED
                and (other is None or len(spec.source) < len(other.source))
            ):
                self.state.set_representative(bug.id, spec.key)

    def _minimize_task(self, bug: BugRow, spec: JobSpec) -> MinimizeTask:
        source, program = self._focus(spec)
        options = spec.options.replace(
            timeout_s=min(spec.options.timeout_s, 120.0)
        )  # per candidate, as `divergence minimize`
        wider = samples_up_to(spec.source, source) if source != spec.source else None
        return MinimizeTask(
            bug.id,
            source,
            options,
            program,
            self.state.dir / MINIMIZED_DIR / bug.id,
            self.config.minimize_budget_s,
            self.config.shrinkray,
            self.config.ablation,
            wider,
        )

    def _focus(self, spec: JobSpec) -> tuple[str, str]:
        """What to minimize for a divergent job: a zoo program of many samples narrows to the sample that diverges
        first (its part), since the samples are made inside op_db where no source edit can reach them."""
        program = self.programs.get(spec.program)
        row = next(iter(self.state.jobs([spec.key])), None)
        match = _SAMPLE.search(row.worst_leaf or "") if row is not None else None
        if program is None or program.parts is None or match is None:
            return spec.source, spec.program
        try:
            parts = split(program)
        except CorpusError:
            return spec.source, spec.program
        sample = int(match.group(1))
        part = next((p for p in parts if p.info.get("sample") == sample), None)
        if part is None:
            return spec.source, spec.program
        self.progress.note(f"{spec.name}: minimizing its first divergent sample alone ({part.path.name})")
        return part.source, str(part.path)

    def _minimize_started(self, task: MinimizeTask) -> None:
        self.state.start_bug(task.bug)
        self.progress.note(f"minimizing bug {task.bug} from {Path(task.filename).name} ...")

    def _minimize_finished(self, task: MinimizeTask, outcome: MinimizeOutcome) -> None:
        repro = write_minimization(task, outcome)
        self.state.end_bug(
            task.bug,
            outcome.status,
            outcome.message,
            outcome.tokens_before,
            outcome.tokens_after,
            str(repro) if repro else None,
        )
        self.progress.note(
            f"bug {task.bug}: {outcome.status}: {outcome.message.splitlines()[0] if outcome.message else ''}"
        )


_SAMPLES_LINE = re.compile(r"^SAMPLES = (.*?)(  #.*)?$", re.M)


def samples_up_to(whole: str, part: str) -> str | None:
    """The zoo program of every sample up to the part's own, for when the part alone does not diverge: an earlier
    sample can be what makes it differ (a dropout with p=1 that draws only when compiled shifts later draws)."""
    try:
        mine, every = (_indices(_SAMPLES_LINE.search(text).group(1)) for text in (part, whole))  # type: ignore[union-attr]
    except (AttributeError, ValueError, SyntaxError):
        return None
    if not (isinstance(mine, list) and len(mine) == 1):
        return None
    upto = [i for i in (range(mine[0] + 1) if every is None else every) if i <= mine[0]]
    if len(upto) < 2:
        return None
    return _SAMPLES_LINE.sub(lambda m: f"SAMPLES = {upto}{m.group(2) or ''}", part, count=1)


def _indices(text: str) -> Any:
    """A zoo program's SAMPLES: None, a list, or a chunk's `range(100, 200)`."""
    chunk = re.fullmatch(r"range\((\d+), (\d+)\)", text.strip())
    return list(range(int(chunk[1]), int(chunk[2]))) if chunk else ast.literal_eval(text)


def make_pool(config: SweepConfig) -> Pool:
    if config.ray is not None:
        from app.sweep.ray_pool import RayPool

        return RayPool(config.ray, config.slots, config.cache_dir, ship_runs=config.ship_runs)
    from app.sweep.local_pool import LocalPool

    return LocalPool(config.slots, config.cache_dir)


def print_summary(summary: SweepSummary, stream: Any = None) -> None:
    stream = stream or sys.stdout
    print(report.table_text(list(summary.jobs), list(summary.bugs)), file=stream)
    disagreements = report.disagreement_text(list(summary.jobs))
    if disagreements:
        print("\n" + disagreements, file=stream)
    counts = summary.counts
    shown = " · ".join(f"{counts[v]} {v}" for v in report.verdict_order() if counts.get(v))
    print(
        f"\n{len(summary.jobs)} jobs: {shown}; {summary.ran} checked now in {duration(summary.elapsed_s)}", file=stream
    )
    print(
        f"sweep directory: {summary.sweep_dir} "
        f" ({report.JSON_FILE}{', ' + str(summary.report_path) if summary.report_path else ''})",
        file=stream,
    )
