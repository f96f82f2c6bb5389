"""Fetch throughput against the loopback GDC stub: one stream at a time vs 4 concurrent streams.

    python benchmarks/fetch_throughput.py [--files 8] [--mb 16] [--cap-mbs 20]

Two servers: unthrottled loopback (what the client itself costs: reading, writing, md5) and one
that caps each stream at --cap-mbs, as a distant server does per connection, which is where
concurrent downloads pay off. Prints MB/s and the concurrent/single ratio; asserts nothing.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the stub lives in tests/

import numpy as np
from omegaconf import OmegaConf

from giant.config import CONF_DIR
from giant.core import Item
from giant.data.fetch.plan import build_plan
from giant.data.fetch.run import http_client, run_plan
from giant.data.fetch.settings import FetchSettings
from tests.fetch.stub import Stub, StubServer


def measure(stub: Stub, items: list[Item], concurrency: int, folder: Path) -> float:
    """MB/s for fetching every item into a fresh folder."""
    block = OmegaConf.to_container(OmegaConf.load(CONF_DIR / "fetch.yaml").fetch)
    assert isinstance(block, dict)
    settings = FetchSettings.model_validate({**block, "gdc_url": stub.gdc_url, "concurrency": concurrency})
    root = Path(tempfile.mkdtemp(dir=folder))
    with http_client(settings) as client:
        plan = build_plan(items, root, client, settings)
        began = time.perf_counter()
        report = run_plan(plan, client, settings)
        elapsed = time.perf_counter() - began
    assert report.ok, report.render()
    return sum(o.bytes for o in report.outcomes) / elapsed / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--mb", type=int, default=16, help="size of each file in MB")
    parser.add_argument("--cap-mbs", type=float, default=20.0, help="per-stream cap of the throttled server")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        files = {}
        for n in range(args.files):
            uuid = f"00000000-0000-0000-0000-{n:012d}"
            files[uuid] = folder / uuid
            files[uuid].write_bytes(rng.bytes(args.mb * 1_000_000))
        items = [
            Item(
                benchmark="tcga",
                benchmark_id=str(n),
                image_path=f"slide{n}.svs",
                prompt="q",
                options=("a", "b"),
                truth=1,
                metric="accuracy",
                file_id=uuid,
            )
            for n, uuid in enumerate(files)
        ]
        print(f"{args.files} files x {args.mb} MB over 127.0.0.1 (md5-verified, written to disk)")
        for label, rate in (
            ("unthrottled", None),
            (f"capped at {args.cap_mbs:g} MB/s per stream", args.cap_mbs),
        ):
            with StubServer(Stub(gdc=files, rate=rate * 1e6 if rate else None)) as stub:
                single = measure(stub, items, 1, folder)
                concurrent = measure(stub, items, 4, folder)
            print(
                f"{label}: single stream {single:.1f} MB/s, 4 concurrent {concurrent:.1f} MB/s, "
                f"ratio {concurrent / single:.2f}x"
            )


if __name__ == "__main__":
    main()
