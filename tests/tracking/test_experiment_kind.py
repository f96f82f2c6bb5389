"""giant's experiments carry MLflow's experiment-kind tag (model development: the UI's runs table,
not its GenAI overview), new ones and older ones that lack it, in a real sqlite store; and
`python -m giant.tracking.store URI ADDRESS` (`make ui`) prints where each experiment's runs table is."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from giant.config import TrackingSettings, shipped
from giant.tracking.mlflow_logger import open_experiment
from giant.tracking.names import EXPERIMENT_KIND_TAG, MODEL_DEVELOPMENT
from giant.tracking.store import main


@pytest.fixture
def store(tmp_path: Path, empty_store_db: Path) -> str:
    db = tmp_path / "mlflow.db"
    shutil.copyfile(empty_store_db, db)
    return f"sqlite:///{db}"


def _kind(uri: str, experiment_id: str) -> str | None:
    return MlflowClient(uri).get_experiment(experiment_id).tags.get(EXPERIMENT_KIND_TAG)


def test_a_new_experiment_is_model_development(store: str) -> None:
    _, experiment_id = open_experiment(shipped(TrackingSettings, uri=store))
    assert _kind(store, experiment_id) == MODEL_DEVELOPMENT


def test_a_new_store_gets_a_tagged_experiment(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'fresh' / 'mlflow.db'}"
    _, experiment_id = open_experiment(shipped(TrackingSettings, uri=uri, experiment="mine"))
    assert _kind(uri, experiment_id) == MODEL_DEVELOPMENT


def test_an_older_experiment_is_tagged_and_a_chosen_kind_is_kept(store: str) -> None:
    client = MlflowClient(store)
    older = client.create_experiment("giant")  # made by a giant from before the tag
    chosen = client.create_experiment("chosen", tags={EXPERIMENT_KIND_TAG: "genai_development"})
    _, found = open_experiment(shipped(TrackingSettings, uri=store))
    assert found == older and _kind(store, older) == MODEL_DEVELOPMENT
    open_experiment(shipped(TrackingSettings, uri=store, experiment="chosen"))
    assert _kind(store, chosen) == "genai_development"


def test_make_ui_prints_each_experiments_runs_table(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    client, experiment_id = open_experiment(shipped(TrackingSettings, uri=store))
    client.create_run(experiment_id)
    client.create_experiment("empty")  # no runs: no line, and none for the store's empty "Default"
    assert main([store, "http://127.0.0.1:5001/"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"make ui: runs of experiment giant: http://127.0.0.1:5001/#/experiments/{experiment_id}/runs"
        "?workflowType=machine_learning"
    ]
    assert main([store]) == 0 and capsys.readouterr().out == ""  # without the address, as before
