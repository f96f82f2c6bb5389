"""Secrets written into settings (issue 39): credentials in a URL setting (`user:pass@`, a secret-named
query key) are redacted from the record (resolved_config.json, MLflow params), the tags, Hydra's files,
the job log and every other file of the job, while the request still goes to the real address; a key
pasted into `provider.api_key_env` is refused with one line that never shows it.

The real CLI against a loopback OpenAI-compatible server (tests.llm.open_server) and a real sqlite
MLflow store; the settings' record and the redaction rules in-process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from giant.confdir import compose
from giant.config import RunSettings
from giant.errors import ConfigError, RunStopped
from giant.secrets import looks_like_key, redact_url, redact_urls
from tests.helpers.cli import SCRIPT, TIMEOUT, Env
from tests.llm.open_server import OpenServer, serving

PASSWORD = "Hunter2-url-password-7f3a"  # the test's own made-up credential
QUERY_KEY = "q-key-5d1e9c0b7a"
PASTED_KEY = "sk-proj-Pasted0123456789abcdefXYZ"


def test_url_credentials_are_redacted_and_the_rest_kept() -> None:
    assert redact_url(f"https://alice:{PASSWORD}@gw.example.com:8443/v1?api-key={QUERY_KEY}&model=m#x") == (
        "https://***@gw.example.com:8443/v1?api-key=***&model=m#x"
    )
    assert redact_url("http://TOKEN123@h/v1") == "http://***@h/v1"
    assert redact_url("https://s.example/f?X-Amz-Signature=abc&sig=def&design=2&token=") == (
        "https://s.example/f?X-Amz-Signature=***&sig=***&design=2&token="
    )
    assert redact_url("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000/v1"
    line = f"cannot reach provider.base_url=http://u:{PASSWORD}@10.0.0.1/v1 (ConnectError)"
    assert redact_urls(line) == "cannot reach provider.base_url=http://***@10.0.0.1/v1 (ConnectError)"


def test_what_looks_like_a_key_and_what_is_a_variable_name() -> None:
    names = [
        "OPENAI_API_KEY",
        "MY_KEY",
        "GEMINI_API_KEY2",
        "AZURE_OPENAI_API_KEY_EASTUS2",
        "OpenaiKeyProd2024",
    ]
    keys = [PASTED_KEY, "AIzaSyD3aBcdEfGh1234567890abcdefghijklm", "hf_AbCdEf", "a" * 8 + "-b", "f" * 64]
    assert [looks_like_key(name) for name in names] == [False] * len(names)
    assert [looks_like_key(key) for key in keys] == [True] * len(keys)


def test_the_record_hides_url_credentials_the_settings_keep_them() -> None:
    url = f"http://alice:{PASSWORD}@127.0.0.1:9/v1?api-key={QUERY_KEY}"
    cfg = compose(
        "config",
        [
            "provider=openai_compatible",
            "provider.model=m",
            f"provider.base_url='{url}'",
            "tracking.enabled=false",
        ],
    )
    settings = RunSettings.from_config(cfg)
    assert settings.provider.base_url == url  # what the requests use
    record = settings.record()
    assert record["provider"]["base_url"] == "http://***@127.0.0.1:9/v1?api-key=***"
    assert PASSWORD not in str(record) and QUERY_KEY not in str(record)


def test_a_key_in_a_config_file_is_refused_unseen() -> None:
    cfg = compose("config", ["provider=openai", f"provider.api_key_env={PASTED_KEY}"])
    with pytest.raises(ConfigError) as err:
        RunSettings.from_config(cfg)
    assert PASTED_KEY not in str(err.value) and "put the key in the environment" in str(err.value)


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "GIANT_", "HYDRA_"))}
    env.update(GIANT_CACHE_DIR=str(tmp / "cache"), GIANT_OUTPUT_DIR=str(tmp / "outputs"))
    return env


def test_a_key_pasted_into_api_key_env_is_one_line_that_never_shows_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """In-process: the ConfigError the command line prints as its one line with exit 2."""
    job = Env(tmp_path, _env(tmp_path))
    with pytest.raises(ConfigError) as err:
        job.job(tmp_path / "job", "provider=openai", f"provider.api_key_env={PASTED_KEY}", "limit=1")
    lines = str(err.value).splitlines()
    assert len(lines) == 1 and "put the key in the environment" in lines[0], lines
    printed = capsys.readouterr()
    assert PASTED_KEY not in str(err.value) + printed.out + printed.err
    assert not (tmp_path / "job").exists()  # refused before the job folder was written


@pytest.mark.slow
@pytest.mark.subprocess_job
def test_url_credentials_reach_no_file_and_no_mlflow_value(tmp_path: Path) -> None:
    server = OpenServer("vllm")
    uri = f"sqlite:///{tmp_path / 'store' / 'mlflow.db'}"
    job = tmp_path / "job"
    with serving(server) as url:
        base_url = url.replace("http://", f"http://alice:{PASSWORD}@")
        proc = subprocess.run(
            [
                sys.executable,
                str(SCRIPT),
                "provider=openai_compatible",
                f"provider.model={server.models[0]}",
                f"provider.base_url={base_url}",
                "limit=1",
                "agent.max_steps=3",
                f"tracking.uri={uri}",
                f"hydra.run.dir={job}",
            ],
            cwd=tmp_path,
            env=_env(tmp_path),
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert server.chats > 0  # the requests went to the address with its credentials
    assert PASSWORD not in proc.stdout + proc.stderr
    leaks = [p for p in tmp_path.rglob("*") if p.is_file() and PASSWORD.encode() in p.read_bytes()]
    assert leaks == []
    assert (job / ".hydra" / "overrides.yaml").read_text().count("http://***@127.0.0.1") == 1
    client = MlflowClient(uri)
    (run,) = client.search_runs([client.get_experiment_by_name("giant").experiment_id])
    values = [*run.data.params.values(), *run.data.tags.values()]
    assert not [value for value in values if PASSWORD in value]
    assert run.data.params["provider.base_url"].startswith("http://***@127.0.0.1:")


def test_a_job_run_in_process_writes_no_url_credentials_into_its_folder(tmp_path: Path) -> None:
    """giant.evaluate writes the .hydra files itself: redacted as the command line's are (the address
    answers nothing, so the job stops at its preflight; what it wrote before is what is checked)."""
    job = tmp_path / "job"
    base_url = f"http://alice:{PASSWORD}@127.0.0.1:9/v1"
    with pytest.raises((ConfigError, RunStopped)):
        Env(tmp_path, _env(tmp_path)).job(
            job, "provider=openai_compatible", "provider.model=m", f"provider.base_url={base_url}",
            "limit=1", "tracking.enabled=false",
        )  # fmt: skip
    hydra_files = sorted((job / ".hydra").glob("*.yaml"))
    assert [path.name for path in hydra_files] == ["config.yaml", "hydra.yaml", "overrides.yaml"]
    assert not [path for path in hydra_files if PASSWORD in path.read_text()]
    assert "http://***@127.0.0.1:9/v1" in (job / ".hydra" / "overrides.yaml").read_text()
