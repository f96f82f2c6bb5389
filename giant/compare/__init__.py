"""Paired comparison of finished runs (scripts/compare.py): per task, the runs' common items, the
paired bootstrap interval of the difference, McNemar's exact test, the flipped items, and the files
and MLflow run that keep the result (`pairs.compare_runs`, `run.compare`).

The package root imports nothing: a comparison reads MLflow and numpy.
"""
