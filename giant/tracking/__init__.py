"""MLflow tracking, the paper's tables, and the trajectory viewer.

`names` holds every MLflow tag and metric name that writers, readers and tests share;
`mlflow_logger` logs a job (`open_experiment`, `tracked`), `traces` its calls, `viewer` writes the
trajectory pages, and `tables` (a package) rebuilds the paper's tables and figures from logged runs.
The package root imports nothing: most of its modules pull MLflow.
"""
