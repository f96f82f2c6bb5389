"""Derived files of each job folder (uploaded to MLflow when tracking is on): a predictions table,
for classification tasks the confusion matrix (truth x prediction, failures in their own column) as
a PNG, and the list of data defects that concern the job's items."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless: jobs run on servers and SLURM nodes
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from giant.data.defects import Defect
from giant.record import JobLayout, ResultRecord
from giant.tracking.safe_cells import csv_cell

COLUMNS = [
    "key",
    "benchmark",
    "run_index",
    "label",
    "truth",
    "correct",
    "status",
    "reason",
    "method",
    "steps",
    "crops",
    "input_tokens",
    "output_tokens",
    "dollars",
    "seconds",
    "trajectory",
]
NO_ANSWER = "none"


def predictions(records: Sequence[ResultRecord]) -> pd.DataFrame:
    """One row per item-run, the latest record of each (results.jsonl's lines in order)."""
    frame = pd.DataFrame([record.model_dump() for record in records], columns=COLUMNS)
    return frame.drop_duplicates(subset=["key", "run_index"], keep="last")


def write_predictions(layout: JobLayout, records: Sequence[ResultRecord]) -> Path:
    """predictions.csv (`predictions`); a text cell a spreadsheet would run as a formula is written as
    text (giant.tracking.safe_cells)."""
    path = layout.predictions
    predictions(records).map(csv_cell).to_csv(path, index=False)
    return path


def confusion_table(predictions: pd.DataFrame) -> pd.DataFrame:
    """Counts of truth (rows) x predicted label (columns); the "none" column collects failed items."""
    truth = predictions["truth"].astype(int).astype(str)
    predicted = predictions["label"].map(lambda v: NO_ANSWER if pd.isna(v) else str(int(v)))
    labels = sorted(set(truth) | (set(predicted) - {NO_ANSWER}), key=int)
    columns = [*labels, NO_ANSWER] if (predicted == NO_ANSWER).any() else labels
    return pd.crosstab(truth, predicted).reindex(index=labels, columns=columns, fill_value=0)


def write_confusion_matrix(layout: JobLayout, records: Sequence[ResultRecord], *, title: str) -> Path | None:
    """confusion_matrix.png of the predictions; None when the job has no item-run."""
    frame = predictions(records)
    if frame.empty:
        return None
    table = confusion_table(frame)
    labels, columns = list(table.index), list(table.columns)
    counts = table.to_numpy()
    fig, ax = plt.subplots(figsize=(max(4.0, 0.45 * len(columns) + 2), max(3.5, 0.45 * len(labels) + 1.5)))
    ax.imshow(counts, cmap="Blues")
    ax.set_xticks(np.arange(len(columns)), labels=columns)
    ax.set_yticks(np.arange(len(labels)), labels=labels)
    ax.set_xlabel("predicted")
    ax.set_ylabel("truth")
    ax.set_title(title)
    peak = counts.max() or 1
    for (row, col), value in np.ndenumerate(counts):
        if value:
            color = "white" if value > peak / 2 else "black"
            ax.text(col, row, str(value), ha="center", va="center", color=color, fontsize=8)
    fig.tight_layout()
    path = layout.confusion_matrix
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def write_defects(defects: Sequence[Defect], layout: JobLayout) -> Path | None:
    """dataset_defects.json, the same list as summary.json's; none when the data had no defect."""
    if not defects:
        return None
    path = layout.dataset_defects
    rows = [defect.model_dump(mode="json") for defect in defects]
    path.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return path
