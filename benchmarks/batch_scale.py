"""Whole-task concurrency in batch mode: memory and open files of hundreds of episodes in flight at once.

With `provider.batch=true` a campaign sets `concurrency` to its number of item-runs, so that one batch
per step round carries them all: every episode stays open while it waits on its round. This runs such a
campaign through giant's runner and the real SDK (openai by default) against the loopback Files/Batches
stub of tests/llm/batch_stub.py (served from this parent process, so that the stub's copies of the
requests do not count), each case in a child process of its own, and prints per case:
- rounds and batches: one batch per round is expected, each with one request per item;
- requests per batch;
- peak RSS: the child's high-water mark (VmHWM) and its growth over the RSS just before the run;
- peak open file descriptors (/proc/self/fd, sampled every 5 ms during the run) and their growth;
- peak slides open at once (giant.wsi.slide.shared_slide) and the wall time of the run.

Two slide layouts: `shared` (the items spread over --slides synthetic slides, as the k runs and the
questions of one slide share it) and `distinct` (one slide file per item, copies of those slides, as
most MultiPathQA tasks have). Each is run `after` (as giant runs now) and, unless --after-only,
`before`: the episode code as it was before this benchmark was written, patched back in the child.
Then each episode opened its own slide (one open file and OpenSlide handle per episode, not per
slide), built and held its own crop tissue mask (a 1024-px mask with an int64 integral image, ~7 MB),
and held its overview's decoded pixels until it ended (2.25 MB at S=1000), all while waiting on its
round. Prints numbers, asserts nothing.

    python benchmarks/batch_scale.py                      # 300 items at concurrency 300
    python benchmarks/batch_scale.py --items 100 --after-only --layouts shared
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the batch stub and the runner fixtures live in tests/

from giant.wsi.synthetic import write_synthetic_slide  # noqa: E402
from tests.llm.batch_stub import BatchStub, serving  # noqa: E402

KEY = "sk-bench-batch-0123456789"
MB = 1024 * 1024


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _patch_before() -> None:
    """The episode as it was: its own slide handle, its own crop tissue mask with the integral, and
    the decoded pixels of its overview (and of each region until it is dropped)."""
    import giant.agent.episode as episode
    import giant.agent.episode_state as episode_state
    import giant.agent.images as images
    from giant.wsi.encode import encode_jpeg
    from giant.wsi.guides import draw_guides
    from giant.wsi.slide import Slide
    from giant.wsi.tissue import CROP_MASK_SIDE, CropTissue, TissueMask

    def render_with_pixels(slide: Any, box: Any, size: int, fill: Any, guides: int, quality: int) -> Any:
        region = slide.read_region(box, size, fill)
        image = draw_guides(region.image, region.read, guides) if guides > 0 else region.image
        return images.Rendered(region=region, encoded=encode_jpeg(image, quality))

    class Unshared(CropTissue):
        def __init__(self, mask: TissueMask) -> None:  # no super(): it keeps the TissueMask whole
            self.mask = mask

        def fraction(self, box: Any) -> float:
            return self.mask.fraction(box)

    episode.shared_slide = Slide.open  # type: ignore[assignment]
    images._render = render_with_pixels
    episode_state.crop_tissue = lambda slide: Unshared(TissueMask.from_slide(slide, CROP_MASK_SIDE))


def child(args: argparse.Namespace) -> None:
    """One case in this process: print one JSON line of measurements."""
    import asyncio

    from giant.agent.modes import parse_agent
    from giant.llm.batch import batch_collector
    from giant.llm.config import provider_settings
    from giant.llm.factory import build_provider
    from giant.llm.ledger import Ledger
    from giant.wsi.slide import open_slides
    from tests.eval.runner_fixtures import evaluate, make_items

    if args.mode == "before":
        _patch_before()
    wsi = Path(args.wsi)
    names = sorted(p.name for p in wsi.glob("*.svs"))
    work = Path(args.work)
    base_url = f"{args.url}/v1" if args.provider == "openai" else args.url
    cfg = provider_settings(
        args.provider, base_url=base_url, batch=True, batch_wait_s=3600.0, batch_poll_s=0.05, max_retries=2
    )
    ledger = Ledger(work / "ledger")
    batches = batch_collector(cfg, ledger)
    provider = build_provider(cfg, ledger=ledger, batches=batches)
    agent = parse_agent({"mode": "giant", "max_steps": args.steps, "crop_size": args.crop_size})
    items = make_items(args.items, names)
    base = {"rss": _status_kb("VmRSS"), "fds": _fds()}
    peak = {"rss": 0, "fds": 0, "slides": 0}
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak["rss"] = max(peak["rss"], _status_kb("VmRSS"))
            peak["fds"] = max(peak["fds"], _fds())
            peak["slides"] = max(peak["slides"], open_slides())
            done.wait(0.005)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.perf_counter()
    summary = asyncio.run(
        evaluate(
            items, wsi, provider, work / "out", agent=agent, batches=batches, concurrency=args.concurrency
        )
    )
    wall = time.perf_counter() - started
    done.set()
    sampler.join()
    batches = getattr(provider, "batches", None)
    print(
        json.dumps(
            {
                "scored": summary.n_scored,
                "incomplete": summary.incomplete_reason,
                "rounds": batches.round if batches is not None else 0,
                "wall_s": wall,
                "rss_base_kb": base["rss"],
                "rss_peak_kb": max(peak["rss"], 1),
                "hwm_kb": _status_kb("VmHWM"),
                "fds_base": base["fds"],
                "fds_peak": peak["fds"],
                "slides_peak": peak["slides"],
                "distinct": len({item.image_path for item in items}),
            }
        )
    )


def run_case(args: argparse.Namespace, layout: str, mode: str, wsi: Path, work: Path) -> dict[str, Any]:
    stub = BatchStub(answer_at=args.steps, polls=1)
    with serving(stub) as url:
        command = [sys.executable, __file__, "--child", "--mode", mode, "--url", url]
        command += ["--wsi", str(wsi), "--work", str(work), "--provider", args.provider]
        command += ["--items", str(args.items), "--concurrency", str(args.concurrency)]
        command += ["--steps", str(args.steps), "--crop-size", str(args.crop_size)]
        env = {**os.environ, "OPENAI_API_KEY": KEY, "ANTHROPIC_API_KEY": KEY, "PYTHONPATH": str(ROOT)}
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{layout}/{mode} failed:\n{done.stderr[-4000:]}")
    found = json.loads(done.stdout.strip().splitlines()[-1])
    found["per_batch"] = [len(batch["requests"]) for batch in stub.batches]
    found["twice"] = sum(count > 1 for count in stub.received.values())
    return found


def _slides(args: argparse.Namespace, root: Path) -> dict[str, Path]:
    """The layouts' slide folders: `shared` holds --slides synthetic slides, `distinct` one copy per item."""
    shared = root / "shared"
    for seed in range(args.slides):
        write_synthetic_slide(shared / f"slide{seed}.svs", args.width, args.height, seed=seed)
    distinct = root / "distinct"
    distinct.mkdir()
    for i in range(args.items):
        shutil.copyfile(shared / f"slide{i % args.slides}.svs", distinct / f"item{i:04d}.svs")
    return {"shared": shared, "distinct": distinct}


def _row(layout: str, mode: str, found: dict[str, Any]) -> str:
    per_batch = found["per_batch"]
    shown = ", ".join(map(str, per_batch[:6])) + (", ..." if len(per_batch) > 6 else "")
    return (
        f"{layout:9} {mode:6} {found['distinct']:>5} {found['scored']:>6} {found['rounds']:>6} "
        f"{len(per_batch):>7}  {shown:22} {found['hwm_kb'] / 1024:>8.0f} "
        f"{(found['rss_peak_kb'] - found['rss_base_kb']) / 1024:>+8.0f} {found['fds_peak']:>5} "
        f"{found['fds_peak'] - found['fds_base']:>+5} {found['slides_peak']:>6} {found['wall_s']:>7.1f} "
        f"{found['twice']:>5}" + (f"  (incomplete: {found['incomplete']})" if found["incomplete"] else "")
    )


def main() -> None:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("--items", type=int, default=300)
    parser.add_argument("--concurrency", type=int, default=None, help="default: --items (the whole task)")
    parser.add_argument("--slides", type=int, default=2, help="synthetic slides of the shared layout")
    parser.add_argument("--layouts", default="shared,distinct", help="shared, distinct or both")
    parser.add_argument("--after-only", action="store_true", help="skip the `before` rows")
    parser.add_argument("--provider", choices=["openai", "anthropic"], default="openai")
    parser.add_argument("--steps", type=int, default=3, help="T: the stub's model answers at step T")
    parser.add_argument("--crop-size", type=int, default=1000, help="S")
    parser.add_argument("--width", type=int, default=4000)
    parser.add_argument("--height", type=int, default=3000)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--mode", default="after", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--wsi", help=argparse.SUPPRESS)
    parser.add_argument("--work", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.concurrency = args.concurrency or args.items
    if args.child:
        child(args)
        return
    if not Path("/proc/self/fd").is_dir():
        raise SystemExit("batch_scale.py counts open files and RSS in /proc (Linux)")
    layouts = [layout.strip() for layout in args.layouts.split(",") if layout.strip()]
    modes = ["after"] if args.after_only else ["before", "after"]
    print(
        f"batch mode ({args.provider}), {args.items} items at concurrency {args.concurrency}, "
        f"T={args.steps}, S={args.crop_size}, {args.width}x{args.height} synthetic slides; "
        "one child process per row"
    )
    print(
        f"{'layout':9} {'code':6} {'slides':>5} {'scored':>6} {'rounds':>6} {'batches':>7}  "
        f"{'requests per batch':22} {'peak RSS':>8} {'RSS +MB':>8} {'fds':>5} {'+fds':>5} {'open':>6} "
        f"{'wall s':>7} {'twice':>5}"
    )
    with tempfile.TemporaryDirectory(prefix="giant-batch-scale-") as tmp:
        root = Path(tmp)
        folders = _slides(args, root)
        for layout in layouts:
            for mode in modes:
                work = root / f"{layout}-{mode}"
                found = run_case(args, layout, mode, folders[layout], work)
                print(_row(layout, mode, found), flush=True)
                shutil.rmtree(work, ignore_errors=True)
    print(
        "peak RSS: the child's VmHWM in MB; RSS +MB: sampled peak over the RSS just before the run; fds: "
        "peak open descriptors (+fds: over those before the run); open: peak slides open through "
        "shared_slide (0 before: each episode opened its own); twice: requests submitted twice"
    )


if __name__ == "__main__":
    main()
