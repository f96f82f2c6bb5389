"""The time navigation metrics and annotations add to a job with the offline provider (issue 35: at most
10%).

The same job as benchmarks/report_memory.py (one distinct 6000 x 4500 synthetic slide per item, random
provider, T=5, MLflow on, the slides and annotations built once under --work) runs in pairs on this
checkout: "on" with navigation metrics and every slide annotated (half QuPath GeoJSON, half pyramidal
label masks), "off" with no annotations and the navigation code replaced by no-ops, alternating which
goes first so a machine that slows down mid-run weighs on both. It prints each job's wall time (run_job,
from the loaded config to the summary line) and CPU time (the job process's user + system seconds,
which other load on a shared machine barely moves), the on/off ratios of the medians, and the
navigation code's own time summed over the episodes' threads, as wall and as CPU seconds (what it
adds). Asserts nothing.

    python benchmarks/navigation_overhead.py [--items 40] [--pairs 3] [--work DIR]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from report_memory import ROOT, Measured, build_annotations, build_task, run_job


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--items", type=int, default=40)
    parser.add_argument("--pairs", type=int, default=3, help="on/off pairs, each order in turn")
    parser.add_argument("--width", type=int, default=6000)
    parser.add_argument("--height", type=int, default=4500)
    parser.add_argument(
        "--work", type=Path, default=ROOT / ".cache" / "bench-report-memory", help="slide cache"
    )
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    task = build_task(args.work, args.items, args.width, args.height)
    wsi_root = args.work / f"slides-{args.width}x{args.height}"
    annotations = build_annotations(args.work, args.items, args.width, args.height)
    print(f"{args.items} slides of {args.width}x{args.height} ready in {time.perf_counter() - started:.0f} s")

    def job(on: bool) -> Measured:
        with tempfile.TemporaryDirectory(prefix="navigation-overhead-") as tmp:
            return run_job(ROOT, task, wsi_root, args.items, Path(tmp), annotations if on else None, on)

    print(f"{args.items} items, random provider, T=5, MLflow on; wall and CPU times in s")
    head = ("pair", "on wall", "off wall", "on/off", "on cpu", "off cpu", "on/off", "nav wall", "nav cpu")
    head += ("hits",)
    print("{:>4} {:>8} {:>8} {:>6} {:>7} {:>7} {:>6} {:>8} {:>7} {:>5}".format(*head))
    ons: list[Measured] = []
    offs: list[Measured] = []
    for pair in range(args.pairs):
        first_on = pair % 2 == 0
        a = job(first_on)
        b = job(not first_on)
        on, off = (a, b) if first_on else (b, a)
        ons.append(on)
        offs.append(off)
        hits = "-" if on.hit_rate is None else f"{on.hit_rate:.2f}"
        print(
            f"{pair + 1:>4} {on.job_s:>8.1f} {off.job_s:>8.1f} {on.job_s / off.job_s:>6.3f} "
            f"{on.cpu_s:>7.1f} {off.cpu_s:>7.1f} {on.cpu_s / off.cpu_s:>6.3f} "
            f"{on.navigation_s:>8.2f} {on.navigation_cpu_s:>7.2f} {hits:>5}",
            flush=True,
        )

    def median(values: list[float]) -> float:
        return statistics.median(values)

    wall_on, wall_off = median([m.job_s for m in ons]), median([m.job_s for m in offs])
    cpu_on, cpu_off = median([m.cpu_s for m in ons]), median([m.cpu_s for m in offs])
    nav_wall, nav_cpu = median([m.navigation_s for m in ons]), median([m.navigation_cpu_s for m in ons])
    print(
        f"medians: wall on {wall_on:.1f} s / off {wall_off:.1f} s = {wall_on / wall_off:.3f}; "
        f"CPU on {cpu_on:.1f} s / off {cpu_off:.1f} s = {cpu_on / cpu_off:.3f}"
    )
    print(
        f"navigation code: {nav_wall:.2f} s wall summed over threads ({100 * nav_wall / wall_on:.1f}% of "
        f"the job's wall time, an upper bound), {nav_cpu:.2f} s CPU ({100 * nav_cpu / cpu_on:.1f}% of CPU)"
    )


if __name__ == "__main__":
    main()
