"""summary.json: the one record of a finished (or stopped) run that tracking, tables and README read.

Each field that goes to MLflow says so in its type, `Annotated[..., MlflowName(...)]` (giant.record.logged):
the run's metrics are written and read back from those declarations alone."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, ClassVar

from pydantic import BaseModel, Field, computed_field, create_model

from giant import registry
from giant.data.defects import Defect
from giant.data.digest import DatasetDigests
from giant.llm.types import TokenCounts
from giant.record import names as n
from giant.record.logged import MlflowName


class Bootstrap(BaseModel):
    """Bootstrap over items; all values are fractions in [0, 1] (tables print percent)."""

    point: float  # the metric on the full item set
    mean: float
    std: float
    ci_low: float  # 2.5th percentile
    ci_high: float  # 97.5th percentile
    replicates: int
    seed: int


class Totals(TokenCounts):
    cost_usd: float | None = 0.0  # None when some model had no price ("unknown")
    calls: int = 0
    crops: int = 0
    steps_mean: float = 0.0
    steps_max: int = 0
    crops_per_item: float = 0.0
    wall_s: float = 0.0  # this invocation's
    items_per_hour: float = 0.0
    # Over all invocations of the run (a resumed run adds the earlier ones), as the counts above are:
    active_s: float = 0.0  # the run's wall time, the GPU time of a self-hosted server (giant.eval.gpu_cost)
    gpu_cost_usd: float | None = None  # active_s x provider.gpus x provider.gpu_hour_usd; None: not priced
    output_tokens_per_s: float = 0.0  # output tokens over active_s: the server's throughput as the run saw it
    calls_per_min: float = 0.0
    # What the run's time gave (and, with a GPU price, its cost): a re-score, which runs nothing again,
    # keeps these from the summary it re-scores.
    TIMED: ClassVar[frozenset[str]] = frozenset(
        {"wall_s", "items_per_hour", "active_s", "gpu_cost_usd", "output_tokens_per_s", "calls_per_min"}
        | {"cost_usd"}  # the calls' dollars are unchanged, and a GPU cost is a cost of time
    )

    @property
    def cache_hit_ratio(self) -> float:
        return self.cached_input_tokens / self.input_tokens if self.input_tokens else 0.0

    @property
    def calls_paid(self) -> int:
        """The calls that were new spend (the rest were replayed from the ledger)."""
        return self.calls - self.calls_replayed


class Pacing(BaseModel):
    """How the provider's rate limits shaped this invocation (giant.llm.pacer; docs/rate-limits.md).
    `bound_s` is the fastest the run could have been: the answered requests and tokens at the limits
    in force (less the one second's worth a server lets through at once), or the calls' own latency
    spread over the lanes, whichever is longer. Its MLflow metrics: `_PACING`."""

    requests: int  # sent, 429s included
    requests_429: int  # answered 429 (rate limit)
    paused_s: float  # seconds every lane was held by 429 pauses
    requests_per_min: float  # answered requests per minute of the makespan
    tokens_per_min: float  # their tokens (input + output) per minute of the makespan
    makespan_s: float  # this invocation's wall time (totals.wall_s)
    bound_s: float
    limits: dict[str, float] = Field(default_factory=dict)  # per minute, by kind, as last in force
    # What the pilot forecast (giant.eval.pilot_time) measures the campaign by; 0 / empty in older records.
    answered: int = 0  # requests answered
    latency_s: float = 0.0  # mean seconds of an answered request (the pacer's waits excluded)
    waited_s: float = 0.0  # seconds requests waited for their turn, summed over the lanes
    used: dict[str, float] = Field(default_factory=dict)  # units by kind (tokens, ...) the replies counted

    @property
    def makespan_over_bound(self) -> float | None:
        return self.makespan_s / self.bound_s if self.bound_s > 0 else None


class Provenance(BaseModel):
    run_key: str  # hash of the resolved config (minus paths/cosmetics) and the dataset content
    config_hash: str
    dataset_hash: str
    git_commit: str | None = None
    versions: dict[str, str] = Field(default_factory=dict)
    slide_layouts: dict[str, int] = Field(default_factory=dict)  # distinct slides per resolver layout
    # which version of each task's questions the job scored (giant.data.digest); None in older records
    dataset_digests: DatasetDigests | None = None


class Magnification(BaseModel):
    """The µm/px of every image the model was shown (giant.wsi.magnification), over the run."""

    images: int  # images with a recorded µm/px field (known or not)
    unknown: int  # of which on slides that do not say their µm/px
    finest_mpp: float | None = None
    median_mpp: float | None = None
    coarsest_mpp: float | None = None
    by_objective: dict[str, int] = Field(default_factory=dict)  # "~20x (0.50 µm/px)" -> images


class NavigationSummary(BaseModel):
    """Where the model looked over a run's item-runs (giant.eval.navigation, formulas in
    docs/navigation.md). Each scalar field is an MLflow metric of the job, `nav_<field>` (a Bootstrap
    gives `nav_<field>` and its interval); the lists are logged one step per crop."""

    item_runs: int  # item-runs with a navigation record
    steps: float  # mean steps used
    crops: float  # mean crops shown
    finest_mpp: float | None = None  # median over item-runs of the finest µm/px reached
    median_mpp: float | None = None  # median over item-runs of their median µm/px
    tissue: float | None = None  # mean over item-runs of the crops' mean tissue fraction
    coverage: float | None = None  # mean share of the slide's tissue shown at or finer than coverage_mpp
    revisits: float | None = None  # mean share of crop area shown again at the same or finer scale
    fine_rate: float = 0.0  # share of item-runs with a crop at or finer than 1 µm/px
    first_fine_step: float | None = None  # mean first crop at or finer than 1 µm/px, of those that reached it
    mpp_by_step: list[float | None] = Field(default_factory=list)  # median µm/px of the n-th crop
    # Evidence: over item-runs of annotated slides only ("not annotated" ones are never misses)
    annotated: int = 0
    not_annotated: int = 0
    hit_rate: Bootstrap | None = None  # share of annotated item-runs with a hit, bootstrapped over them
    first_hit_step: float | None = None  # mean first hit crop, of the item-runs with a hit
    on_target: float | None = None  # mean share of crops on target
    accuracy_hit: float | None = None  # share correct among item-runs with a hit
    accuracy_no_hit: float | None = None  # share correct among annotated item-runs without one
    hit_rate_by_step: list[float] = Field(default_factory=list)  # share with a hit by the n-th crop


# How the bootstraps go to MLflow: the main metric with its point, the per-run mean without (its point
# is per_run_mean), navigation's (hit_rate) as its point and interval under the field's own name
_METRIC = {"point": n.MAIN_METRIC, "mean": n.BOOT_MEAN_METRIC, "std": n.BOOT_STD_METRIC}
_METRIC |= {"ci_low": n.CI_LOW_METRIC, "ci_high": n.CI_HIGH_METRIC}
_PER_RUN = {"mean": n.PER_RUN_BOOT_MEAN_METRIC, "std": n.PER_RUN_BOOT_STD_METRIC}
_PER_RUN |= {"ci_low": n.PER_RUN_CI_LOW_METRIC, "ci_high": n.PER_RUN_CI_HIGH_METRIC}
_INTERVAL = {"point": "", "ci_low": n.CI_LOW_SUFFIX, "ci_high": n.CI_HIGH_SUFFIX}
_NAVIGATION = MlflowName(prefix=n.NAVIGATION_METRIC_PREFIX, suffixes=_INTERVAL, first_step=1)
_MPP = {"finest_mpp": n.MPP_FINEST_METRIC, "median_mpp": n.MPP_MEDIAN_METRIC}
_TOTALS = {
    "steps_mean": n.STEPS_MEAN_METRIC,
    "steps_max": n.STEPS_MAX_METRIC,
    "crops_per_item": n.CROPS_PER_ITEM_METRIC,
    "input_tokens": n.TOKENS_INPUT_METRIC,
    "output_tokens": n.TOKENS_OUTPUT_METRIC,
    "reasoning_tokens": n.TOKENS_REASONING_METRIC,
    "cached_input_tokens": n.TOKENS_CACHED_METRIC,
    "cache_write_tokens": n.TOKENS_CACHE_WRITE_METRIC,
    "cost_usd": n.COST_METRIC,
    "cache_hit_ratio": n.CACHE_HIT_RATIO_METRIC,
    "calls_paid": n.CALLS_PAID_METRIC,
    "calls_replayed": n.CALLS_REPLAYED_METRIC,
    "calls_flex": n.CALLS_FLEX_METRIC,
    "calls_batch": n.CALLS_BATCH_METRIC,
    "cost_flex_usd": n.COST_FLEX_METRIC,
    "cost_batch_usd": n.COST_BATCH_METRIC,
    "replayed_cost_usd": n.COST_REPLAYED_METRIC,
    "wall_s": n.WALL_S_METRIC,
    "items_per_hour": n.ITEMS_PER_HOUR_METRIC,
    "active_s": n.ACTIVE_S_METRIC,
    "gpu_cost_usd": n.GPU_COST_METRIC,
    "output_tokens_per_s": n.OUTPUT_TOKENS_PER_S_METRIC,
    "calls_per_min": n.CALLS_PER_MIN_METRIC,
}

_PACING = {
    "requests_429": n.REQUESTS_429_METRIC,
    "paused_s": n.RATE_PAUSED_S_METRIC,
    "requests_per_min": n.EFFECTIVE_RPM_METRIC,
    "tokens_per_min": n.EFFECTIVE_TPM_METRIC,
    "bound_s": n.MAKESPAN_BOUND_S_METRIC,
    "makespan_over_bound": n.MAKESPAN_RATIO_METRIC,
}


# One field per registered metric (giant.eval.metrics), named and logged to MLflow as the metric is
# ("accuracy", "balanced_accuracy", ...): the items' labels scored by it, failures wrong, voted when k > 1.
# None: not scored (a summary written before the metric was registered).
if TYPE_CHECKING:
    Scores = BaseModel
else:
    Scores = create_model(
        "Scores",
        **{
            name: (Annotated[float | None, MlflowName(name, score=True)], None)
            for name in registry.members("metric")
        },
    )


class Summary(Scores):
    benchmark: str  # dataset name, e.g. tcga or demo_shapes
    metric_name: str  # the task's metric: a registered one's name (giant.eval.metrics)
    complete: (
        bool  # False when a budget stop, an interruption, a halt or any unmeasured item-run left it short
    )
    incomplete_reason: str = ""
    # Why the runner halted: a fatal provider answer (key, model name, quota) or the circuit breaker
    # (giant.eval.causes). Such a run measured nothing worth a table cell; its metric is not logged.
    setup_failure: str = ""
    stop_cause: str | None = None  # the cause that halted it (a giant.core.SetupCause)
    # item-runs whose slide was not found (unmeasured)
    n_slides_missing: Annotated[int, MlflowName(n.N_SLIDES_MISSING_METRIC)] = 0
    # item-runs that measured nothing (a cause: a slide, the setup, the server, a bug): any makes the
    # job incomplete. The sum of setup_causes; MLflow holds those (giant.tracking.tables reads them)
    n_unmeasured: int = 0
    # item-runs failed outside the model, by cause
    setup_causes: Annotated[dict[str, int], MlflowName(prefix=n.SETUP_METRIC_PREFIX)] = Field(
        default_factory=dict
    )
    # items scored (failures count as incorrect; skipped items excluded)
    n_items: Annotated[int, MlflowName(n.N_ITEMS_METRIC)]
    n_scored: Annotated[int, MlflowName(n.N_SCORED_METRIC)]  # items with a parseable answer
    n_skipped: Annotated[int, MlflowName(n.N_SKIPPED_METRIC)] = 0  # missing slides with skip_missing=true
    runs_per_item: int = 1
    # the main metric: failures count as incorrect; voted when runs_per_item > 1
    metric: Annotated[Bootstrap, MlflowName(parts=_METRIC, score=True)]
    # over items with an answer only
    metric_scored_only: Annotated[float | None, MlflowName(n.SCORED_ONLY_METRIC, score=True)] = None
    # main metric of each run index (k > 1), one MLflow step per run index
    per_run: Annotated[list[float], MlflowName(n.RUN_METRIC, score=True)] = Field(default_factory=list)
    per_run_mean: Annotated[float | None, MlflowName(n.PER_RUN_MEAN_METRIC, score=True)] = None
    per_run_std: Annotated[float | None, MlflowName(n.PER_RUN_STD_METRIC, score=True)] = None
    # per_run_mean with its bootstrap over items (k > 1; None before it was recorded): the "x1" row of
    # the tables beside the vote of `metric`, with the run's seed and replicates
    per_run_bootstrap: Annotated[Bootstrap | None, MlflowName(parts=_PER_RUN, score=True)] = None
    counts_by_status: Annotated[dict[str, int], MlflowName(prefix=n.STATUS_METRIC_PREFIX)] = Field(
        default_factory=dict
    )
    failure_reasons: dict[str, int] = Field(default_factory=dict)  # reason text -> count
    extraction_methods: dict[str, int] = Field(default_factory=dict)
    tie_rule: str = "lowest_run_index"
    panda_null_as_zero: bool = True
    totals: Annotated[Totals, MlflowName(parts=_TOTALS)] = Field(default_factory=Totals)
    # None: no record says (older records)
    magnification: Annotated[Magnification | None, MlflowName(parts=_MPP)] = None
    provenance: Provenance
    # Questions of the loaded data that cannot be scored as given (e.g. the 10 tcga_slidebench rows
    # that carry an ExpertVQA question), kept with the result they may distort.
    dataset_defects: list[Defect] = Field(default_factory=list)
    # None: no item-run recorded where it looked; its lists one MLflow step per crop (step 1: the first)
    navigation: Annotated[NavigationSummary | None, _NAVIGATION] = None
    # how the item-runs used the tools (giant.record.tool_use): per tool, its calls, the item-runs that
    # called it and how many of those ended correct; empty when no tool was called
    tool_use: Annotated[dict[str, float], MlflowName(prefix=n.TOOL_METRIC_PREFIX)] = Field(
        default_factory=dict
    )
    # None: no call reached a server (offline providers, a run replayed from the ledger, older records)
    pacing: Annotated[Pacing | None, MlflowName(parts=_PACING)] = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def n_dataset_defects(self) -> Annotated[int, MlflowName(n.N_DATASET_DEFECTS_METRIC)]:
        return len(self.dataset_defects)

    @property
    def cost_per_item(self) -> Annotated[float | None, MlflowName(n.COST_PER_ITEM_METRIC)]:
        """USD per scored item; None when a model had no price (or nothing was scored)."""
        cost = self.totals.cost_usd
        return cost / self.n_items if cost is not None and self.n_items else None
