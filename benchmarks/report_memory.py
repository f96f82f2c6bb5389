"""Peak memory and the time of a job's last stages against the number of items (issue 23).

A job's last stages read every item back: the viewer pages (trajectory.html per item-run) and the run
report (report.html, with a tissue fraction for every crop). Whatever they keep per item grows with
the task, so a TCGA-sized job must peak about where a small one does. This builds a synthetic task of
distinct slides, one per item as in TCGA (cached under --work, built once), runs a real job through
scripts/run_eval.py as a subprocess (random provider, T=5, MLflow on a fresh sqlite store) for each
--items, and prints the job's peak RSS, its RSS peak before the last stages, and the seconds and share
of the job's time of the viewer pages and the report. Navigation metrics are on, with annotations for
every slide (half QuPath GeoJSON files, half pyramidal label masks, built once beside the slides; off
with --no-annotations), and the time the navigation and evidence code took (summed over the episodes'
threads, so an upper bound of what it added) is printed as a share of the job. Asserts nothing.
benchmarks/navigation_overhead.py runs the same job with the navigation code off ($REPORT_MEMORY_NAVIGATION)
against on, for the time it adds.

The stages are timed from outside the code under test: the job runs in this file's `--job` mode, which
wraps giant.job's stage functions with timers before handing over to run_eval.py, so the same numbers
come from any checkout. `--base DIR` runs the same jobs from another checkout first (e.g.
`git archive HEAD | tar -x -C /tmp/base`), so the two print side by side.

    python benchmarks/report_memory.py [--items 40 221] [--width 6000] [--height 4500] [--base DIR]
"""

from __future__ import annotations

import argparse
import csv
import importlib
import json
import os
import resource
import runpy
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parents[1]
BENCHMARK = "report_memory"
LABELS = [f"type {chr(ord('A') + i)}{j}" for i in range(6) for j in range(5)]  # 30 options, as TCGA
QUESTION = "Which tumour type is on this slide?"
# The last stages, timed where they live (module, name): the viewer pages are looked up in their module
# at the call, so the timer there is the one the job runs.
STAGE_FUNCTIONS = (("giant.tracking.viewer", "write_job_pages"), ("giant.job", "_write_run_report"))
STAGES = tuple(name for _, name in STAGE_FUNCTIONS)
# The navigation code, timed where the job calls it: the episode's record, the runner's evidence, the
# summary's aggregate (module, name).
NAVIGATION = (
    ("giant.agent.episode", "navigation"),
    ("giant.eval.runner", "item_navigation"),
    ("giant.eval.summarize", "summarize_navigation"),
)
TIMES_ENV = "REPORT_MEMORY_TIMES"  # where the --job mode writes its timings
# "off": the --job mode replaces the navigation code with no-ops (benchmarks/navigation_overhead.py)
NAVIGATION_ENV = "REPORT_MEMORY_NAVIGATION"


HEADER = "{:>6} {:>8} {:>10} {:>7} {:>7} {:>6} {:>7} {:>6} {:>7} {:>6} {:>9}".format(
    "items", "peak", "pre-stage", "job", "viewer", "share", "report", "share", "nav", "share", "hit rate"
)


class Measured(NamedTuple):
    items: int
    peak_mb: float  # the whole job
    before_mb: float  # before the viewer pages: the episodes, MLflow and everything else
    job_s: float  # run_job, from the loaded config to the summary line
    stages_s: dict[str, float]
    navigation_s: float  # the navigation code's time, summed over threads
    hit_rate: float | None  # summary.json's, as a check that the evidence was measured
    cpu_s: float = 0.0  # the job process's user + system CPU time: other load on the machine barely moves it
    navigation_cpu_s: float = 0.0  # the navigation code's CPU time, summed over threads

    def line(self) -> str:
        viewer, report = (self.stages_s[name] for name in STAGES)
        share = 100 / self.job_s
        hits = "-" if self.hit_rate is None else f"{self.hit_rate:.2f}"
        return (
            f"{self.items:>6} {self.peak_mb:>8.0f} {self.before_mb:>10.0f} {self.job_s:>7.1f} "
            f"{viewer:>7.1f} {share * viewer:>5.1f}% {report:>7.1f} {share * report:>5.1f}% "
            f"{self.navigation_s:>7.1f} {share * self.navigation_s:>5.1f}% {hits:>9}"
        )


def build_task(folder: Path, items: int, width: int, height: int) -> Path:
    """`items` rows, each on its own synthetic slide (the slides are kept for later runs)."""
    from giant.data.multipathqa import CSV_COLUMNS
    from giant.wsi.synthetic import write_synthetic_slide

    slides = folder / f"slides-{width}x{height}"
    rows = []
    for index in range(1, items + 1):
        name = f"slide_{index:03d}.svs"
        if not (slides / name).is_file():
            partial = slides / f".{name}"
            write_synthetic_slide(partial, width, height, seed=index, quality=60)
            partial.rename(slides / name)
        rows.append(
            {
                "benchmark_name": BENCHMARK,
                "benchmark_id": str(index),
                "image_path": name,
                "answer": str(1 + index % len(LABELS)),
                "options": repr(LABELS),
                "image_exists": "True",
                "patch_exists": "True",
                "is_valid": "True",
                "metric_type": "balanced_accuracy",
                "file_id": name,
                "prompt": QUESTION,
            }
        )
    path = folder / f"task-{items}-{width}x{height}.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=CSV_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return path


def build_annotations(folder: Path, items: int, width: int, height: int) -> Path:
    """One annotation per slide, a target square near the slide's centre: a QuPath GeoJSON file for
    odd slides, a pyramidal label mask (levels 1, 1/4, 1/16; class 3 on the target) for even ones."""
    import numpy as np
    import tifffile

    target = folder / f"annotations-{width}x{height}"
    target.mkdir(parents=True, exist_ok=True)
    x0, y0, side = width // 3, height // 3, min(width, height) // 4
    for index in range(1, items + 1):
        stem = f"slide_{index:03d}"
        if index % 2:
            path = target / f"{stem}.geojson"
            if not path.is_file():
                ring = [[x0, y0], [x0 + side, y0], [x0 + side, y0 + side], [x0, y0 + side], [x0, y0]]
                feature = {
                    "type": "Feature",
                    "geometry": {"type": "Polygon", "coordinates": [ring]},
                    "properties": {"classification": {"name": "target"}},
                }
                path.write_text(json.dumps({"type": "FeatureCollection", "features": [feature]}))
            continue
        path = target / f"{stem}_mask.tiff"
        if path.is_file():
            continue
        with tifffile.TiffWriter(target / f".{path.name}") as tif:
            for level, factor in enumerate((1, 4, 16)):
                values = np.zeros((height // factor, width // factor, 3), dtype=np.uint8)
                values[y0 // factor : (y0 + side) // factor, x0 // factor : (x0 + side) // factor, 0] = 1
                reduced = int(level > 0)  # OpenSlide's generic TIFF reads such pages as the pyramid
                tif.write(values, tile=(256, 256), photometric="rgb", compression="zlib", subfiletype=reduced,
                          metadata=None)  # fmt: skip
        (target / f".{path.name}").rename(path)
    return target


def run_job(
    checkout: Path,
    csv_path: Path,
    wsi_root: Path,
    items: int,
    work: Path,
    annotations: Path | None,
    navigation: bool = True,
) -> Measured:
    """One job from `checkout` in a fresh process, its own cache folder and MLflow store; without
    `navigation` the job runs with the navigation code replaced by no-ops (the time it adds)."""
    out, times = work / "job", work / "times.json"
    env = {
        **os.environ,
        "MLFLOW_TRACKING_URI": f"sqlite:///{work / 'mlruns' / 'mlflow.db'}",
        "GIANT_CACHE_DIR": str(work / "cache"),
        "PYTHONPATH": str(checkout),  # the checkout's own giant package, not the installed one
        TIMES_ENV: str(times),
        NAVIGATION_ENV: "on" if navigation else "off",
    }
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--job",
        str(checkout / "scripts" / "run_eval.py"),
        "provider=random",
        f"dataset.benchmark={BENCHMARK}",
        f"dataset.csv_path={csv_path}",
        f"dataset.wsi_root={wsi_root}",
        "agent=giant",
        "agent.max_steps=5",
        "tracking.enabled=true",
        "resume=false",
        f"hydra.run.dir={out}",
    ]
    if annotations is not None:
        command.append(f"dataset.annotations.path={annotations}")
    log = work / "job.log"  # a file, not a pipe: nothing reads a pipe while the job runs
    with log.open("wb") as sink:
        child = subprocess.Popen(command, cwd=checkout, env=env, stdout=sink, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(child.pid, 0)  # this child's own peak, not the largest of all children
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(
            f"{checkout}: the {items}-item job failed\n{log.read_text(errors='replace')[-3000:]}"
        )
    record = json.loads(times.read_text(encoding="utf-8"))
    return Measured(
        items=items,
        peak_mb=usage.ru_maxrss / 1024,
        before_mb=record["before_mb"],
        job_s=record["run_job"],
        stages_s={name: record[name] for name in STAGES},
        navigation_s=record.get("navigation", 0.0),
        hit_rate=_hit_rate(out),
        cpu_s=usage.ru_utime + usage.ru_stime,
        navigation_cpu_s=record.get("navigation_cpu", 0.0),
    )


def _hit_rate(out: Path) -> float | None:
    navigation = json.loads((out / "summary.json").read_text(encoding="utf-8")).get("navigation") or {}
    return (navigation.get("hit_rate") or {}).get("point")


def job_mode(script: str, overrides: list[str]) -> None:
    """Run scripts/run_eval.py in this process with giant.job's stages timed; the timings and the RSS
    peak before the first stage go to the file named by $REPORT_MEMORY_TIMES."""

    record: dict[str, float] = {name: 0.0 for name in (*STAGES, "run_job")}

    def timed(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if name == STAGES[0]:
                record["before_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                record[name] += time.perf_counter() - started

        return wrapper

    for module, name in (*STAGE_FUNCTIONS, ("giant.job", "run_job")):
        owner = importlib.import_module(module)
        setattr(owner, name, timed(name, getattr(owner, name)))
    lock = threading.Lock()

    def counted(function: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started, cpu = time.perf_counter(), time.thread_time()
            try:
                return function(*args, **kwargs)
            finally:
                with lock:
                    record["navigation"] = record.get("navigation", 0.0) + time.perf_counter() - started
                    record["navigation_cpu"] = record.get("navigation_cpu", 0.0) + time.thread_time() - cpu

        return wrapper

    off = os.environ.get(NAVIGATION_ENV) == "off"
    for module, name in NAVIGATION:  # a checkout without them (--base) has nothing to time
        loaded = importlib.import_module(module)
        if hasattr(loaded, name):
            setattr(loaded, name, counted(_nothing if off else getattr(loaded, name)))
    sys.argv = [script, *overrides]
    try:
        runpy.run_path(script, run_name="__main__")
    finally:
        Path(os.environ[TIMES_ENV]).write_text(json.dumps(record), encoding="utf-8")


def _nothing(*args: Any, **kwargs: Any) -> None:
    """The navigation code switched off: no record, no evidence, no aggregate."""
    return None


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--items", type=int, nargs="+", default=[40, 221])
    parser.add_argument("--width", type=int, default=6000)
    parser.add_argument("--height", type=int, default=4500)
    parser.add_argument(
        "--work", type=Path, default=ROOT / ".cache" / "bench-report-memory", help="slide cache"
    )
    parser.add_argument("--base", type=Path, help="another checkout to measure first, in the same run")
    parser.add_argument(
        "--no-annotations", action="store_true", help="run without dataset.annotations (no evidence metrics)"
    )
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    tasks = {n: build_task(args.work, n, args.width, args.height) for n in args.items}
    wsi_root = args.work / f"slides-{args.width}x{args.height}"
    annotations = (
        None
        if args.no_annotations
        else build_annotations(args.work, max(args.items), args.width, args.height)
    )
    ready = time.perf_counter() - started
    print(f"{max(args.items)} slides of {args.width}x{args.height} ready in {ready:.0f} s")
    checkouts = [("base", args.base.resolve())] if args.base else []
    checkouts.append(("this checkout", ROOT))
    results: dict[str, list[Measured]] = {}
    for label, checkout in checkouts:
        results[label] = []
        for n in args.items:
            with tempfile.TemporaryDirectory(prefix="report-memory-") as tmp:
                notes = annotations if label != "base" else None  # a base checkout has no such setting
                results[label].append(run_job(checkout, tasks[n], wsi_root, n, Path(tmp), notes))
    print(
        "random provider, T=5, MLflow on, navigation metrics on"
        + ("" if annotations is None else " with annotations (half GeoJSON, half pyramidal masks)")
        + "; RSS in MB, times in s, shares of run_job's time"
    )
    for label, measured in results.items():
        print(f"[{label}]")
        print(HEADER)
        for m in measured:
            print(m.line())
        small, large = min(measured), max(measured)
        print(
            f"peak at {large.items} items minus at {small.items}: {large.peak_mb - small.peak_mb:+.0f} MB "
            f"({large.peak_mb / small.peak_mb:.2f}x)"
        )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--job"]:
        job_mode(sys.argv[2], sys.argv[3:])
    else:
        main()
