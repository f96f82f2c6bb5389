"""One fetch, end to end: config -> the run's items -> plan -> transfers (or the check) -> exit code.

The items come from giant.job.load_data with run_eval's settings, so `dataset=`, `limit` and
`item_ids` select exactly the slides that run would open. An entry point like giant.job (which it
builds on), so it sits beside it, above the data layer whose fetch package (giant.data.fetch) it runs.
"""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from giant.atomic import write_atomic
from giant.config import RunSettings, one_line, resolve
from giant.context import JobContext
from giant.data.fetch.masks import kaggle_auth, mask_plan
from giant.data.fetch.plan import build_plan
from giant.data.fetch.run import http_client, run_plan
from giant.data.fetch.settings import FetchSettings
from giant.errors import ConfigError
from giant.job import load_data

EXIT_OK, EXIT_INCOMPLETE = 0, 1
CHECK_FILE = "slide_check.json"  # every row of a check, in the check's output folder


class FetchOptions(BaseModel):
    """The keys conf/fetch.yaml adds to conf/config.yaml."""

    model_config = ConfigDict(extra="forbid")
    fetch: FetchSettings
    annotations: bool = Field(
        description="Fetch PANDA's label masks (train_label_masks/<image_id>_mask.tiff) into "
        "dataset.annotations.path instead of the slides."
    )
    check: bool = Field(
        description="Fetch nothing: open every slide with OpenSlide and print the check table (exit 1 if any "
        "is missing)."
    )


def fetch_job(cfg: DictConfig, context: JobContext) -> int:
    """Fetch (or with check=true only check, into `context.output_dir`) the slides of the configured
    items; the exit code is 0 only when every requested slide is present and verified (readable, for
    the check)."""
    made = _new_root(cfg)
    try:
        return _fetch(cfg, context)
    except BaseException:  # a fetch that failed before writing a slide leaves no empty slide folder
        if made is not None and made.is_dir() and not any(made.iterdir()):
            made.rmdir()
        raise


def _new_root(cfg: DictConfig) -> Path | None:
    """The slide folder, when it does not exist yet (the fetch creates it)."""
    data = resolve(cfg)
    dataset, paths = data.get("dataset"), data.get("paths")
    root = (dataset.get("wsi_root") if isinstance(dataset, dict) else None) or (
        paths.get("wsi_root") if isinstance(paths, dict) else None
    )
    return None if root is None or Path(str(root)).exists() else Path(str(root))


def _fetch(cfg: DictConfig, context: JobContext) -> int:
    options, settings = _settings(cfg)
    data = load_data(settings)
    if options.check:
        from giant.data.check import check_slides  # late: OpenSlide only when checking

        checked = check_slides(data.items, data.wsi_root)
        saved = context.output_dir / CHECK_FILE
        write_atomic(saved, checked.model_dump_json(indent=1).encode())
        print(checked.render(saved))
        return EXIT_OK if checked.ok else EXIT_INCOMPLETE
    with http_client(options.fetch, kaggle_auth() if options.annotations else None) as client:
        if options.annotations:
            plan = mask_plan(
                data.items, _mask_folder(settings, dry=settings.run.dry_run), client, options.fetch
            )
        else:
            plan = build_plan(data.items, data.wsi_root, client, options.fetch)
        print(plan.render(), flush=True)
        if settings.run.dry_run:
            return EXIT_INCOMPLETE if any(t.error for t in plan.targets) else EXIT_OK
        report = run_plan(plan, client, options.fetch)
    print(report.render())
    return EXIT_OK if report.ok else EXIT_INCOMPLETE


def _mask_folder(settings: RunSettings, *, dry: bool) -> Path:
    folder = settings.dataset.annotations.path
    if folder is None:
        raise ConfigError(
            "annotations=true fetches label masks into dataset.annotations.path, which is null; set "
            "dataset.annotations.path=<a folder>"
        )
    if not dry:
        folder.mkdir(parents=True, exist_ok=True)
    return folder


def _settings(cfg: DictConfig) -> tuple[FetchOptions, RunSettings]:
    data = resolve(cfg)
    try:
        options = FetchOptions.model_validate(
            {"fetch": data.get("fetch"), "check": data.get("check"), "annotations": data.get("annotations")}
        )
    except ValidationError as exc:
        raise ConfigError(one_line(exc)) from None
    if not data.get("dry_run") and not options.check:
        _make_root(data)  # the fetch writes there; run_eval's settings insist the folder exists
    return options, RunSettings.from_config(cfg)


def _make_root(data: dict[str, object]) -> None:
    dataset, paths = data.get("dataset"), data.get("paths")
    root = (dataset.get("wsi_root") if isinstance(dataset, dict) else None) or (
        paths.get("wsi_root") if isinstance(paths, dict) else None
    )
    if root is None:
        return
    try:
        Path(str(root)).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(
            f"paths.wsi_root={root}: cannot create the folder ({exc.strerror}); choose a writable one"
        ) from None
