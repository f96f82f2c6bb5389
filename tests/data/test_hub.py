"""The MultiPathQA CSV from the Hugging Face Hub: run_eval without the Hub, a silent Hub, a cached copy.

Every Hub here is on 127.0.0.1 (tests/hub.py): the refused port and the silent server stand for a
machine without Hub access, the stub for one that had it once.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest

from giant.data import hub
from giant.data.hub import HubFile
from giant.data.multipathqa import CSV_COLUMNS
from giant.errors import ConfigError
from tests.hub import (
    FILE,
    REPO,
    HubStub,
    assert_one_line_failure,
    closed_port,
    hub_env,
    run_script,
    silent_hub,
)

RUN_EVAL = ("run_eval.py", "dataset=tcga", "dry_run=true")
# Loads the CSV through the Hub (cache folder argv[1]) and prints what it read.
LOAD = (
    "import sys; from pathlib import Path; from giant.data.multipathqa import HubFile, load_multipathqa; "
    f"ds = load_multipathqa(HubFile({REPO!r}, {FILE!r}, Path(sys.argv[1]))); "
    "print(len(ds.items), ds.content_hash)"
)


@pytest.mark.subprocess_job
def test_run_eval_without_the_hub_fails_at_once_in_one_line(tmp_path: Path) -> None:
    run = run_script(*RUN_EVAL, hub_url=closed_port(), tmp=tmp_path)
    assert_one_line_failure(run, "run_eval", reason_ends="Connection refused")


@pytest.mark.subprocess_job
@pytest.mark.slow
def test_run_eval_gives_up_on_a_silent_hub_within_the_bound(tmp_path: Path) -> None:
    with silent_hub() as url:
        run = run_script(*RUN_EVAL, hub_url=url, tmp=tmp_path)
    assert_one_line_failure(run, "run_eval", reason_ends="within 5 s; HF_HUB_ETAG_TIMEOUT can raise that")


def _load(hub_url: str, tmp: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", LOAD, str(tmp / "cache")],
        capture_output=True,
        text=True,
        timeout=60,
        env=hub_env(hub_url, tmp, **env),
    )


@pytest.mark.subprocess_job
def test_a_cached_copy_is_used_without_the_hub(tmp_path: Path) -> None:
    header = ",".join(CSV_COLUMNS)
    csv = f"{header}\ntcga,1,a.svs,1,\"['x', 'y']\",True,True,True,accuracy,f1,Which one?\n"
    with HubStub(csv.encode()).serving() as stub:
        online = _load(stub.url, tmp_path)
    assert online.returncode == 0, online.stderr
    assert online.stdout.startswith("1 ") and stub.requests >= 2  # a HEAD request, then the download
    for offline in (_load(closed_port(), tmp_path), _load(stub.url, tmp_path, HF_HUB_OFFLINE="1")):
        assert offline.returncode == 0, offline.stderr
        assert offline.stdout == online.stdout


def test_reason_is_shortened_by_whole_words() -> None:
    words = [f"word{i}" for i in range(60)]
    reason = hub._reason(OSError(" ".join(words) + "\nsecond line"))
    assert len(reason) <= hub.REASON_WIDTH and reason.endswith(" ...")
    assert reason.removesuffix(" ...").split() == words[: len(reason.split()) - 1]


def test_hub_records_reach_the_root_handlers_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """huggingface_hub's own stderr handler beside the root's (Hydra's) printed each warning twice."""
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)  # fails without a request
    library = logging.getLogger("huggingface_hub")
    before = list(library.handlers)  # an earlier download in this process may have removed it already
    library.addHandler(logging.StreamHandler())  # what huggingface_hub adds when it is imported
    assert logging.getLogger().handlers  # pytest's, standing for Hydra's
    try:
        with pytest.raises(ConfigError, match=r"\(HF_HUB_OFFLINE is set\) and no copy is cached"):
            hub.download(HubFile(REPO, FILE, tmp_path / "hf"), instead="dataset.csv_path")
        assert library.handlers == [] and library.propagate
    finally:
        library.handlers = before
