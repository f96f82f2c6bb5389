"""The one entrypoint: compose the config, run the evaluation, log it to MLflow.

python scripts/run_eval.py                                   # random provider on the demo set
python scripts/run_eval.py provider=openai dataset=tcga limit=20
python scripts/run_eval.py -m dataset=tcga,panda agent.max_steps=5,10,20
python scripts/run_eval.py --cfg job                         # print the composed config

Exit codes (giant/errors.py): 0 complete, 2 bad config, 3 stopped mid-run, 4 item-runs left
unmeasured, 6 complete on disk but not taken by the MLflow server (a rerun logs it), 130 Ctrl-C,
143 SIGTERM. A sweep's job that ends with 2, 3 or 4 records its outcome and
the sweep goes on; the sweep then exits with the highest code of its jobs (giant/cli/outcomes.py).
The job's ending and the process's checks and signal guard are giant/cli/run.py's.
"""

from __future__ import annotations

import hydra
from omegaconf import DictConfig

from giant.cli import run


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
def main(cfg: DictConfig) -> float | None:
    return run.evaluate(cfg)


if __name__ == "__main__":
    run.start(main)
