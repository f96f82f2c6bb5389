"""The batch runner: every item x run as an agent episode, concurrently, within a dollar budget.

Each finished item-run is appended to results.jsonl at once (fsync'd) with its trajectory folder,
so a killed run loses nothing it paid for and a rerun resumes (giant.eval.resume). The summary is
computed from results.jsonl alone (giant.eval.summarize), whether the run finished, hit its budget
or was interrupted.

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
from collections import Counter, deque
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from giant.agent import run_episode
from giant.agent.limits import LimitExceeded
from giant.agent.modes import AgentConfig
from giant.core import Item
from giant.data.defects import Defect
from giant.data.slides import Located, SlideLocation, locate_all
from giant.errors import ConfigError
from giant.eval.annotations import Annotations
from giant.eval.budget import CallPricer, RunBudget
from giant.eval.causes import FIXES, CircuitBreaker, Halt, trajectory_cause
from giant.eval.gpu_cost import GpuRate, earlier_active_s
from giant.eval.limits import RunLimits
from giant.eval.navigation import item_navigation
from giant.eval.progress import Progress
from giant.eval.provenance import build_provenance
from giant.eval.rescore_records import rescore_records
from giant.eval.resume import carry_over
from giant.eval.run_options import RunOptions
from giant.eval.scoring import outcome_fields, score_trajectory
from giant.eval.summarize import summarize
from giant.interrupt import StopRequest
from giant.llm.batch import batch_member, batch_progress
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
    read_results,
    trajectory_dir,
    write_summary,
)
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


def check_items(items: Sequence[Item]) -> tuple[str, str]:
    """(dataset name, metric name); a run is one dataset scored with one metric."""
    if not items:
        raise ConfigError("the run has no items; check the dataset path and its filters")
    repeated = [key for key, n in Counter(item.key for item in items).items() if n > 1]
    if repeated:
        dup = repeated[0]
        raise ConfigError(
            f"item key {dup} appears more than once; each (benchmark, benchmark_id) must be unique"
        )
    metrics = {item.metric for item in items}
    benchmarks = sorted({item.benchmark for item in items})
    if len(metrics) > 1:
        raise ConfigError(
            f"the items mix metrics {sorted(metrics)} (tasks {benchmarks}); run one task per job"
        )
    return "+".join(benchmarks), metrics.pop()


async def _cut_after_grace(
    stop: StopRequest, episodes: set[asyncio.Task[ResultRecord | None]], grace_s: float
) -> None:
    """Once a stop is requested, cancel the episodes still running after `grace_s` seconds."""
    await stop.wait()
    if episodes:
        await asyncio.wait(set(episodes), timeout=grace_s)
    for episode in list(episodes):
        episode.cancel()


def _budget(
    limit: float | None, provider: Provider, pricing: Pricing | None, spent: float, tier: Tier
) -> RunBudget:
    """The run budget for this provider: its model's prices at the tier it is billed at, and its
    class's image-token rule."""
    image_tokens = getattr(type(provider), "image_tokens", None)
    return RunBudget(limit, CallPricer(provider.model, pricing, image_tokens, tier), spent=spent)


async def run_eval(  # noqa: PLR0913, PLR0915  the runner seam (issue 30: one services object, plan/workers/finish split)
    items: Sequence[Item],
    *,
    wsi_root: Path,
    provider: Provider,
    agent: AgentConfig,
    run: RunOptions,
    out_dir: Path,
    config_hash: str,
    dataset_hash: str,
    resume_from: Path | None = None,
    stop: StopRequest | None = None,
    dataset_defects: Sequence[Defect] = (),
    progress_bar: bool = True,
    stop_grace_s: float = STOP_GRACE_S,
    pricing: Pricing | None = None,
    tier: Tier = "standard",
    ledger: Ledger | None = None,
    located: dict[str, Located] | None = None,
    tools: Mapping[str, Tool[Any, Any, Any]] | None = None,
    gpu: GpuRate | None = None,
    annotations: Annotations | None = None,
) -> Summary:
    """Run every pending item-run, write results.jsonl, trajectories/ and summary.json in `out_dir`.

    `run` is the run part of the validated settings (giant.config.RunOptions), taken as it is.
    `stop` (giant.interrupt) ends the run early and cleanly; the summary then says it is incomplete;
    calls in flight then get `stop_grace_s` to return. `dataset_defects` (the loader's report on
    `items`) is recorded in summary.json. `pricing` prices each call's reservation against
    `run.budget_usd` (giant.eval.budget) at the rates of `tier`, the tier the provider is billed at;
    without it a call is expected to cost the mean so far.
    `ledger` is where the provider keeps its paid calls: the trajectories' images are linked to its.
    `tools` are the run's loaded tools (giant.tools.load_tools), handed to every episode.
    `located` is every item's slide as giant.data.slides.locate_all found it (found again if None).
    `gpu` is what the server's GPUs cost an hour, if priced: the run's cost is then its active time.
    `annotations` are the slides' annotations (dataset.annotations): each record then has its evidence.

    A fatal provider answer (key, model name, quota) or a streak of `run.breaker_after` item-runs that
    failed outside the model (giant.eval.causes) halts the run: no new item or call starts, and the
    summary says why (`setup_failure`)."""
    dataset, metric_name = check_items(items)
    slots = {(item.key, k) for item in items for k in range(run.runs_per_item)}
    out_dir.mkdir(parents=True, exist_ok=True)
    results_path = JobLayout(out_dir).results
    if resume_from is not None:
        rescore = partial(rescore_records, items=items, scoring=run.scoring)
        carried = carry_over(resume_from, out_dir, slots, retry_failed=run.retry_failed, rescore=rescore)
        print(carried.line())
        done = carried.kept
    elif results_path.is_file() and results_path.stat().st_size:
        raise ConfigError(
            f"{results_path} already exists; pass resume_from={out_dir} or use a new output directory"
        )
    else:
        done = {}

    started = time.perf_counter()
    earlier_s = earlier_active_s(resume_from)  # read before this invocation writes its own summary
    if located is None:
        located = await asyncio.to_thread(locate_all, wsi_root, items)  # once per item, off the event loop
    slides = {key: loc.path if isinstance(loc, SlideLocation) else loc for key, loc in located.items()}
    budget = _budget(run.budget_usd, provider, pricing, sum(r.dollars or 0.0 for r in done.values()), tier)
    todo = [(item, k) for k in range(run.runs_per_item) for item in items if (item.key, k) not in done]
    # Skipping is decided up front: a skipped item-run costs nothing and starts no episode.
    skipped = [(item, k) for item, k in todo if run.skip_missing and _is_missing(slides[item.key])]
    skipped_slots = {(item.key, k) for item, k in skipped}
    pending = deque((item, k) for item, k in todo if (item.key, k) not in skipped_slots)
    progress = Progress(total=len(slots), done=list(done.values()), enabled=progress_bar)
    batch_progress(provider, progress.note_batch)
    stop = stop if stop is not None else StopRequest()
    halt = Halt()
    breaker = CircuitBreaker(run.breaker_after)
    limits = RunLimits(budget, stop, halt)
    episodes: set[asyncio.Task[ResultRecord | None]] = set()
    stopped = ""
    with ResultsWriter(results_path) as writer, progress:
        for item, k in skipped:
            record = _record(item, k, run, status=SKIPPED, reason=str(slides[item.key]))
            writer.append(record)
            progress.update(record)

        async def worker() -> None:
            while pending and not stop.requested and not halt and not budget.exhausted():
                item, k = pending.popleft()
                episode = asyncio.create_task(
                    _run_one(
                        item,
                        k,
                        slides[item.key],
                        provider,
                        limits,
                        agent,
                        run,
                        out_dir,
                        ledger,
                        tools or {},
                        annotations,
                    )
                )
                # Counted before it starts: a batch round waits for this episode's first call too.
                episode.add_done_callback(batch_member(provider))
                episodes.add(episode)
                try:
                    record = await episode
                except asyncio.CancelledError:
                    this = asyncio.current_task()
                    if stop.requested and episode.cancelled() and this is not None and not this.cancelling():
                        return  # cut after the stop's grace period: no result line, as below
                    raise
                finally:
                    episodes.discard(episode)
                if record is None:
                    return  # cut by the stop or halt: no result line, the resumed run starts it again
                if record.status == "budget_exceeded" and not record.calls and budget.refusal:
                    pending.append((item, k))  # the run budget refused its first call: never started
                    if record.trajectory:
                        await asyncio.to_thread(shutil.rmtree, out_dir / record.trajectory, True)
                    continue
                await asyncio.to_thread(writer.append, record)
                progress.update(record)
                breaker.observe(record, halt)

        workers = [asyncio.create_task(worker()) for _ in range(min(run.concurrency, len(pending)))]
        cutter = asyncio.create_task(_cut_after_grace(stop, episodes, stop_grace_s))
        try:
            await asyncio.gather(*workers)  # a cancelled run_eval cancels the workers with it
        except asyncio.CancelledError:
            stopped = "interrupted: the run was cancelled"
            raise
        except Exception as exc:  # e.g. the disk is full: stop the other workers before closing
            stopped = f"stopped by an error: {type(exc).__name__}: {exc}"
            for task in workers:
                task.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            raise
        finally:
            cutter.cancel()
            records = read_results(results_path)
            left = len(slots - set(latest_by_slot(records)))
            if stop.requested and left and not stopped:
                stopped = f"interrupted by {stop.reason}; {left} item-runs left for the resumed run"
            if halt and not stopped:
                stopped = halt.reason
            reason = stopped or _budget_stop(budget, len(pending)) or _missing_slides(records, wsi_root)
            summary = summarize(
                records,
                items,
                dataset=dataset,
                metric_name=metric_name,
                runs_per_item=run.runs_per_item,
                seed=run.seed,
                scoring=run.scoring,
                provenance=build_provenance(config_hash, dataset_hash, located.values()),
                wall_s=time.perf_counter() - started,
                ran=progress.ran,
                earlier_s=earlier_s,
                gpu=gpu,
                incomplete_reason=reason,
                setup_failure=halt.reason,
                stop_cause=halt.cause,
                dataset_defects=dataset_defects,
            )
            write_summary(out_dir, summary)
    return summary


def _budget_stop(budget: RunBudget, not_started: int) -> str:
    if not budget.exhausted() or budget.limit is None:
        return ""
    why = budget.refusal or f"${budget.spent:.4f} spent of ${budget.limit:g}"
    return f"budget stop: {why}; {not_started} item-runs not started"


def _missing_slides(records: Sequence[ResultRecord], wsi_root: Path) -> str:
    """The incomplete reason of a run that scored missing slides as failures ("" when none were)."""
    latest = latest_by_slot(list(records)).values()
    missing = sum(record.status == "slide_missing" for record in latest)
    if not missing:
        return ""
    return (
        f"{missing} of {len(latest)} item-runs have no slide under {wsi_root} and count as failures; "
        f"{FIXES['slide_missing']}"
    )


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


async def _run_one(  # noqa: PLR0913  one item-run's inputs, all from run_eval's scope
    item: Item,
    run_index: int,
    slide: Path | Exception,
    provider: Provider,
    limits: RunLimits,
    agent: AgentConfig,
    run: RunOptions,
    out_dir: Path,
    ledger: Ledger | None,
    tools: Mapping[str, Tool[Any, Any, Any]],
    annotations: Annotations | None,
) -> ResultRecord | None:
    """The item-run's result line; None when the run's stop or halt cut it (giant.agent.limits)."""
    if isinstance(slide, Exception):
        return _problem_record(item, run_index, run, slide)
    rel = trajectory_dir(item.key, run_index)
    dest = out_dir / rel
    if dest.exists():  # left by an unfinished or retried attempt: never mix two episodes' files
        await asyncio.to_thread(shutil.rmtree, dest)
    start = time.perf_counter()
    try:  # run_episode enforces agent.item_timeout_s itself
        trajectory = await run_episode(
            item,
            slide,
            provider,
            agent,
            out_dir=dest,
            run_index=run_index,
            seed=item_seed(run.seed, item.key, run_index),
            record_requests=run.record_requests,
            ledger=ledger,
            limits=limits,
            tools=tools,
            thresholds=run.navigation,
        )
    except LimitExceeded:  # only a stop or a halt leaves run_episode: the run ends, not the item
        return None
    except Exception as exc:  # a bug in the episode must not lose the item or stop the run
        reason = f"run_episode raised {type(exc).__name__}: {exc}"
        return _record(item, run_index, run, status=RUNNER_ERROR, reason=reason)
    navigation = await asyncio.to_thread(item_navigation, trajectory, annotations, run.navigation)
    seconds = time.perf_counter() - start
    record = _scored_record(item, run_index, trajectory, rel if dest.is_dir() else None, seconds, run)
    return record.model_copy(update={"navigation": navigation})


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
