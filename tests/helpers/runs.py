"""Fake job runs logged through the MLflow API with the tag and metric names scripts/run_eval.py logs
(docs/ARCHITECTURE.md): the tables' tests fill a store with exactly the cells they check."""

from __future__ import annotations

import itertools

import mlflow

from giant.tracking.names import ROLE_TAG

_clock = itertools.count(1_700_000_000_000, 1000)


def log_job(  # noqa: PLR0913  one fake job's recorded fields, keyword-only
    exp_id: str,
    *,
    task: str,
    mode: str = "giant",
    model: str = "gpt-5",
    T: int = 20,
    S: int = 1000,
    k: int = 1,
    mean: float,
    std: float,
    sweep: str = "sw1",
    role: str = "job",
    thumb: int | None = None,
    status: str = "complete",
    ci: tuple[float, float] | None = None,
    n_items: int | None = None,
    n_scored: int | None = None,
    cost: float | None = None,
    extra: dict[str, float] | None = None,
    params: dict[str, str] | None = None,
) -> str:
    """One job run as scripts/run_eval.py logs it (explicit start times: the newest run wins a cell)."""
    client = mlflow.MlflowClient()
    tags = {
        "dataset": task,
        "metric_name": "accuracy",
        "provider": "openai",
        "model": model,
        "agent_mode": mode,
        "T": str(T),
        "S": str(S),
        "runs_per_item": str(k),
        "sweep_id": sweep,
        ROLE_TAG: role,
        "status": status,
    }
    run = client.create_run(exp_id, start_time=next(_clock), tags=tags)
    metrics = {"metric": mean, "metric_boot_mean": mean, "metric_boot_std": std}
    if ci is not None:
        metrics.update(metric_ci_low=ci[0], metric_ci_high=ci[1])
    optional = {"n_items": n_items, "n_scored": n_scored, "cost_per_item_usd": cost}
    metrics.update({name: value for name, value in optional.items() if value is not None})
    metrics.update(extra or {})
    for name, value in metrics.items():
        client.log_metric(run.info.run_id, name, value)
    if thumb is not None:
        client.log_param(run.info.run_id, "agent.thumbnail_size", str(thumb))
    for name, value in (params or {}).items():
        client.log_param(run.info.run_id, name, value)
    client.set_terminated(run.info.run_id)
    return run.info.run_id
