"""Jobs of one sweep log the same questions as an MLflow input dataset at the same moment (a SLURM
array's tasks start together). MLflow's server looks the dataset up and then inserts it, so two jobs
can both miss it and one insert fails on the unique key: that job must still log its input, not die.
Real server (the session's `mlflow ui`, tests/helpers/ui.py, in an experiment of this test's own), real
sqlite store, one thread per job."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from mlflow import MlflowClient

from giant.data.digest import DatasetDigests
from giant.tracking.mlflow_logger import JobRun
from tests.helpers.ui import Ui

JOBS = 6
ROUNDS = 6  # a new dataset per round: each round is a fresh race for its insert


@pytest.mark.slow
def test_jobs_logging_one_dataset_at_once_all_log_it(demo_ui: Ui, tmp_path: Path) -> None:
    client = MlflowClient(tracking_uri=demo_ui.base)
    experiment_id = client.create_experiment(f"race-{tmp_path.name}")
    errors: list[BaseException] = []
    runs: list[str] = []
    for round_ in range(ROUNDS):
        digests = DatasetDigests(
            source="questions.csv",
            location="/data/questions.csv",
            digest=f"{round_:016x}",
            tasks={"t": f"{round_:016x}"},
        )
        run_ids = [client.create_run(experiment_id).info.run_id for _ in range(JOBS)]
        jobs = [JobRun(client, run_id, settings=None) for run_id in run_ids]  # type: ignore[arg-type]  # logging needs no settings
        runs += [job.run_id for job in jobs]
        start = threading.Barrier(JOBS)

        def log(job: JobRun, digests: DatasetDigests = digests, start: threading.Barrier = start) -> None:
            start.wait()
            try:
                job.log_dataset(digests)
            except BaseException as exc:  # collected and reported below
                errors.append(exc)

        threads = [threading.Thread(target=log, args=(job,)) for job in jobs]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert not errors, f"{len(errors)} of {JOBS * ROUNDS} jobs failed to log their dataset: {errors[0]}"
    for run_id in runs:
        inputs = client.get_run(run_id).inputs
        assert inputs is not None, run_id
        assert [i.dataset.name for i in inputs.dataset_inputs] == ["questions.csv"], run_id
