"""The resolved Hydra config, validated once into pydantic `RunSettings` before any item starts.

Every bad value (a wrong type, negative steps, a crop size out of range, a provider that cannot serve
the chosen agent, an unknown config group option) becomes a one-line `ConfigError` that names the
key and the fix, so the CLI never shows a traceback for a typo.
"""

from __future__ import annotations

import functools
import hashlib
import json
import tempfile
from functools import partial
from pathlib import Path
from typing import Annotated, Any, TypeVar

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import MissingMandatoryValue, OmegaConfBaseException
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from giant import registry
from giant.agent.modes import MODES, AgentConfig
from giant.agent.wording import prompts_digest
from giant.confdir import CONF_DIR, PROJECT_ROOT
from giant.data.file_kind import not_a_file
from giant.data.loaders.base import LOADERS
from giant.errors import ConfigError
from giant.eval.annotation_settings import AnnotationSettings
from giant.eval.run_options import RunOptions
from giant.llm.config import ProviderConfig, provider_names
from giant.roles import RECORD_CONTEXT, Data, Operational, Role, hashed_part, role_of, roles
from giant.secrets import KEY_VARIABLE_HINT, looks_like_key, redact_data
from giant.tools.settings import ToolSettings

# The config groups a user picks on the command line (`provider=anthropic`); checked up front so an
# unknown option is one line instead of Hydra's multi-line report (giant.cli.checks).
GROUPS = ("provider", "dataset", "agent", "tracking", "launcher", "experiment", "tools", "server")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PathSettings(_Strict):
    root: Path = Field(description="The project root the other default paths hang off (GIANT_ROOT).")
    data_dir: Path = Field(description="Data folder (GIANT_DATA_DIR).")
    cache_dir: Path = Field(
        description="Cache: demo slides, the downloaded CSV, the ledger of paid calls (GIANT_CACHE_DIR)."
    )
    wsi_root: Path = Field(
        description="The slides, in any layout giant/data/slides.py finds (GIANT_WSI_ROOT)."
    )
    output_dir: Path = Field(description="Job folders of single runs (GIANT_OUTPUT_DIR).")
    multirun_dir: Path = Field(description="Job folders of sweeps, `-m` (GIANT_MULTIRUN_DIR).")

    @classmethod
    def from_config(cls, cfg: DictConfig) -> PathSettings:
        """The paths section alone, for the checks made before Hydra creates the job folder (every
        entrypoint validates its other sections itself)."""
        data = resolve(OmegaConf.masked_copy(cfg, ["paths"]))
        try:
            return cls.model_validate(data.get("paths"))
        except ValidationError as exc:
            raise ConfigError(f"paths.{one_line(exc)}") from None

    def check_cache(self) -> None:
        """The cache folder (the demo's slides, the CSV, the resume index) created and written to."""
        _check_folder(f"paths.cache_dir={self.cache_dir}", self.cache_dir)

    def check_writable(self, job_dir: Path, *, sweep: bool) -> None:
        """The folders a job writes, Hydra's job (or sweep) folder and the cache, created and written
        to for real before Hydra creates them: Hydra's own failure is a long traceback, and permission
        bits tell nothing when running as root. The error names the setting the folder comes from."""
        self.check_cache()  # first: it is kept anyway
        key = "multirun_dir" if sweep else "output_dir"
        parent: Path = getattr(self, key)
        job_dir = job_dir.absolute()  # Hydra takes a relative job folder from the working directory
        if job_dir.is_relative_to(parent.absolute()):
            _check_folder(f"paths.{key}={parent}", job_dir)
        else:
            _check_folder(f"hydra.{'sweep' if sweep else 'run'}.dir={job_dir}", job_dir)


def _check_folder(setting: str, folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder, prefix=".giant-write-check-"):
            pass
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ConfigError(
            f"{setting}: cannot write to {folder} ({reason}); choose a writable folder"
        ) from None


# Every default of a user-facing setting lives in conf/ (conf/config.yaml, conf/dataset_common.yaml,
# conf/tracking/mlflow.yaml): the models below hold types and checks only, so a value is written once.
# Code that builds a section without Hydra (tests, benchmarks) starts from the shipped file: shipped().


class DatasetSettings(_Strict):
    name: Data[str] = Field(min_length=1, description="The dataset; picking `dataset=<name>` sets it.")
    source: Data[Annotated[str, AfterValidator(partial(registry.known, "loader"))]] = Field(
        description="The loader the questions come through (giant.data.loaders): multipathqa: rows of "
        "MultiPathQA.csv; demo: the generated synthetic slides; custom: your own task file (dataset.path)."
    )
    benchmark: Data[str | None] = Field(
        description="The benchmark_name rows of the CSV to use; null: every task in it."
    )
    path: Operational[Path | None] = Field(
        description="Your task file (CSV or JSONL; docs: Your own slides and questions); dataset=custom."
    )
    csv_path: Operational[Path | None] = Field(
        description="A local MultiPathQA.csv; null: the Hub's copy (hf_repo, hf_file) or the demo's CSV."
    )
    hf_repo: Operational[str] = Field(
        min_length=1, description="The Hugging Face dataset the CSV is downloaded from (csv_path null)."
    )
    hf_file: Operational[str] = Field(min_length=1, description="The CSV's file name in hf_repo.")
    wsi_root: Operational[Path | None] = Field(
        description="Folder of the slides; null with the demo: the generated slides."
    )
    slidebench_fix: Data[Path | None] = Field(
        description="The authors' slidebench_small.csv, to repair the tcga_slidebench rows carrying "
        "ExpertVQA questions; null: report them."
    )
    drop_defective: Data[bool] = Field(description="Drop the defective tcga_slidebench rows instead.")
    # Measurement, not method: where the evidence is drawn never changes an episode (nor the hash).
    annotations: Operational[AnnotationSettings] = Field(
        description="Per-slide annotations for the evidence metrics (docs/navigation.md)."
    )

    @model_validator(mode="after")
    def _one_defect_policy(self) -> DatasetSettings:
        if self.slidebench_fix is not None and self.drop_defective:
            raise ValueError("set either slidebench_fix or drop_defective, not both")
        return self


class TrackingSettings(_Strict):
    enabled: bool = Field(description="Log the job to MLflow.")
    uri: str = Field(
        min_length=1,
        description="MLflow tracking URI (MLFLOW_TRACKING_URI); a relative sqlite path is taken from the "
        "project root.",
    )
    experiment: str = Field(min_length=1, description="The MLflow experiment the runs go to.")
    artifact_location: str | None = Field(
        description="Where the experiment keeps artifacts; null: beside the sqlite file, or the server's."
    )
    run_name: str | None = Field(description="The MLflow run name; null: `<dataset>-<agent mode>-T<T>-S<S>`.")
    traces: bool = Field(
        description="true: an MLflow trace per item-run, a span per provider call and tool call, the images "
        "sent attached, the scoring as assessments."
    )
    max_param_length: int = Field(
        ge=16, le=6000, description="Longer param values are truncated (the full config is an artifact)."
    )
    finish_timeout_s: float = Field(
        gt=0,
        description="The longest wait, in seconds, for the tracking server to take a finished job's "
        "metrics and files; then one line says the results are on disk and a rerun logs them (exit 6).",
    )

    @model_validator(mode="after")
    def _absolute_sqlite(self) -> TrackingSettings:
        self.uri = absolute_sqlite_uri(self.uri)
        return self


class RunSettings(_Strict):
    """Every setting of a run; each one's role (giant.roles) is declared on its field, or on its section."""

    paths: Operational[PathSettings]
    provider: ProviderConfig
    dataset: DatasetSettings
    agent: AgentConfig
    run: RunOptions
    tracking: Operational[TrackingSettings]
    tools: ToolSettings | None  # conf/tools/; None where a record predates the tools (a re-score)

    @classmethod
    def from_config(cls, cfg: DictConfig) -> RunSettings:
        """Resolve, validate and cross-check; raises ConfigError (one line) on any problem."""
        cfg = _without_server_address(cfg)
        data = resolve(cfg)
        run_keys = set(RunOptions.model_fields)
        sections = {
            key: data.get(key) for key in ("paths", "provider", "dataset", "agent", "tracking", "tools")
        }
        sections["run"] = {key: value for key, value in data.items() if key in run_keys}
        provider = data.get("provider") or {}
        check_key_variable(provider.get("api_key_env"))
        if data.get("server") and (name := provider.get("name")) != "openai_compatible":
            raise ConfigError(
                f"server= starts a model server for provider=openai_compatible, not provider={name}; "
                "add provider=openai_compatible provider.model=<the model to serve>"
            )
        try:
            settings = cls.model_validate(sections)
        except ValidationError as exc:
            raise ConfigError(one_line(exc)) from None
        settings.cross_check()
        return settings

    def cross_check(self) -> None:
        """What each model alone cannot see: combinations a provider or agent cannot serve."""
        # Provider checks (a script that exists, a server URL, thinking limits) live in the
        # provider's own settings model (giant/llm/providers/<name>/).
        ds = self.dataset
        missing = []  # every missing file or folder at once: one does not hide another
        for name, path in (("dataset.csv_path", ds.csv_path), ("dataset.slidebench_fix", ds.slidebench_fix)):
            if path is not None and not path.is_file():
                missing.append(f"{name}={path}: file not found; pass an existing CSV file")
        # a task file's slides are checked row by row (giant.data.loaders), absolute paths need no root
        task_file = LOADERS[ds.source].task_file
        if task_file and ds.path is None:
            missing.append(f"dataset={ds.name} reads your task file: pass dataset.path=FILE (CSV or JSONL)")
        if task_file and ds.path is not None and (kind := not_a_file(ds.path)) is not None:
            missing.append(f"dataset.path={ds.path}: {kind}; pass your task file (CSV or JSONL)")
        if not task_file and ds.path is not None:
            raise ConfigError(
                f"dataset.path is read by a task file's dataset, not dataset={ds.name}; add dataset=custom"
            )
        if not task_file and ds.wsi_root is not None and not ds.wsi_root.is_dir() and not self.run.dry_run:
            # dataset.wsi_root follows paths.wsi_root: name the one the user set
            name = "paths.wsi_root" if ds.wsi_root == self.paths.wsi_root else "dataset.wsi_root"
            missing.append(
                f"{name}={ds.wsi_root}: folder not found; set paths.wsi_root=... or GIANT_WSI_ROOT "
                "(dry_run=true lists what is missing)"
            )
        if missing:
            raise ConfigError("\n".join(missing))
        base_url = getattr(self.provider, "base_url", "")
        if self.provider.name == "openai_compatible" and base_url is None and not self.run.dry_run:
            raise ConfigError(MISSING_BASE_URL)
        if ds.source == "demo" and ds.csv_path is not None and ds.wsi_root is None:
            raise ConfigError("dataset.csv_path is set for the demo: also set dataset.wsi_root to its slides")
        for name in self.enabled_tools():
            if getattr(self.tools, name, None) is None:
                raise ConfigError(
                    f"agent.tools names {name} but tools.{name} is not set: add conf/tools/{name}.yaml"
                )

    def record(self) -> dict[str, Any]:
        """The validated settings as JSON data laid out like conf/config.yaml (run options at the top
        level, so each dotted key is its command-line override). The one record of a job's config:
        resolved_config.json and the MLflow params are both written from it. Credentials in a URL
        (`user:pass@`, `?api-key=`) are *** here; the settings themselves keep them for the requests."""
        dumped = self._without_idle_tools(self.model_dump(mode="json", context=RECORD_CONTEXT))
        data = redact_data(dumped)  # credentials in a URL setting (provider.base_url) never leave the process
        assert isinstance(data, dict)
        return {**data.pop("run"), **data}

    def enabled_tools(self) -> list[str]:
        """The tools `agent.tools` turns on (only the navigation modes have the setting)."""
        return list(getattr(self.agent, "tools", []))

    def _without_idle_tools(self, data: dict[str, Any]) -> dict[str, Any]:
        """A tool's settings count only when the tool is on: a run without tools records and hashes as
        it did before tools existed, and one with tools as it did before another tool was added (its
        resume key and MLflow params stay the same). So do settings added later left at null (a task
        file, a prompt folder): a run without them records and hashes as before they existed."""
        if data["dataset"].get("path") is None:
            data["dataset"].pop("path", None)
        if data["agent"].get("prompts") is None:
            data["agent"].pop("prompts", None)
        enabled = self.enabled_tools()
        if not enabled:
            data.pop("tools", None)
            if data["agent"].get("tools") == []:
                data["agent"].pop("tools")
        elif data.get("tools") is not None:
            data["tools"] = {name: data["tools"][name] for name in enabled}
        return data

    def config_hash(self) -> str:
        """Hash of what changes episodes: paths, tracking, pacing (concurrency, budget, rate limits,
        timeouts), which items and how many runs (a pilot grows into the full run; runs_per_item=5
        continues runs_per_item=1) and scoring (carried-over answers are scored again) are left out,
        so such a rerun continues the same job instead of paying again."""
        data = hashed_part(
            self._without_idle_tools(self.model_dump(mode="json", context=RECORD_CONTEXT)), roles(self)
        )
        if self.agent.prompts is not None:  # the wording, not where its folder lies, is the method
            data["agent"]["prompts"] = prompts_digest(self.agent.prompts)
        text = json.dumps(data, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


@functools.cache
def record_roles() -> dict[str, Role]:
    """Every setting's role by its key in a job's record (resolved_config.json, the MLflow params):
    run options at the top level, as `RunSettings.record()` lays them out. The one table the key
    lists are read from: what a comparison ignores, what a re-score may change."""
    return {key.removeprefix("run."): role for key, role in roles(RunSettings).items()}


def record_keys(role: Role) -> tuple[str, ...]:
    return tuple(key for key, found in record_roles().items() if found is role)


def compared_settings(flat: dict[str, str]) -> dict[str, str]:
    """A record's flattened settings that make two runs different methods. A key no model has (a
    retired setting in an old record) is kept: a difference not known to be harmless is shown."""
    table = record_roles()
    return {
        key: value for key, value in flat.items() if (found := role_of(key, table)) is None or found.compared
    }


def check_key_variable(value: object) -> None:
    """`provider.api_key_env` names the variable that holds the key: a key pasted there instead is
    refused with one line that never shows it (giant.secrets.looks_like_key)."""
    if isinstance(value, str) and value and looks_like_key(value):
        raise ConfigError(KEY_VARIABLE_HINT)


# Where the values of a section live in conf/.
SHIPPED: dict[type[BaseModel], str] = {RunOptions: "config.yaml", TrackingSettings: "tracking/mlflow.yaml"}
_Section = TypeVar("_Section", bound=BaseModel)


def shipped(model: type[_Section], **changes: object) -> _Section:
    """`model` with the values conf/ ships for it, then `changes`: for code that builds one section
    without Hydra (tests, benchmarks), so the values still come from the one config file."""
    loaded = OmegaConf.to_container(OmegaConf.load(CONF_DIR / SHIPPED[model]), resolve=False)
    assert isinstance(loaded, dict)
    picked = OmegaConf.create({key: loaded[key] for key in model.model_fields if key in loaded})
    try:
        values = OmegaConf.to_container(picked, resolve=True)
        assert isinstance(values, dict)
        return model.model_validate({**values, **changes})
    except ValidationError as exc:
        raise ConfigError(one_line(exc)) from None


MISSING_BASE_URL = "provider.base_url is required: pass provider.base_url=VALUE on the command line"


def _without_server_address(cfg: DictConfig) -> DictConfig:
    """provider=openai_compatible may leave its server's base_url unset for a dry run, which contacts
    nothing, and for a job that starts its own server (server=...), which gives the address once it
    has a port (giant.job)."""
    provider = cfg.get("provider") if cfg.get("dry_run") or cfg.get("server") is not None else None
    if provider is None or provider.get("name") != "openai_compatible":
        return cfg
    if not OmegaConf.is_missing(provider, "base_url"):
        return cfg
    cfg = cfg.copy()
    cfg.provider.base_url = None
    return cfg


def resolve(cfg: DictConfig) -> dict[str, Any]:
    """The config as plain data with every interpolation resolved; `???` left unset is an error."""
    keys = [str(key) for key in cfg if key != "hydra"]  # compose(return_hydra_config=True) keeps it
    try:
        container = OmegaConf.to_container(
            OmegaConf.masked_copy(cfg, keys), resolve=True, throw_on_missing=True
        )
    except MissingMandatoryValue as exc:
        key = exc.full_key or "a value"
        raise ConfigError(f"{key} is required: pass {key}=VALUE on the command line") from None
    except OmegaConfBaseException as exc:
        first = str(exc).splitlines()[0]
        raise ConfigError(f"config cannot be resolved: {first}") from None
    assert isinstance(container, dict)
    return {str(key): value for key, value in container.items()}


def one_line(exc: ValidationError) -> str:
    """The first pydantic error as `dotted.key=value: message; fix it`."""
    error = exc.errors()[0]
    parts = [str(part) for part in error["loc"]]
    discriminators = {"agent": MODES, "provider": provider_names()}  # of the union sections
    if len(parts) > 1 and parts[1] in discriminators.get(parts[0], ()):
        del parts[1]  # the tag pydantic adds for a union member: `agent.giant.x` is `agent.x`
    location = ".".join(parts)
    location = location.removeprefix("run.")  # run options are top-level keys on the command line
    value = error.get("input")
    shown = "" if isinstance(value, dict) else f"={value}"
    more = f" (and {len(exc.errors()) - 1} more)" if len(exc.errors()) > 1 else ""
    return f"{location}{shown}: {error['msg']}{more}"


def absolute_sqlite_uri(uri: str) -> str:
    """`sqlite:///mlruns/mlflow.db` is relative to the project root, so runs from any working
    directory land in one store; absolute sqlite paths and servers are kept as they are."""
    prefix = "sqlite:///"
    if not uri.startswith(prefix) or uri.startswith(prefix + "/"):
        return uri
    return f"{prefix}{PROJECT_ROOT / uri[len(prefix) :]}"
