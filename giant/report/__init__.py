"""The run report: one self-contained report.html per job, the page a researcher opens first.

The facts of a job come from its folder only (results.jsonl, summary.json and the trajectories,
through `giant.record`), so the same page is written at the end of a job and again, at
any later time, by `python -m giant.report <job folder>`.

    facts.py       the job folder read into records and trajectories
    taxonomy.py    why each item-run ended as it did (not just its status), and the failed calls
    labels.py      per-class recall, the confusion matrix and the predicted-label distribution
    navigation.py  microns per pixel and tissue fraction of every crop, steps against correctness
    costs.py       cost, tokens, cache hits and replayed calls per task
    overviews.py   where the runs of one slide looked: their crop boxes on one overview page
    render.py      the sections as one HTML page (inline CSS and script, every model text escaped)
"""

from giant.report.render import write_report

__all__ = ["write_report"]
