"""The paper's tables and figures, rebuilt from logged MLflow runs.

Runs are read back by the tag and metric names of giant.tracking.names, so a table can be rebuilt at
any time from the store alone (no output folders needed), and a "report" run keeps the rendered files
beside the runs they summarise. One module per job:

- `rows`: `RunRecord` (one finished job), row keys, `build_table` (the newest run of each row and task)
- `load`: `load_runs`, job runs read back from MLflow
- `formats`: markdown, LaTeX, CSV and the cost table
- `versus_paper`: our rows beside the published ones (giant.tracking.published)
- `figures`: metric vs T, metric vs thumbnail size
- `report`: all of them written to a folder and logged as a "report" run

The package root imports nothing, so importing one module does not pull in MLflow or matplotlib.
"""
