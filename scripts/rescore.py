"""Score a finished job again from its recorded answers, with other scoring settings; no provider call.

python scripts/rescore.py source=outputs/2026-01-01/12-00-00 panda_null_as_zero=false
python scripts/rescore.py source=<MLflow run id> bootstrap_replicates=10000

Writes results.jsonl (re-scored), summary.json, predictions.csv and the confusion matrix into a new
folder (outputs/rescore/<date>/<time>/, or hydra.run.dir=...) and logs a new MLflow run tagged
giant.rescore_of=<source run>, which scripts/make_tables.py uses in its source's place.
"""

from __future__ import annotations

import sys

import hydra
from omegaconf import DictConfig

from giant.cli.checks import check_command_line
from giant.errors import ConfigError, exit_with


@hydra.main(version_base="1.3", config_path="../conf", config_name="rescore")
def main(cfg: DictConfig) -> None:
    from giant.cli.context import hydra_context
    from giant.rescore_job import rescore_job

    try:
        rescore_job(cfg, hydra_context())
    except ConfigError as err:
        exit_with("rescore", str(err))


if __name__ == "__main__":
    check_command_line("rescore", "rescore", sys.argv[1:])
    main()
