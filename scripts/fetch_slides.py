"""Download the MultiPathQA slides a run will use (GDC, GTEx, Kaggle), or check the ones you have.

python scripts/fetch_slides.py dataset=tcga_expert_vqa paths.wsi_root=/data/wsi dry_run=true  # sizes only
python scripts/fetch_slides.py dataset=tcga_expert_vqa paths.wsi_root=/data/wsi               # fetch
python scripts/fetch_slides.py dataset=tcga dataset.benchmark=null check=true                 # check all

Exit codes: 0 every requested slide present and verified; 1 some are missing, failed or unreadable;
2 a bad command line; 130 Ctrl-C (rerun to resume: partial downloads are kept as .part files).
"""

from __future__ import annotations

import sys

import hydra
from omegaconf import DictConfig

from giant.cli.checks import check_command_line
from giant.errors import ConfigError, exit_with

EXIT_INTERRUPTED = 130


@hydra.main(version_base="1.3", config_path="../conf", config_name="fetch")
def main(cfg: DictConfig) -> None:
    from giant.cli.context import hydra_context
    from giant.fetch_job import fetch_job

    try:
        code = fetch_job(cfg, hydra_context())
    except ConfigError as err:
        exit_with("fetch_slides", str(err))
    except KeyboardInterrupt:
        print(
            "fetch_slides: interrupted; rerun the same command to resume (.part files are kept)",
            file=sys.stderr,
        )
        sys.exit(EXIT_INTERRUPTED)
    sys.exit(code)


if __name__ == "__main__":
    check_command_line("fetch_slides", "fetch", sys.argv[1:])
    main()
