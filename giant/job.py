"""One job, end to end: settings -> items -> provider -> runner -> MLflow.

scripts/run_eval.py (giant.cli) and giant.evaluate only hand the composed config and the job's context
(giant.context) here; everything a job does lives in this module so it can be read top to bottom and
tested without the CLI.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from omegaconf import DictConfig, OmegaConf

from giant.config import RunSettings
from giant.context import JobContext
from giant.core import Item
from giant.errors import EXIT_INCOMPLETE, EXIT_SETUP, EXIT_UNTRACKED, ConfigError, RunStopped
from giant.eval.items import JobData
from giant.record import OVERVIEWS_DIR, TRAJECTORIES_DIR, JobLayout, write_resolved_config
from giant.record.layout import CONFIG_ARTIFACTS, HYDRA_DIR
from giant.record.summary import Summary
from giant.tracking.names import OUTPUT_DIR_TAG, OVERRIDES_TAG

if TYPE_CHECKING:  # imported where used: a dry run never loads MLflow
    from collections.abc import Callable

    from giant.data.slides import Located
    from giant.eval.annotation_settings import AnnotationSettings
    from giant.interrupt import StopRequest
    from giant.record.read import JobRecord
    from giant.record.trajectory import Trajectory
    from giant.tracking.mlflow_logger import JobRun
    from giant.tracking.viewer import Outlines

log = logging.getLogger(__name__)

RESUME_DIR = "resume"  # under paths.cache_dir: run key -> output directory and MLflow run id


def load_data(settings: RunSettings) -> JobData:
    """The items through the loader `dataset.source` names (giant.data.loaders), then those `item_ids`
    and `limit` pick."""
    from giant.data.loaders import LOADERS

    ds = settings.dataset
    loaded = LOADERS[ds.source].load(
        ds,
        wsi_root=ds.wsi_root or settings.paths.wsi_root,
        cache_dir=settings.paths.cache_dir,
        check_slides=not settings.run.dry_run,
    )
    items = select_items(loaded.items, limit=settings.run.limit, item_ids=settings.run.item_ids)
    chosen = {item.key for item in items}
    # A kept or repaired defect matters when its item runs; a dropped one always shaped the item set.
    defects = [d for d in loaded.defects if d.resolution == "dropped" or d.key in chosen]
    annotations = ds.annotations
    if annotations.path is None and loaded.annotations is not None:  # the demo's painted markers
        annotations = annotations.model_copy(update={"path": loaded.annotations})
    return JobData(items, loaded.wsi_root, loaded.dataset_hash, defects, loaded.digests, annotations)


def select_items(items: Sequence[Item], *, limit: int | None, item_ids: Sequence[str] | None) -> list[Item]:
    """`item_ids` (keys "benchmark/id" or bare ids) in the dataset's order, then the first `limit`."""
    chosen = list(items)
    if item_ids is not None:
        wanted = {str(item_id) for item_id in item_ids}
        chosen = [item for item in chosen if item.key in wanted or item.benchmark_id in wanted]
        found = {item.key for item in chosen} | {item.benchmark_id for item in chosen}
        unknown = sorted(wanted - found)
        if unknown:
            benchmarks = ", ".join(sorted({item.benchmark for item in items}))
            raise ConfigError(
                f"item_ids: {', '.join(unknown[:5])} not among the loaded items (benchmark {benchmarks}); "
                "use benchmark/id keys of that benchmark, or choose another with dataset.benchmark=..."
            )
    return chosen[:limit] if limit is not None else chosen


def run_job(cfg: DictConfig, context: JobContext) -> Summary | None:
    """Run one job in `context.output_dir`; returns its summary (None for a dry run). With
    `server=...` the job first starts its own model server, on a port, with provider.base_url pointed
    at it, and stops it when it ends."""
    settings = RunSettings.from_config(cfg)  # checked whole before a server starts
    if cfg.get("server") is None or settings.run.dry_run:
        return _run(settings, context)
    from giant.llm.serve import ServerSettings, served

    server = ServerSettings.from_data(OmegaConf.to_container(cfg.server, resolve=True)).on_a_port()
    provider = settings.provider.model_copy(update={"base_url": server.base_url})
    with served(server, settings.provider.model, context.output_dir):
        return _run(settings.model_copy(update={"provider": provider}), context)


def _run(settings: RunSettings, context: JobContext) -> Summary | None:
    """One job, or one job per task when the loaded items are scored by several metrics (a task file
    or MultiPathQA without dataset.benchmark): each task then runs as `dataset.benchmark=<task>` would,
    in its own folder `<job folder>/<task>/`, with its own summary, report and MLflow run. Every task's
    data is checked before the first one starts, so a refusal leaves no MLflow run. Returns the job's
    summary (None for a dry run or a job split into tasks: each task's is in its folder)."""
    data = prerequisites(settings)
    tasks = split_tasks(settings, data)
    if not tasks:
        return _run_task(settings, data, context)
    from giant.eval.items import check_items

    jobs = [(task, by_task, load_data(by_task)) for task, by_task in tasks]
    if not settings.run.dry_run:  # as the run will: every task's items and slides, before any run
        for _, by_task, task_data in jobs:
            check_items(task_data.items)
            check_slides(task_data, by_task)
    print(
        f"{len(jobs)} tasks scored by different metrics: one job per task ({', '.join(t for t, *_ in jobs)})"
    )
    stops: list[RunStopped] = []
    for task, by_task, task_data in jobs:
        folder = context.output_dir / task
        _copy_hydra_files(context.output_dir, folder)
        task_context = replace(
            context, output_dir=folder, overrides=(*context.overrides, f"dataset.benchmark={task}")
        )
        try:
            _run_task(by_task, task_data, task_context)
        except RunStopped as stop:  # the other tasks still run; the job ends with the worst code
            print(f"{task}: {stop}")
            stops.append(stop)
    if stops:
        worst = max(stops, key=lambda stop: stop.code)
        raise RunStopped(
            f"{len(stops)} of {len(jobs)} tasks did not complete; the first: {worst}", worst.code
        )
    return None


def split_tasks(settings: RunSettings, data: JobData) -> list[tuple[str, RunSettings]]:
    """(task, its settings) for each task of a job whose items mix metrics and that chose no task;
    [] for a job of one metric (it runs as one job, as before). With `item_ids`, each task keeps the
    chosen items of its own (a task with none is not run); `limit` applies to each task again."""
    if settings.dataset.benchmark or len({item.metric for item in data.items}) < 2:
        return []
    tasks = list(dict.fromkeys(item.benchmark for item in data.items))  # in the file's order
    split = []
    for task in tasks:
        update: dict[str, object] = {"dataset": settings.dataset.model_copy(update={"benchmark": task})}
        if settings.run.item_ids is not None:  # the chosen items of this task (keys are unique)
            keys = [item.key for item in data.items if item.benchmark == task]
            update["run"] = settings.run.model_copy(update={"item_ids": keys})
        split.append((task, settings.model_copy(update=update)))
    return split


def _copy_hydra_files(out_dir: Path, folder: Path) -> None:
    """A task's folder is a job folder of its own: it gets the job's composed config (.hydra)."""
    import shutil

    source = out_dir / HYDRA_DIR
    if source.is_dir():
        shutil.copytree(source, folder / HYDRA_DIR, dirs_exist_ok=True)


def _run_task(settings: RunSettings, data: JobData, context: JobContext) -> Summary | None:
    """One job of one metric, in `context.output_dir` (its key and data already checked: prerequisites)."""
    out_dir = context.output_dir
    if not settings.run.dry_run:
        from giant.tools import load_tools

        # the weights load once, or one line says why not
        tools = load_tools(settings.enabled_tools(), settings.tools)
    from giant.eval.items import check_items

    check_items(data.items)  # the dry run refuses what the run would, before any MLflow run
    if settings.run.dry_run:
        _dry_run(settings, data, out_dir)
        return None

    from giant.eval.annotations import Annotations
    from giant.eval.gpu_cost import GpuRate
    from giant.eval.resume import ResumeIndex, run_key
    from giant.eval.runner import RunServices, run_eval
    from giant.llm.batch import batch_collector
    from giant.llm.config import SdkSettings
    from giant.llm.factory import build_provider, provider_class
    from giant.llm.ledger import LEDGER_DIR, Ledger
    from giant.llm.pricing import Pricing

    located = check_slides(data, settings)  # before any MLflow run or provider call
    from giant.data.slides import SlideLocation
    from giant.eval.geometry import check_geometry

    check_geometry(settings.agent, (loc.path for loc in located.values() if isinstance(loc, SlideLocation)))
    annotations = Annotations.of(data.annotations)  # a wrong folder is said before anything starts
    # Only the SDK providers pay for calls, so only they keep them (and the trajectories link its images).
    paid = isinstance(settings.provider, SdkSettings)
    ledger = Ledger(settings.paths.cache_dir / LEDGER_DIR, replay=settings.run.ledger) if paid else None
    batches = batch_collector(settings.provider, ledger)
    provider = build_provider(settings.provider, ledger=ledger, batches=batches)
    config_hash = settings.config_hash()
    key = run_key(config_hash, data.dataset_hash)
    index = ResumeIndex(settings.paths.cache_dir / RESUME_DIR)
    previous = index.lookup(key) if settings.run.resume else None
    resume_from = Path(previous.out_dir) if previous else None
    from giant.eval.context_fit import check_server
    from giant.eval.resume import left_to_run

    slots = {(item.key, k) for item in data.items for k in range(settings.run.runs_per_item)}
    if left_to_run(resume_from, slots, retry_failed=settings.run.retry_failed):  # else nothing is sent
        check_server(settings.provider, settings.agent, provider)  # a self-hosted server, asked first

    job = _start_tracking(settings, data, context, previous.mlflow_run_id if previous else None)
    index.record(key, out_dir, job.run_id if job else None)
    if resume_from is not None:
        print(f"resuming run key {key} from {resume_from}")

    from giant.interrupt import Interrupted, stop_on_signals
    from giant.tracking.mlflow_logger import tracked

    # SIGTERM only asks the runner to stop; tracked() then closes the MLflow run KILLED, and the CLI
    # prints how to resume (and, under submitit, hands the job over to be requeued).
    with stop_on_signals() as stop, tracked(job):
        services = RunServices(
            provider,
            ledger=ledger,
            batches=batches,
            pricing=Pricing.load(settings.provider.pricing_file),
            tier=settings.provider.billed_tier(),
            image_tokens=provider_class(settings.provider.name).image_tokens,
            tools=tools,
            gpu=GpuRate.of(settings.provider),
            annotations=annotations,
            stop=stop,
        )
        record = asyncio.run(
            run_eval(
                replace(data, located=located),
                services,
                agent=settings.agent,
                run=settings.run,
                out_dir=out_dir,
                config_hash=config_hash,
                resume_from=resume_from,
            )
        )
        record.config = settings.record()
        summary = record.summary
        if stop.requested and not summary.complete:  # a stop after the last item changes nothing
            raise Interrupted(stop)
        outputs = write_outputs(
            settings, record, run_id=job.run_id if job else None, annotations=data.annotations
        )
        untracked = None
        if job is not None:
            untracked = _finish_tracking_within(job, settings, record, outputs, stop)
    _report(settings, summary, out_dir, job.run_id if job else None)
    _end(settings, summary, untracked)
    return summary


def _end(settings: RunSettings, summary: Summary, untracked: str | None) -> None:
    """A job that did not end complete and logged raises its one line and exit code."""
    if summary.setup_failure:
        raise RunStopped(f"{summary.setup_failure}{_provider_hint(settings, summary)}", EXIT_SETUP)
    if not summary.complete:
        also = f"; {untracked}" if untracked else ""
        raise RunStopped(f"incomplete: {summary.incomplete_reason}{also}", EXIT_INCOMPLETE)
    if untracked:
        raise RunStopped(untracked, EXIT_UNTRACKED)


def _provider_hint(settings: RunSettings, summary: Summary) -> str:
    """The provider setting behind a halt, named: the line then says which variable or value to fix."""
    from giant.llm.config import SdkSettings

    provider = settings.provider
    if summary.stop_cause == "key" and isinstance(provider, SdkSettings) and provider.api_key_env:
        return f" (the key is read from ${provider.api_key_env})"
    if summary.stop_cause == "model_name":
        return f" (provider.model={provider.model})"
    return ""


def wsi_root_setting(settings: RunSettings) -> str:
    """The setting a user changes to move the slide folder: dataset.wsi_root follows paths.wsi_root
    unless set apart from it, so a message names the one that was set."""
    root = settings.dataset.wsi_root
    return "dataset.wsi_root" if root is not None and root != settings.paths.wsi_root else "paths.wsi_root"


def prerequisites(settings: RunSettings) -> JobData:
    """What a job needs before anything else, checked in one pass so that one missing thing does not
    hide another: the provider's key (not for a dry run, which calls nothing) and the dataset (its
    question file read and every row validated by the dataset's loader, load_data). Every problem is
    in the one ConfigError raised, a line each."""
    problems: list[str] = []
    if not settings.run.dry_run:
        from giant.llm.factory import check_credentials

        try:
            check_credentials(settings.provider)
        except ConfigError as err:
            problems.append(str(err))
    try:
        data = load_data(settings)
    except ConfigError as err:
        problems.append(str(err))
    if problems:
        raise ConfigError("\n".join(problems))
    return data


def check_data(settings: RunSettings) -> JobData:
    """The job as a run checks it before any MLflow run or provider call (prerequisites), and every
    item's slide looked up (check_slides; a dry run reports missing slides in its own report). A sweep
    runs the same check for each of its jobs before it starts (giant.cli.sweep_check), dry or not, so a
    problem the jobs share is said once; a ConfigError names each problem on its own line."""
    data = prerequisites(settings)
    if not settings.run.dry_run:
        check_slides(data, settings)
    return data


def check_slides(data: JobData, settings: RunSettings) -> dict[str, Located]:
    """Every item's slide, looked up once before the run starts. No slide found at all is a setup
    error (the root is wrong or empty), not 100% failures; some missing is one warning with the count,
    and the run then marks them (giant.eval.runner)."""
    from giant.data.slides import SlideLocation, locate_all

    located = locate_all(data.wsi_root, data.items)
    missing = [problem for problem in located.values() if not isinstance(problem, SlideLocation)]
    if located and len(missing) == len(located):
        setting = wsi_root_setting(settings)
        raise ConfigError(
            f"no slide of this job was found under {setting}={data.wsi_root} ({missing[0]}); "
            f"point {setting} at the slides or fetch them with scripts/fetch_slides.py"
        )
    if missing:
        then = (
            "they are skipped (skip_missing=true)"
            if settings.run.skip_missing
            else "their item-runs are unmeasured and the run is marked incomplete; pass skip_missing=true "
            "to drop them, or add the slides and rerun"
        )
        log.warning(
            "%d of %d items have no slide under %s (e.g. %s); %s",
            len(missing),
            len(located),
            data.wsi_root,
            missing[0],
            then,
        )
    return located


def _dry_run(settings: RunSettings, data: JobData, out_dir: Path) -> None:
    from giant.agent.modes import mode_of
    from giant.eval.dryrun import dry_run
    from giant.eval.resume import ResumeIndex, run_key
    from giant.llm.pricing import Pricing

    agent = settings.agent
    # A pilot of the same run key (the index a real run resumes from) forecasts the full run.
    key = run_key(settings.config_hash(), data.dataset_hash)
    pilot = ResumeIndex(settings.paths.cache_dir / RESUME_DIR).lookup(key)
    report = dry_run(
        data.items,
        wsi_root=data.wsi_root,
        agent=settings.agent,
        provider=settings.provider,
        pricing=Pricing.load(settings.provider.pricing_file),
        runs_per_item=settings.run.runs_per_item,
        out_dir=out_dir,
        pilot=Path(pilot.out_dir) if pilot else None,
        cell=f"{mode_of(agent).run_name(agent, settings.dataset.name)} ({settings.provider.model})",
        concurrency=settings.run.concurrency,
    )
    print(report.render())
    print(f"dry run report: {JobLayout(out_dir).dry_run}")
    if report.missing or report.unreadable:  # the run itself would leave these items unmeasured
        unusable = len(report.missing) + len(report.unreadable)
        slides = f"{len(report.missing)} missing, {len(report.unreadable)} unreadable"
        raise RunStopped(
            f"dry run: {unusable} of {report.n_items} items have no usable slide ({slides}) under "
            f"{wsi_root_setting(settings)}={data.wsi_root}; fetch them with scripts/fetch_slides.py or "
            "point the setting at them",
            EXIT_INCOMPLETE,
        )


def _start_tracking(
    settings: RunSettings, data: JobData, context: JobContext, resume_run_id: str | None
) -> JobRun | None:
    if not settings.tracking.enabled:
        return None
    from giant.eval.provenance import git_commit
    from giant.tracking.mlflow_logger import JobRun, SweepInfo, job_tags

    sweep = SweepInfo.read(context.sweep_dir) if context.sweep_dir is not None else None
    tags = job_tags(
        settings,
        data.items,
        dataset_hash=data.dataset_hash,
        git_commit=git_commit(),
        sweep_id=sweep.parent_run_id if sweep else "",
        digests=data.digests,
    )
    tags[OVERRIDES_TAG] = " ".join(context.overrides)[:5000]
    tags[OUTPUT_DIR_TAG] = str(context.output_dir)
    job = JobRun.start(settings, tags=tags, sweep=sweep, resume_run_id=resume_run_id)
    if data.digests is not None:
        job.log_dataset(data.digests)
    return job


def write_outputs(
    settings: RunSettings,
    record: JobRecord,
    *,
    run_id: str | None = None,
    annotations: AnnotationSettings | None = None,
) -> dict[str, Path]:
    """The job folder's derived files, made from the job's record in memory and written with or without
    MLflow (tracking only uploads them): artifact path -> file. The trajectory.html pages go into the
    trajectory folders; `run_id` is the MLflow run they are logged to (their images then also load in
    MLflow's artifact view); `annotations` (the job's, JobData.annotations) draw the target regions
    under the crop boxes."""
    from giant.tracking.artifacts import write_confusion_matrix, write_defects, write_predictions
    from giant.tracking.viewer import write_job_pages

    summary, layout = record.summary, _layout(record)
    files: dict[str, Path] = {}
    predictions = write_predictions(layout, record.records)
    files[predictions.name] = predictions
    if summary.metric_name == "balanced_accuracy":
        title = f"{summary.benchmark} (n={summary.n_items})"
        matrix = write_confusion_matrix(layout, record.records, title=title)
        if matrix is not None:
            files[matrix.name] = matrix
    defects = write_defects(summary.dataset_defects, layout)
    if defects is not None:
        files[defects.name] = defects
    resolved = write_resolved_config(layout.out_dir, settings.record())
    files[f"{CONFIG_ARTIFACTS}/{resolved.name}"] = resolved
    outlines = _outlines(annotations)  # each slide's annotations read once (giant.eval.annotations)
    write_job_pages(layout.out_dir, mlflow_run_id=run_id, outlines=outlines, job=record)
    report = _write_run_report(record, outlines, run_id)
    if report is not None:
        files[report.name] = report
        files.update({f"{OVERVIEWS_DIR}/{page.name}": page for page in layout.overviews.glob("*.html")})
    return files


def _outlines(settings: AnnotationSettings | None) -> Callable[[Trajectory], Outlines] | None:
    """A trajectory's slide's annotated target regions, for its page (None: no annotations)."""
    from giant.eval.annotations import Annotations

    found = (
        Annotations.of(settings)
        if settings is not None and settings.path and settings.path.is_dir()
        else None
    )
    if found is None:
        return None
    return lambda traj: found.outlines(Path(traj.slide_path), traj.slide_width, traj.slide_height)


def _layout(record: JobRecord) -> JobLayout:
    assert record.folder is not None  # a record the job made has its folder
    return JobLayout(record.folder)


def finish_tracking(job: JobRun, settings: RunSettings, record: JobRecord, outputs: dict[str, Path]) -> None:
    summary, layout = record.summary, _layout(record)
    job.log_summary(summary)
    files = {path.name: path for path in (layout.results, layout.summary)}
    files.update({log_file.name: log_file for log_file in layout.out_dir.glob("*.log")})  # Hydra's job log
    files.update(outputs)
    files.update({f"{CONFIG_ARTIFACTS}/hydra/{path.name}": path for path in layout.hydra_files})
    job.log_artifacts(files, {TRAJECTORIES_DIR: layout.trajectories})
    if settings.tracking.traces:
        from giant.tracking.traces import log_traces

        try:
            log_traces(job, layout.out_dir, record)
        except Exception as exc:  # a view of the record, like the report: never worth failing a run over
            log.warning("MLflow traces: not all written (%s); rerun the same command to add them", exc)
    job.finish("FAILED" if summary.setup_failure else "FINISHED")  # a halted run is never FINISHED


def _finish_tracking_within(
    job: JobRun, settings: RunSettings, record: JobRecord, outputs: dict[str, Path], stop: StopRequest
) -> str | None:
    """finish_tracking, waiting at most tracking.finish_timeout_s for a server that stopped answering
    (giant.tracking.deadline): None once MLflow has the job, else the line that says where the results
    are and how to log them. Ctrl-C and SIGTERM end the wait at once; the run is then left to the rerun,
    which reattaches it (RUNNING, as the server last saw it)."""
    from giant.interrupt import Interrupted
    from giant.secrets import redact_urls
    from giant.tracking.deadline import (
        TrackingUnreachable,
        bound_mlflow_http,
        restore_env,
        server_probe,
        within,
    )

    tracking = settings.tracking
    bounded = bound_mlflow_http(tracking.finish_timeout_s)  # the worker, if abandoned, gives up soon too
    try:
        within(
            tracking.finish_timeout_s,
            lambda: finish_tracking(job, settings, record, outputs),
            answers=server_probe(tracking.uri),
            stop=stop,
        )
    except TrackingUnreachable as exc:
        job.abandoned = True  # tracked() must not wait on the server again to close the run
        return (
            f"MLflow at {redact_urls(tracking.uri)} {exc} when the job ended "
            f"(tracking.finish_timeout_s={tracking.finish_timeout_s:g}): the job's records are in "
            f"{record.folder} but not in MLflow; rerun the same command once the server answers to log "
            "them (no item is run again)"
        )
    except (KeyboardInterrupt, Interrupted):
        job.abandoned = True  # the worker may still be inside a call to the server
        raise
    restore_env(bounded)  # only once the worker ended: an abandoned one keeps the bounded values
    return None


def _write_run_report(
    record: JobRecord, outlines: Callable[[Trajectory], Outlines] | None, run_id: str | None
) -> Path | None:
    """report.html at the top of the job folder (giant.report), after the pages it links to, with the
    overviews of slides several runs looked at (`outlines` under their boxes)."""
    from giant.report import write_report

    layout = _layout(record)
    try:
        return write_report(layout.out_dir, outlines, run_id, job=record)
    except Exception as exc:  # like the viewer pages: a report is never worth losing a run over
        log.warning("report: no %s for %s (%s)", layout.report.name, layout.out_dir, exc)
        return None


def _report(settings: RunSettings, summary: Summary, out_dir: Path, run_id: str | None) -> None:
    """The summary line. A halted run, or one with unmeasured item-runs, states no score: its metric
    would count failures outside the model as the model's."""
    where = f"; MLflow run {run_id}" if run_id else ""
    cost = summary.totals.cost_usd
    dollars = "unknown" if cost is None else f"${cost:.4f}"
    from giant.record.headline import method_label, navigation_phrase

    agent = settings.agent
    head = f"{summary.benchmark} {method_label(agent.mode, agent.max_steps, agent.crop_size)}:"
    if summary.setup_failure:
        print(f"{head} STOPPED, no score ({dollars} spent) -> {out_dir}{where}")
        return

    missing = f", {summary.n_slides_missing} slides missing" if summary.n_slides_missing else ""
    if summary.n_unmeasured:  # a score would count the unmeasured item-runs as the model's failures
        print(
            f"{head} INCOMPLETE, no score: {summary.n_unmeasured} item-runs unmeasured (n={summary.n_items}"
            f"{missing}, {dollars}) -> {out_dir}{where}"
        )
        return
    done = "" if summary.complete else " INCOMPLETE"
    m = summary.metric
    navigation = navigation_phrase(summary.navigation)
    looked = f"; {navigation} (all in {JobLayout(out_dir).report.name})" if navigation else ""
    print(
        f"{head} {summary.metric_name} {m.point:.3f} [{m.ci_low:.3f}, {m.ci_high:.3f}] "
        f"(point estimate [95% bootstrap interval]; n={summary.n_items}{missing}, {dollars}){done}"
        f"{looked} -> {out_dir}{where}"
    )
