"""Every metric a task may be scored by, registered: a module here with a `@register("metric")`
`Metric` subclass (giant.eval.metrics.base: the contract) is found by the registry (giant.registry)
the first time the metrics are read. Its name is what a task's `metric` column (MultiPathQA's
`metric_type`) names, summary.json's key and the MLflow metric every job logs it under
(docs/ARCHITECTURE.md, "Adding a metric")."""

from giant.eval.metrics.base import FAILED, METRICS, Metric, metric, score

__all__ = ["FAILED", "METRICS", "Metric", "metric", "score"]
