"""A small campaign in batch mode against the loopback batch stub, run in-process by the tests or as
a subprocess (`python -m tests.llm.batch_job ...`) that the kill -9 test kills mid-batch."""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path

from giant.llm.batch import batch_collector
from giant.llm.config import provider_settings
from giant.llm.factory import build_provider
from giant.llm.ledger import Ledger
from giant.record.summary import Summary
from tests.eval.runner_fixtures import SLIDES, evaluate, make_items

BATCH = {"batch": True, "batch_wait_s": 30.0, "batch_poll_s": 0.05, "max_retries": 2}


def settings(name: str, root_url: str, **extra: object) -> object:
    base_url = f"{root_url}/v1" if name == "openai" else root_url
    return provider_settings(name, base_url=base_url, **{**BATCH, **extra})


async def campaign(
    name: str,
    root_url: str,
    wsi_root: Path,
    work: Path,
    n_items: int,
    *,
    resume: bool = False,
    out: str = "out",
    progress: bool = False,
    **extra: object,
) -> Summary:
    """`n_items` items, all running at once, each call through a batch; the ledger under `work`."""
    cfg = settings(name, root_url, **extra)
    ledger = Ledger(work / "ledger")
    batches = batch_collector(cfg, ledger)  # type: ignore[arg-type]
    provider = build_provider(cfg, ledger=ledger, batches=batches)  # type: ignore[arg-type]
    items = make_items(n_items, SLIDES)
    return await evaluate(
        items,
        wsi_root,
        provider,
        work / out,
        batches=batches,
        concurrency=n_items,
        resume_from=work / out if resume else None,
        progress=progress,
    )


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, stream=sys.stdout)
    name, root_url, wsi, work, n = sys.argv[1:6]
    asyncio.run(campaign(name, root_url, Path(wsi), Path(work), int(n)))
