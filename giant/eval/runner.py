"""The batch runner: every item x run as an agent episode, concurrently, within a dollar budget.

Each finished item-run is appended to results.jsonl at once (fsync'd) with its trajectory folder,
so a killed run loses nothing it paid for and a rerun resumes (giant.eval.resume). The summary is
computed from the lines results.jsonl holds, kept as written (giant.eval.summarize), whether the run
finished, hit its budget or was interrupted; they come back with it and the trajectories as the job's
record (giant.record.read.JobRecord), so nothing after the runner reads the folder back.

A stop request (giant.interrupt: SIGTERM, a SLURM time limit) starts no new item and no new provider
call (giant.eval.limits); episodes whose call is in flight get `stop_grace_s` to finish it, then are
cancelled. An item-run cut by the stop (or a halt) writes no result line, so the resumed run starts
it again.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
import time
import traceback
from collections import Counter, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from giant.agent.episode import EpisodeCrashed, run_episode
from giant.agent.limits import LimitExceeded
from giant.agent.modes import AgentConfig
from giant.core import Item
from giant.data.slides import Located, SlideLocation, locate_all
from giant.errors import ConfigError
from giant.eval.annotations import Annotations
from giant.eval.budget import CallPricer, RunBudget
from giant.eval.causes import FIXES, CircuitBreaker, Halt, record_cause, trajectory_cause
from giant.eval.gpu_cost import GpuRate, earlier_active_s
from giant.eval.items import JobData, check_items
from giant.eval.limits import RunLimits
from giant.eval.navigation import item_navigation
from giant.eval.pacing import pacing
from giant.eval.progress import Progress
from giant.eval.provenance import build_provenance
from giant.eval.rescore_records import rescore_records
from giant.eval.resume import carry_over
from giant.eval.run_options import RunOptions
from giant.eval.scoring import outcome_fields, score_trajectory
from giant.eval.summarize import summarize
from giant.interrupt import StopRequest
from giant.llm.batch import BatchCollector
from giant.llm.ledger import Ledger
from giant.llm.pricing import Pricing
from giant.llm.types import Provider, Tier
from giant.record import (
    RUNNER_ERROR,
    SKIPPED,
    JobLayout,
    ResultRecord,
    ResultsWriter,
    latest_by_slot,
    trajectory_dir,
    write_summary,
)
from giant.record.read import JobRecord, read_trajectories
from giant.record.summary import Summary
from giant.record.trajectory import Trajectory
from giant.tools import Tool
from giant.wsi import SlideMissing

# After a stop request, how long calls already in flight may take to return: an answer that arrives
# in time is kept, anything else is cancelled (below docker's 10 s and SLURM's signal_delay_s).
STOP_GRACE_S = 8.0


def item_seed(seed: int, key: str, run_index: int) -> int:
    """Independent, stable per item-run: SHA-256, not Python's salted hash()."""
    digest = hashlib.sha256(json.dumps([seed, key, run_index]).encode()).digest()
    return int.from_bytes(digest[:4], "big") >> 1


async def _cut_after_grace(
    stop: StopRequest, episodes: set[asyncio.Task[ResultRecord | None]], grace_s: float
) -> None:
    """Once a stop is requested, cancel the episodes still running after `grace_s` seconds."""
    await stop.wait()
    if episodes:
        await asyncio.wait(set(episodes), timeout=grace_s)
    for episode in list(episodes):
        episode.cancel()


@dataclass(frozen=True)
class RunServices:
    """What a run works with, built once by its caller (giant.job) and shared by every episode.

    `ledger` is where the provider keeps its paid calls: the trajectories' images are linked to its.
    `batches` is the batch collector the provider was built with (giant.llm.batch.batch_collector;
    None: each call is sent on its own): the runner tells it which episodes run, and shows its rounds.
    `pricing` prices each call's reservation against `run.budget_usd` (giant.eval.budget) at the rates
    of `tier`, the tier the provider is billed at, counting images by `image_tokens` (the provider
    class's rule); without a price a call is expected to cost the mean so far.
    `tools` are the run's loaded tools (giant.tools.load_tools), handed to every episode.
    `gpu` is what the server's GPUs cost an hour, if priced: the run's cost is then its active time.
    `annotations` are the slides' annotations (dataset.annotations): each record then has its evidence.
    `stop` (giant.interrupt) ends the run early and cleanly; calls in flight then get `stop_grace_s`.
    """

    provider: Provider
    ledger: Ledger | None = None
    batches: BatchCollector | None = None
    pricing: Pricing | None = None
    tier: Tier = "standard"
    image_tokens: Callable[[int, int], int] | None = None
    tools: Mapping[str, Tool[Any, Any, Any]] = field(default_factory=dict)
    gpu: GpuRate | None = None
    annotations: Annotations | None = None
    stop: StopRequest = field(default_factory=StopRequest)
    stop_grace_s: float = STOP_GRACE_S
    progress_bar: bool = True


Slot = tuple[str, int]  # (item key, run index)


@dataclass
class Plan:
    """Which item-runs this invocation runs, decided before any starts: the rest were carried over
    from `resume_from` (`done`, with their trajectories, read once) or are skipped for a missing slide
    (a skipped item-run costs nothing)."""

    dataset: str
    metric_name: str
    slots: set[Slot]
    done: dict[Slot, ResultRecord]
    carried: dict[Slot, Trajectory]
    located: Mapping[str, Located]
    slides: Mapping[str, Path | Exception]
    skipped: list[tuple[Item, int]]
    pending: deque[tuple[Item, int]]
    started: float  # perf_counter when this invocation began its work
    earlier_s: float  # the active seconds of the invocations it resumes


async def plan_run(data: JobData, run: RunOptions, out_dir: Path, resume_from: Path | None) -> Plan:
    """Carry over what `resume_from` finished, find the slides, and list what is left to run."""
    items = data.items
    dataset, metric_name = check_items(items)
    slots = {(item.key, k) for item in items for k in range(run.runs_per_item)}
    out_dir.mkdir(parents=True, exist_ok=True)
    results_path = JobLayout(out_dir).results
    done: dict[Slot, ResultRecord] = {}
    trajectories: dict[Slot, Trajectory] = {}
    if resume_from is not None:
        rescore = partial(rescore_records, items=items, scoring=run.scoring)
        carried = carry_over(resume_from, out_dir, slots, retry_failed=run.retry_failed, rescore=rescore)
        print(carried.line())
        done = carried.kept
        trajectories = await asyncio.to_thread(read_trajectories, out_dir, list(done.values()))
    elif results_path.is_file() and results_path.stat().st_size:
        raise ConfigError(
            f"{results_path} already exists; pass resume_from={out_dir} or use a new output directory"
        )
    started = time.perf_counter()
    earlier_s = earlier_active_s(resume_from)  # read before this invocation writes its own summary
    located = data.located
    if located is None:  # once per item, off the event loop
        located = await asyncio.to_thread(locate_all, data.wsi_root, items)
    slides = {key: loc.path if isinstance(loc, SlideLocation) else loc for key, loc in located.items()}
    todo = [(item, k) for k in range(run.runs_per_item) for item in items if (item.key, k) not in done]
    skipped = [(item, k) for item, k in todo if run.skip_missing and _is_missing(slides[item.key])]
    skipped_slots = {(item.key, k) for item, k in skipped}
    pending = deque((item, k) for item, k in todo if (item.key, k) not in skipped_slots)
    return Plan(
        dataset, metric_name, slots, done, trajectories, located, slides, skipped, pending, started, earlier_s
    )


async def run_eval(
    data: JobData,
    services: RunServices,
    *,
    agent: AgentConfig,
    run: RunOptions,
    out_dir: Path,
    config_hash: str,
    resume_from: Path | None = None,
) -> JobRecord:
    """Run every pending item-run, write results.jsonl, trajectories/ and summary.json in `out_dir`;
    return the job's record: every result line, every trajectory and the summary, as written.

    `run` is the run part of the validated settings (giant.config.RunOptions), taken as it is. A stop
    request (`services.stop`) ends the run early and cleanly; the summary then says it is incomplete.

    A fatal provider answer (key, model name, quota) or a streak of `run.breaker_after` item-runs that
    failed outside the model (giant.eval.causes) halts the run: no new item or call starts, and the
    summary says why (`setup_failure`)."""
    plan = await plan_run(data, run, out_dir, resume_from)
    spent = sum(record.dollars or 0.0 for record in plan.done.values())
    pricer = CallPricer(services.provider.model, services.pricing, services.image_tokens, services.tier)
    limits = RunLimits(
        RunBudget(run.budget_usd, pricer, spent=spent), services.stop, Halt(), services.batches
    )
    progress = Progress(total=len(plan.slots), done=list(plan.done.values()), enabled=services.progress_bar)
    if services.batches is not None:
        services.batches.on_progress(progress.note_batch)
    with ResultsWriter(JobLayout(out_dir).results) as writer, progress:
        breaker = CircuitBreaker(run.breaker_after)
        workers = _Workers(plan, services, limits, writer, progress, agent, run, out_dir, breaker)
        workers.skip()
        try:
            await workers.run()
        finally:
            records = [*plan.done.values(), *writer.written]  # what results.jsonl holds, in its order
            summary = _finish(workers, records, data, config_hash)
            write_summary(out_dir, summary)
    return JobRecord(str(out_dir), records, summary, folder=out_dir, trajectories=workers.trajectories)


@dataclass
class _Workers:
    """`run.concurrency` workers, each taking the next pending item-run until none is left or the
    run stops (a stop request, a halt, the budget), appending each result line as it comes."""

    plan: Plan
    services: RunServices
    limits: RunLimits
    writer: ResultsWriter
    progress: Progress
    agent: AgentConfig
    run_options: RunOptions
    out_dir: Path
    breaker: CircuitBreaker
    episodes: set[asyncio.Task[ResultRecord | None]] = field(default_factory=set)
    stopped: str = ""  # why the workers ended early, when an error or a cancellation ended them
    trajectories: dict[Slot, Trajectory] = field(default_factory=dict)  # of the recorded item-runs

    def __post_init__(self) -> None:
        self.trajectories.update(self.plan.carried)

    def skip(self) -> None:
        """The result lines of the item-runs skipped for a missing slide: they start no episode."""
        for item, k in self.plan.skipped:
            record = _record(
                item, k, self.run_options, status=SKIPPED, reason=str(self.plan.slides[item.key])
            )
            self.writer.append(record)
            self.progress.update(record)

    async def run(self) -> None:
        stop = self.limits.stop
        n = min(self.run_options.concurrency, len(self.plan.pending))
        workers = [asyncio.create_task(self._worker()) for _ in range(n)]
        cutter = asyncio.create_task(_cut_after_grace(stop, self.episodes, self.services.stop_grace_s))
        try:
            await asyncio.gather(*workers)  # a cancelled run_eval cancels the workers with it
        except asyncio.CancelledError:
            self.stopped = "interrupted: the run was cancelled"
            raise
        except Exception as exc:  # e.g. the disk is full: stop the other workers before closing
            self.stopped = f"stopped by an error: {type(exc).__name__}: {exc}"
            for task in workers:
                task.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            raise
        finally:
            cutter.cancel()

    async def _worker(self) -> None:
        pending, limits, batches = self.plan.pending, self.limits, self.services.batches
        while pending and not limits.stop.requested and not limits.halt and not limits.budget.exhausted():
            item, k = pending.popleft()
            episode = asyncio.create_task(self._run_one(item, k))
            if batches is not None:  # counted before it starts: a batch round waits for its first call too
                batches.join()
                episode.add_done_callback(lambda _: batches.leave())
            self.episodes.add(episode)
            try:
                record = await episode
            except asyncio.CancelledError:
                this = asyncio.current_task()
                if (
                    limits.stop.requested
                    and episode.cancelled()
                    and this is not None
                    and not this.cancelling()
                ):
                    return  # cut after the stop's grace period: no result line, as below
                raise
            finally:
                self.episodes.discard(episode)
            if record is None:
                return  # cut by the stop or halt: no result line, the resumed run starts it again
            if record.status == "budget_exceeded" and not record.calls and limits.budget.refusal:
                pending.append((item, k))  # the run budget refused its first call: never started
                self.trajectories.pop(record.slot, None)
                if record.trajectory:
                    await asyncio.to_thread(shutil.rmtree, self.out_dir / record.trajectory, True)
                continue
            await asyncio.to_thread(self.writer.append, record)
            self.progress.update(record)
            self.breaker.observe(record, limits.halt)

    async def _run_one(self, item: Item, run_index: int) -> ResultRecord | None:
        """The item-run's result line; None when the run's stop or halt cut it (giant.agent.limits)."""
        run, services = self.run_options, self.services
        slide = self.plan.slides[item.key]
        if isinstance(slide, Exception):
            return _problem_record(item, run_index, run, slide)
        rel = trajectory_dir(item.key, run_index)
        dest = self.out_dir / rel
        if dest.exists():  # left by an unfinished or retried attempt: never mix two episodes' files
            await asyncio.to_thread(shutil.rmtree, dest)
        start = time.perf_counter()
        try:  # run_episode enforces agent.item_timeout_s itself
            trajectory = await run_episode(
                item,
                slide,
                services.provider,
                self.agent,
                out_dir=dest,
                run_index=run_index,
                seed=item_seed(run.seed, item.key, run_index),
                record_requests=run.record_requests,
                ledger=services.ledger,
                limits=self.limits,
                tools=services.tools,
                thresholds=run.navigation,
            )
        except LimitExceeded:  # only a stop or a halt leaves run_episode: the run ends, not the item
            return None
        except EpisodeCrashed as crash:  # a bug must not lose the item, its paid calls, or stop the run
            where = rel if dest.is_dir() else None
            if where is not None and crash.trajectory is not None:
                self.trajectories[item.key, run_index] = crash.trajectory
            return self._crashed(item, run_index, crash.error, crash.trajectory, where, start)
        except Exception as exc:
            return self._crashed(item, run_index, exc, None, None, start)
        navigation = await asyncio.to_thread(
            item_navigation, trajectory, services.annotations, run.navigation
        )
        seconds = time.perf_counter() - start
        if dest.is_dir():
            self.trajectories[item.key, run_index] = trajectory
        record = _scored_record(item, run_index, trajectory, rel if dest.is_dir() else None, seconds, run)
        tools = dict(Counter(call.tool for call in trajectory.tool_calls)) or None
        return record.model_copy(update={"navigation": navigation, "tool_calls": tools})

    def _crashed(
        self,
        item: Item,
        run_index: int,
        error: Exception,
        trajectory: Trajectory | None,
        rel: str | None,
        start: float,
    ) -> ResultRecord:
        """The result line of an item-run an unclassified exception ended: unmeasured (cause `bug`),
        its calls and dollars as paid, its traceback appended to the job folder's errors.log."""
        errors = JobLayout(self.out_dir).errors
        trace = "".join(traceback.format_exception(error))
        with errors.open("a", encoding="utf-8") as log:
            log.write(f"--- {item.key} run {run_index}: {type(error).__name__}: {error}\n{trace}\n")
        fields: dict[str, object] = {
            "status": RUNNER_ERROR,
            "cause": "bug",
            "reason": f"run_episode raised {type(error).__name__}: {error} (traceback in {errors.name})",
            "seconds": time.perf_counter() - start,
            "trajectory": rel,
        }
        if trajectory is not None:
            totals = trajectory.totals
            fields.update(
                calls=totals.calls,
                steps=totals.steps,
                crops=totals.crops,
                dollars=totals.cost_usd,
                **totals.token_counts(),
            )
        return _record(item, run_index, self.run_options, **fields)


def _finish(workers: _Workers, records: list[ResultRecord], data: JobData, config_hash: str) -> Summary:
    """The summary of everything results.jsonl holds (`records`), with why the run ended early, if it did."""
    plan, run, limits = workers.plan, workers.run_options, workers.limits
    stop, halt, budget = limits.stop, limits.halt, limits.budget
    left = len(plan.slots - set(latest_by_slot(records)))
    stopped = workers.stopped
    if stop.requested and left and not stopped:
        stopped = f"interrupted by {stop.reason}; {left} item-runs left for the resumed run"
    if halt and not stopped:
        stopped = halt.reason
    reason = stopped or _budget_stop(budget, len(plan.pending)) or _unmeasured(records, data.wsi_root)
    wall_s = time.perf_counter() - plan.started
    summary = summarize(
        records,
        data.items,
        dataset=plan.dataset,
        metric_name=plan.metric_name,
        runs_per_item=run.runs_per_item,
        seed=run.seed,
        scoring=run.scoring,
        provenance=build_provenance(config_hash, data.dataset_hash, plan.located.values()).model_copy(
            update={"dataset_digests": data.digests}  # which version of each task's questions it scores
        ),
        wall_s=wall_s,
        ran=workers.progress.ran,
        earlier_s=plan.earlier_s,
        gpu=workers.services.gpu,
        incomplete_reason=reason,
        setup_failure=halt.reason,
        stop_cause=halt.cause,
        dataset_defects=data.defects,
    )
    lanes = min(run.concurrency, max(1, workers.progress.ran))
    return summary.model_copy(
        update={"pacing": pacing(workers.services.provider, wall_s=wall_s, lanes=lanes)}
    )


def _budget_stop(budget: RunBudget, not_started: int) -> str:
    if not budget.exhausted() or budget.limit is None:
        return ""
    why = budget.refusal or f"${budget.spent:.4f} spent of ${budget.limit:g}"
    return f"budget stop: {why}; {not_started} item-runs not started"


def _unmeasured(records: Sequence[ResultRecord], wsi_root: Path) -> str:
    """The incomplete reason of a run with unmeasured item-runs (giant.eval.causes; "" when none):
    their count by cause, what to fix, and that the same command measures them."""
    latest = list(latest_by_slot(list(records)).values())
    causes = Counter(cause for record in latest if (cause := record_cause(record)) is not None)
    missing = causes.pop("slide_missing", 0)
    parts = []
    if missing:
        parts.append(
            f"{missing} of {len(latest)} item-runs have no slide under {wsi_root} and are unmeasured; "
            f"{FIXES['slide_missing']}"
        )
    if causes:
        named = ", ".join(f"{n} {cause}" for cause, n in causes.most_common())
        common = causes.most_common(1)[0][0]
        fix = FIXES.get(common, "fix the cause")
        parts.append(f"{causes.total()} of {len(latest)} item-runs unmeasured ({named}); {fix}")
    if not parts:
        return ""
    return "; ".join(parts) + "; then rerun the same command to measure them"


def _record(item: Item, run_index: int, run: RunOptions, **fields: object) -> ResultRecord:
    return ResultRecord.model_validate(
        {
            "key": item.key,
            "benchmark": item.benchmark,
            "run_index": run_index,
            "seed": item_seed(run.seed, item.key, run_index),
            "truth": item.truth,
            **fields,
        }
    )


def _is_missing(slide: Path | Exception) -> bool:
    """A slide with no file (giant.wsi.SlideMissing) is planned for: skipped or retried on resume; a
    path outside the root (SlidePathInvalid) is a slide error the user must fix."""
    return isinstance(slide, SlideMissing)


def _problem_record(item: Item, run_index: int, run: RunOptions, problem: Exception) -> ResultRecord:
    status, cause = (
        ("slide_missing", "slide_missing") if _is_missing(problem) else ("slide_error", "slide_unreadable")
    )
    return _record(item, run_index, run, status=status, reason=str(problem), cause=cause)


def _scored_record(
    item: Item,
    run_index: int,
    trajectory: Trajectory,
    rel: str | None,
    seconds: float,
    run: RunOptions,
) -> ResultRecord:
    totals = trajectory.totals
    fields: dict[str, object] = {
        "prediction": trajectory.answer,
        "answers": trajectory.patch_answers,
        "status": trajectory.status,
        "reason": trajectory.reason,
        "calls": totals.calls,
        "steps": totals.steps,
        "crops": totals.crops,
        **totals.token_counts(),
        "dollars": totals.cost_usd,
        "seconds": seconds,
        "trajectory": rel,
        "mpps": [region.mpp for region in trajectory.regions],
    }
    cause = trajectory_cause(trajectory)
    if cause is not None:
        fields["cause"] = cause
    if trajectory.status == "answered":
        scored = score_trajectory(trajectory, item, run.scoring)
        fields.update(outcome_fields(scored, item))
    return _record(item, run_index, run, **fields)
