"""Fetch the MultiPathQA slides from their public sources into `<wsi_root>/<image_path>`.

TCGA slides come from the GDC API, GTEx slides from the GTEx histology image service and PANDA slides
from Kaggle. `plan.py` decides what is missing and how large it is before any byte moves,
`download.py` moves the bytes (resumable, verified, atomic), `run.py` runs the transfers
concurrently and `report.py` prints what happened. scripts/fetch_slides.py is the CLI (through
giant.fetch_job). The package root imports nothing: the transfers pull the HTTP client.
"""
