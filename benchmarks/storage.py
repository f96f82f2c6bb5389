"""Bytes on disk per T=20 item-run, against the JPEG bytes the model saw.

A real job (scripts/run_eval.py as a subprocess) runs the openai provider's real SDK against a loopback
peer that answers like the Responses API (a crop at every call until call T, then the answer), on the
demo's synthetic slides, with a real MLflow sqlite store and file artifact root, the ledger and
record_requests on (`--no-record-requests`: off, as by default). Then every file under the job
folder, the MLflow store (database and artifacts) and the ledger is counted once per inode (a hard
link costs nothing), and the total per item-run is compared with the JPEG bytes of every image the
model was sent (each distinct image once).

The sqlite database is counted as its growth over an empty store (its schema is paid once per
campaign); the demo slides in the cache folder are not counted. Prints one line per location, the
per-item-run figure and the ratio; asserts nothing. `--base DIR` runs the same job from another
checkout (e.g. `git worktree add /tmp/storage-base <commit>`) first, so the two print side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the loopback Responses API lives in tests/

from tests.tracking.responses_peer import responses_peer  # noqa: E402

T = 20
ITEMS = 3


def unique_bytes(paths: Iterable[Path], seen: set[tuple[int, int]]) -> tuple[int, int]:
    """(bytes, of which JPEG bytes) of the regular files not counted yet (a hard link to a counted
    file adds nothing)."""
    total = jpeg = 0
    for path in paths:
        if path.is_file() and not path.is_symlink():
            stat = path.stat()
            if (stat.st_dev, stat.st_ino) not in seen:
                seen.add((stat.st_dev, stat.st_ino))
                total += stat.st_size
                jpeg += stat.st_size if path.suffix == ".jpg" else 0
    return total, jpeg


def files(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*")) if folder.is_dir() else []


def seen_jpeg_bytes(job: Path) -> tuple[int, int]:
    """(distinct images sent to the model, their JPEG bytes): the image hashes of the requests as sent
    (requests.jsonl) or, without that record, the regions of each trajectory.json."""
    hashes: set[str] = set()
    for log in job.rglob("requests.jsonl"):
        for line in log.read_text(encoding="utf-8").splitlines():
            hashes.update(part.split("sha256=", 1)[1][:64] for part in line.split("<image ")[1:])
    if not hashes:
        for record in job.rglob("trajectory.json"):
            regions = json.loads(record.read_text(encoding="utf-8"))["regions"]
            hashes.update(region["image"].removesuffix(".jpg") for region in regions)
    return len(hashes), sum(hashes_size(job, digest) for digest in hashes)


def hashes_size(job: Path, digest: str) -> int:
    found = next(job.rglob(f"{digest}.jpg"), None)
    return found.stat().st_size if found is not None else 0


class Measured(NamedTuple):
    label: str
    locations: dict[str, tuple[int, int]]  # name -> (bytes, of which JPEG files)
    images: int
    jpeg: int
    item_runs: int

    @property
    def total(self) -> int:
        return sum(size for size, _ in self.locations.values())

    def print(self) -> None:
        per = self.item_runs
        print(f"[{self.label}] T={T}, {per} item-runs, {self.images} distinct images sent")
        for name, (size, jpeg) in self.locations.items():
            print(
                f"  {name:<28} {size / per / 1e6:8.3f} MB per item-run (JPEG files {jpeg / per / 1e6:.3f} MB)"
            )
        print(f"  {'total':<28} {self.total / per / 1e6:8.3f} MB per item-run")
        print(f"  {'JPEG bytes the model saw':<28} {self.jpeg / per / 1e6:8.3f} MB per item-run")
        print(f"  ratio {self.total / self.jpeg:.2f}x (goal <= 2x)")


def run_job(
    checkout: Path, label: str, work: Path, base_url: str, empty_db: Path, *, record_requests: bool
) -> Measured:
    """One job of ITEMS items at T from `checkout`, measured."""
    out, cache = work / "job", work / "cache"
    db = work / "mlruns" / "mlflow.db"
    db.parent.mkdir(parents=True)
    db.write_bytes(empty_db.read_bytes())
    env = {
        **os.environ,
        "OPENAI_API_KEY": "sk-storage-benchmark",
        "MLFLOW_TRACKING_URI": f"sqlite:///{db}",
        "GIANT_CACHE_DIR": str(cache),
        "PYTHONPATH": str(checkout),  # the checkout's own giant package, not the installed one
    }
    command = [
        sys.executable,
        str(checkout / "scripts" / "run_eval.py"),
        "provider=openai",
        f"provider.base_url={base_url}",
        "provider.reasoning_effort=null",
        "dataset=demo",
        "agent=giant",
        f"agent.max_steps={T}",
        f"limit={ITEMS}",
        "concurrency=3",
        f"record_requests={str(record_requests).lower()}",
        "bootstrap_replicates=10",
        f"hydra.run.dir={out}",
    ]
    done = subprocess.run(command, cwd=checkout, env=env, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise SystemExit(f"{label}: the job failed\n{done.stderr[-3000:]}")
    seen: set[tuple[int, int]] = set()
    locations: dict[str, tuple[int, int]] = {}
    for name, folder in [
        ("job folder: trajectories", out / "trajectories"),
        ("ledger", cache / "ledger"),
        ("MLflow artifacts", db.parent / "artifacts"),
    ]:
        locations[name] = unique_bytes(files(folder), seen)
    rest = [path for path in files(out) if "trajectories" not in path.relative_to(out).parts]
    locations["job folder: other files"] = unique_bytes(rest, seen)
    locations["MLflow database growth"] = (max(0, db.stat().st_size - empty_db.stat().st_size), 0)
    images, jpeg = seen_jpeg_bytes(out)
    return Measured(label, locations, images, jpeg, ITEMS)


def empty_store(folder: Path) -> Path:
    """A migrated empty MLflow database, made once and copied for each job."""
    import mlflow

    db = folder / "empty.db"
    mlflow.MlflowClient(tracking_uri=f"sqlite:///{db}").search_experiments()
    return db


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, help="another checkout measured first as the baseline")
    parser.add_argument(
        "--record-requests",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="keep requests.jsonl in each trajectory folder (default on: the larger footprint)",
    )
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="giant-storage-") as tmp, responses_peer(T) as base_url:
        root = Path(tmp)
        empty_db = empty_store(root)
        checkouts = (
            [(args.base, "baseline"), (ROOT, "this checkout")] if args.base else [(ROOT, "this checkout")]
        )
        for n, (checkout, label) in enumerate(checkouts):
            results.append(
                run_job(
                    checkout.resolve(),
                    label,
                    root / f"run{n}",
                    base_url,
                    empty_db,
                    record_requests=args.record_requests,
                )
            )
    for measured in results:
        measured.print()
    if len(results) == 2:
        before, after = results
        print(f"total per item-run: {after.total / before.total:.2f}x the baseline's")


if __name__ == "__main__":
    main()
