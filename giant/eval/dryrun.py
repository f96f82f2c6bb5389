"""The dry run: check every slide and estimate the cost before spending anything.

Resolves and opens every item's slide (missing and unreadable ones are listed, not fatal) and
estimates tokens and dollars from the price table without calling any provider.

The estimate is a documented approximation for a run that uses every step:
- image tokens per image of side S (every image counted as an S x S square, the largest a crop can
  be), by the formula the provider class names (giant/llm/image_tokens.py: OpenAI's high-detail
  tiles, Anthropic's pixels / 750), asked without an API key;
- text at about 4 characters per token (system prompt and question, resent at every call) and
  OUTPUT_TOKENS_PER_CALL output tokens per call (hidden reasoning tokens of reasoning models can
  be several times more), each answer resent as input at later calls;
- the mode's call plan (giant/agent/modes): navigation modes send the whole conversation at every
  call, so call t carries t images and image input grows quadratically with T; thumbnail mode is
  one call, patch mode one call per patch;
- three figures per task for prompt caching, from the same per-call token sequence: high, no
  caching at all (an upper bound); expected, the provider's own caching rule (giant/llm/caching.py,
  named by the provider class like its image-token rule; the first call of an item misses); low,
  everything but each call's newest message read from the cache.
- the expected figure per price tier the model is sold at (Pricing.tiers), side by side: flex keeps
  the cache as standard does; a batch round comes back minutes to hours later, which outlives
  OpenAI's in-memory cache and Anthropic's 5-minute entries (every call bills as an item's first),
  but not Anthropic's 1-hour ones (provider.cache_ttl=1h: the rule holds, writes at the 1h rate)
  nor OpenAI's 24-hour retention (provider.prompt_cache_retention, auto: asked for in batch mode by
  the models that take it; the rule holds at the same cache prices).
Once a pilot of the same run key has finished item-runs, their real dollars give a better forecast
(giant/eval/forecast.py), and its measured calls, latencies and limits the campaign's wall time
(giant/eval/pilot_time.py), printed below these figures.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from giant.agent.modes import AgentConfig, mode_of
from giant.agent.modes.base import CallPlan
from giant.core import Item
from giant.data.check import SlideRow, check_slides, first_lines
from giant.data.slides import layout_counts
from giant.eval.context_fit import ContextFit, context_fit, image_rule
from giant.eval.forecast import PilotForecast, pilot_forecast
from giant.eval.timing import TimeEstimate, duration, estimate_time
from giant.llm.caching import (
    Block,
    BreakpointRule,
    CacheRule,
    CacheSplit,
    Request,
    Segment,
    every_prefix_cached,
    openai_retention,
)
from giant.llm.config import ProviderSettings
from giant.llm.factory import provider_class
from giant.llm.pricing import Pricing
from giant.llm.types import Tier, Usage
from giant.record import DRY_RUN_FILE, write_dry_run

OUTPUT_TOKENS_PER_CALL = 400
CHARS_PER_TOKEN = 4
JPEG_BYTES_PER_PIXEL = 0.25  # a q75 JPEG of tissue, about 2 bits per pixel, for the payload check
# A missing slide's size is unknown; it only changes the digits of the system prompt's size line.
UNKNOWN_SIZE = (100_000, 100_000)
ASSUMPTIONS = (
    "every step used, every image S x S, ~4 characters per text token, "
    f"{OUTPUT_TOKENS_PER_CALL} output tokens per call, whole conversation resent per call; "
    "high: no prompt caching, expected: the provider's caching rule, low: all but the newest message cached"
)


class SlideProblem(BaseModel):
    key: str
    image_path: str
    reason: str


class CostRange(BaseModel):
    """Dollars of one task (or all), None when the model is not in the price table."""

    low_usd: float | None  # every prefix cached
    expected_usd: float | None  # the provider's caching rule
    high_usd: float | None  # no caching

    def render(self) -> str:
        if self.low_usd is None or self.expected_usd is None or self.high_usd is None:
            return "unknown (model not in the price table)"
        return f"low ${self.low_usd:,.2f} / expected ${self.expected_usd:,.2f} / high ${self.high_usd:,.2f}"


class CostEstimate(BaseModel):
    model: str
    image_formula: str  # openai_high_detail | anthropic | an open model family (qwen2_vl, ...)
    tokens_per_image: int
    calls_per_item_run: int
    images_per_call: int = 1  # besides a navigation's growing conversation (patch mode's joint call: N)
    calls_concurrent: bool = False  # an item-run's calls go side by side (patch vote), timed as one wait
    image_side: int = 0  # long side of each image the plan counts
    input_tokens: int  # over all item-runs, including those whose slide is missing
    output_tokens: int
    cost_usd: float | None  # no caching (= total.high_usd); None when the model is not in the price table
    cost_per_item_run_usd: float | None
    cache_rule: str  # the provider's caching rule (giant.llm.caching) behind the expected figure
    total: CostRange
    per_task: dict[str, CostRange]
    # The expected figure at each tier the price table sells the model at, standard first.
    tiers: dict[Tier, float | None] = Field(default_factory=dict)
    batch_cache: str = ""  # what the batch figure assumes of the cache between rounds
    assumptions: str = ASSUMPTIONS

    def render_tiers(self) -> list[str]:
        """One line, the tiers side by side with their ratio to standard; none for a single tier."""
        if len(self.tiers) < 2:
            return []
        standard = self.tiers.get("standard")
        parts = []
        for tier, usd in self.tiers.items():
            if usd is None:
                parts.append(f"{tier} unknown")
                continue
            ratio = f" ({usd / standard:.2f}x)" if standard and tier != "standard" else ""
            parts.append(f"{tier} ${usd:,.2f}{ratio}")
        note = f"; batch: {self.batch_cache}" if "batch" in self.tiers and self.batch_cache else ""
        return [f"per tier, expected: {' / '.join(parts)}{note}"]


class DryRunReport(BaseModel):
    n_items: int
    items_per_task: dict[str, int]
    runs_per_item: int
    runnable_items: int
    missing: list[SlideProblem] = Field(default_factory=list)
    unreadable: list[SlideProblem] = Field(default_factory=list)
    layouts: dict[str, int] = Field(default_factory=dict)  # distinct slides found per layout
    slides: list[SlideRow] = Field(default_factory=list)  # per slide: layout, path, duplicates, size
    estimate: CostEstimate
    pilot: PilotForecast | None = None  # from the finished item-runs of the same run key
    context: ContextFit | None = None  # a self-hosted model: does the largest prompt fit its context
    cell: str = ""  # the run's name (giant.agent.modes): which cell of a sweep this prices
    # Slides the run cannot read at its magnification (agent.patch_mpp set, the slide has no mpp).
    no_mpp: list[SlideProblem] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)  # requests beyond a provider's published limits
    time: TimeEstimate | None = None  # wall time per tier; GPU-hours of a self-hosted model

    def render(self) -> str:
        """The lines the CLI prints."""
        lines = [f"{self.n_items} items x {self.runs_per_item} runs"]
        lines += [f"  {task}: {count}" for task, count in sorted(self.items_per_task.items())]
        lines.append(
            f"slides: {self.runnable_items} items ready, {len(self.missing)} missing, "
            f"{len(self.unreadable)} unreadable"
        )
        if self.layouts:
            lines.append("  found as: " + ", ".join(f"{name} {n}" for name, n in self.layouts.items()))
        lines += _first([f"  missing {p.key}: {p.reason}" for p in self.missing])
        lines += _first([f"  unreadable {p.key}: {p.reason}" for p in self.unreadable])
        lines += _first(
            [
                f"  duplicate {row.image_path}: using {row.path} ({row.layout}), also at "
                + ", ".join(map(str, row.duplicates))
                for row in self.slides
                if row.duplicates
            ]
        )
        lines += _first([f"  no mpp {p.key}: {p.reason}" for p in self.no_mpp])
        est = self.estimate
        gpu = self.time.gpu if self.time is not None else None
        unknown = (
            "no token price (a self-hosted model costs its GPU time, below)"
            if gpu is not None
            else "unknown (model not in the price table)"
        )
        cost = unknown if est.cost_usd is None else f"${est.cost_usd:,.2f}"
        lines.append(
            f"estimate for {est.model}: {est.input_tokens:,} input + {est.output_tokens:,} output tokens, "
            f"{cost} for all {self.n_items} items ({est.calls_per_item_run} calls per item-run, "
            f"{est.tokens_per_image} tokens per image, no prompt caching; an upper bound)"
        )
        if gpu is None or est.cost_usd is not None:
            lines.append(f"with prompt caching ({est.cache_rule}): {est.total.render()}")
            lines += est.render_tiers()
            lines += [f"  {task}: {costs.render()}" for task, costs in sorted(est.per_task.items())]
        if self.time is not None:
            lines += self.time.render()
        lines.append(self.cell_line())
        lines += [f"WARNING: {warning}" for warning in self.warnings]
        if self.pilot is not None:
            lines += self.pilot.render()
        if self.context is not None:
            lines += self.context.render()
        return "\n".join(lines)

    def cell_line(self) -> str:
        """One line per sweep cell: what an item-run sends and what the cell costs."""
        est = self.estimate
        tokens = (est.input_tokens + est.output_tokens) // max(self.n_items * self.runs_per_item, 1)
        tiers = " / ".join(
            f"{tier} {'unknown' if usd is None else f'${usd:,.2f}'}" for tier, usd in est.tiers.items()
        )
        return (
            f"cell {self.cell}: {est.images_per_call} image(s) of {est.image_side} px per call, "
            f"{est.calls_per_item_run} call(s) per item-run, ~{tokens:,} tokens per item-run, "
            f"expected {tiers or est.total.render()}"
        )


def _first(lines: list[str]) -> list[str]:
    return first_lines(lines, f"see {DRY_RUN_FILE}")


def dry_run(  # noqa: PLR0913  one job's items, settings and where its estimate goes, each keyword-only
    items: Sequence[Item],
    *,
    wsi_root: Path,
    agent: AgentConfig,
    provider: ProviderSettings,
    pricing: Pricing,
    runs_per_item: int,
    out_dir: Path | None = None,
    pilot: Path | None = None,
    cell: str = "",
    concurrency: int = 1,
) -> DryRunReport:
    """Check slides and estimate cost; writes out_dir/dry_run.json when out_dir is given. `pilot` is
    the job folder of an earlier run with the same run key, whose finished item-runs forecast the
    full run."""
    check = check_slides(items, wsi_root)
    rows = check.by_key()
    missing, unreadable, no_mpp, sizes = [], [], [], {}
    needs_mpp = getattr(agent, "patch_mpp", None) is not None
    for item in items:
        row = rows[item.key]
        if needs_mpp and row.status == "present" and row.mpp is None:
            reason = (
                f"{row.path}: no microns per pixel (openslide.mpp-x), so agent.patch_mpp="
                f"{getattr(agent, 'patch_mpp', None)} cannot be read from it; the item will fail"
            )
            no_mpp.append(SlideProblem(key=item.key, image_path=item.image_path, reason=reason))
        if row.status == "missing":
            missing.append(SlideProblem(key=item.key, image_path=item.image_path, reason=row.reason))
        elif row.status == "unreadable":
            name = row.path.name if row.path else item.image_path
            unreadable.append(SlideProblem(key=item.key, image_path=name, reason=row.reason))
        elif row.width is not None and row.height is not None:
            sizes[item.key] = (row.width, row.height)
    items_per_task = dict(Counter(item.benchmark for item in items))
    item_runs = {task: n * runs_per_item for task, n in items_per_task.items()}
    # The estimate covers every item: it is what the run costs once the slides are in place.
    estimate = estimate_cost(items, sizes, agent, provider, pricing, runs_per_item)
    report = DryRunReport(
        n_items=len(items),
        items_per_task=items_per_task,
        runs_per_item=runs_per_item,
        runnable_items=len(sizes),
        missing=missing,
        unreadable=unreadable,
        layouts=layout_counts(row.layout for row in check.slides if row.layout),
        slides=check.slides,
        estimate=estimate,
        pilot=pilot_forecast(
            pilot,
            item_runs,
            concurrency=concurrency,
            limits={"requests": getattr(provider, "rpm", None), "tokens": getattr(provider, "tpm", None)},
        )
        if pilot is not None
        else None,
        context=context_fit(items, agent, provider),
        cell=cell,
        no_mpp=no_mpp,
        time=estimate_time(
            item_runs=len(items) * runs_per_item,
            calls_per_item_run=estimate.calls_per_item_run,
            concurrent_calls=estimate.calls_concurrent,
            input_tokens=estimate.input_tokens,
            concurrency=concurrency,
            provider=provider,
            tiers=list(estimate.tiers),
        ),
    )
    report.warnings = request_warnings(report, agent, provider)
    if out_dir is not None:
        write_dry_run(out_dir, report)
    return report


def estimate_cost(
    items: Sequence[Item],
    sizes: dict[str, tuple[int, int]],
    agent: AgentConfig,
    provider: ProviderSettings,
    pricing: Pricing,
    runs_per_item: int,
) -> CostEstimate:
    model, provider_cls = provider.model, provider_class(provider.name)
    mode = mode_of(agent)
    plan = mode.plan(agent)
    formula, rule = image_rule(provider, provider_cls.image_tokens, provider_cls.image_formula)
    per_image = rule(plan.image_side, plan.image_side)
    enabled = getattr(provider, "prompt_caching", True)  # the offline providers have no such setting
    usages: dict[str, list[Usage]] = {}  # task -> [no caching, provider's rule, every prefix], summed
    per_text: dict[tuple[int, int], list[Usage]] = {}  # items of equal text lengths cost the same
    kept, one_hour, batch_cache = _batch_cache(provider, enabled)
    in_batches: dict[tuple[int, int], Usage] = {}  # the expected figure with rounds apart
    batch_total = Usage()
    for item in items:
        size = sizes.get(item.key, UNKNOWN_SIZE)
        system = len(mode.system_prompt(agent, *size) or "")
        system_tokens = system // CHARS_PER_TOKEN  # the question gets the rest of the rounded total
        text = (system_tokens, (len(item.prompt) + system) // CHARS_PER_TOKEN - system_tokens)
        if text not in per_text:
            requests = item_requests(plan, *text, per_image, provider_cls.cache_breakpoints)
            splits = (
                [CacheSplit(0, 0)] * len(requests),
                provider_cls.cache_rule(requests, enabled, model),
                every_prefix_cached(requests),
            )
            per_text[text] = [_usage(requests, split) for split in splits]
            in_batches[text] = _batch_usage(requests, provider_cls.cache_rule, enabled, model, kept, one_hour)
        batch_total = _add(batch_total, in_batches[text], runs_per_item)
        task = usages.setdefault(item.benchmark, [Usage(), Usage(), Usage()])
        for i, usage in enumerate(per_text[text]):
            task[i] = _add(task[i], usage, runs_per_item)
    totals = [Usage(), Usage(), Usage()]
    for task_usages in usages.values():
        totals = [_add(total, usage, 1) for total, usage in zip(totals, task_usages, strict=True)]
    total = _range(model, pricing, totals)
    cost = total.high_usd
    input_tokens, output_tokens = totals[0].input_tokens, totals[0].output_tokens
    item_runs = len(items) * runs_per_item
    return CostEstimate(
        model=model,
        image_formula=formula,
        tokens_per_image=per_image,
        calls_per_item_run=plan.calls,
        images_per_call=plan.images_per_call,
        calls_concurrent=plan.concurrent,
        image_side=plan.image_side,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cost_usd=cost,
        cost_per_item_run_usd=cost / item_runs if cost is not None and item_runs else None,
        cache_rule=provider_cls.cache_rule.__name__ if enabled else "off",
        total=total,
        per_task={task: _range(model, pricing, task_usages) for task, task_usages in usages.items()},
        tiers={
            tier: pricing.cost(model, batch_total if tier == "batch" else totals[1], tier)
            for tier in pricing.tiers(model)
        },
        batch_cache=batch_cache,
    )


def request_warnings(report: DryRunReport, agent: AgentConfig, provider: ProviderSettings) -> list[str]:
    """Where one request of the plan exceeds what the provider takes: a hosted API's published limits
    (its class's `request_limits`), an open-model server's context (the fit table) and its images
    per prompt, which only the server knows (the run's preflight asks it)."""
    est, fit = report.estimate, report.context
    plan = mode_of(agent).plan(agent)
    images = plan.images_per_call
    if images <= 1:
        return []
    largest = max(_largest_request(report), 1)
    limits = getattr(provider_class(provider.name), "request_limits", None)
    out = []
    if limits is not None:
        if images > limits.images:
            out.append(
                f"{images} images in one request: the {limits.source} takes at most {limits.images}; "
                "lower agent.patch_count"
            )
        if largest > limits.input_tokens:
            out.append(
                f"~{largest:,} input tokens in one request: beyond the {limits.source}'s "
                f"{limits.input_tokens:,}; lower agent.patch_count or agent.patch_size"
            )
        megabytes = images * est.image_side**2 * JPEG_BYTES_PER_PIXEL * 4 / 3 / 1e6
        if megabytes > limits.payload_mb:
            out.append(
                f"~{megabytes:,.0f} MB of base64 images in one request: beyond the {limits.source}'s "
                f"{limits.payload_mb} MB; lower agent.patch_count or agent.patch_size"
            )
    if fit is not None:
        if fit.max_model_len is not None and largest > fit.max_model_len:
            out.append(
                f"~{largest:,} tokens in one request: beyond {fit.model}'s context of "
                f"{fit.max_model_len:,} ({fit.source}); lower agent.patch_count or agent.patch_size"
            )
        out.append(
            f"{images} images in one request: the server must take that many per prompt (vLLM: "
            f"--limit-mm-per-prompt '{{\"image\": {images}}}'); the run's preflight asks it first"
        )
    return out


def _largest_request(report: DryRunReport) -> int:
    """Input tokens of one request of a one-shot plan (the mean over the items: their questions
    differ by a few hundred tokens, the images by nothing)."""
    est = report.estimate
    return est.input_tokens // max(report.n_items * report.runs_per_item * est.calls_per_item_run, 1)


def _batch_cache(provider: ProviderSettings, enabled: bool) -> tuple[bool, bool, str]:
    """Whether an item's cache entries outlive a batch round (Anthropic's 1-hour ones and OpenAI's
    24-hour retention do), whether its writes are Anthropic's 1-hour ones, and the words for it."""
    if not enabled:
        return False, False, ""
    if getattr(provider, "cache_ttl", None) == "1h":
        return True, True, "1-hour cache entries outlive the rounds (provider.cache_ttl=1h)"
    if getattr(provider, "cache_ttl", None) == "5m":
        return False, False, "5-minute cache entries expire between rounds (provider.cache_ttl=5m)"
    setting = getattr(provider, "prompt_cache_retention", None)
    if setting is not None and openai_retention(setting, provider.model, batch=True) == "24h":
        words = f"24-hour cache retention outlives the rounds (provider.prompt_cache_retention={setting})"
        return True, False, words
    return False, False, "the prompt cache expires between rounds"


def _batch_usage(
    requests: list[Request], rule: CacheRule, enabled: bool, model: str, kept: bool, one_hour: bool
) -> Usage:
    """An item-run's usage with a batch round between its calls: the provider's rule over the calls
    when the cache outlives the rounds (Anthropic's writes then 1-hour ones), else each call on its
    own."""
    if kept:
        usage = _usage(requests, rule(requests, enabled, model))
        usage.cache_write_1h_tokens = usage.cache_write_tokens if one_hour else 0
        return usage
    return _usage(requests, [rule([request], enabled, model)[0] for request in requests])


def item_requests(
    plan: CallPlan, system_tokens: int, question_tokens: int, per_image: int, breakpoints: BreakpointRule
) -> list[Request]:
    """The input of each call of one item-run, segment by segment. Navigation: call t resends the
    system prompt, the question, images 1..t and answers 1..t-1, its newest message being image t
    (at t = 1 the question with the thumbnail); otherwise each call is system, question and its own
    image. The breakpoints are where the provider's own rule (`cache_breakpoints` on its class) puts
    them in such a request; every call of a one-shot mode and the last of a navigation must answer."""
    requests = []
    for t in range(1, plan.calls + 1):
        first_image = 1 if plan.conversation else t
        blocks = [Block(0, "user", "text"), *[Block(0, "user", "image")] * plan.images_per_call]
        body = [Segment("question", question_tokens), Segment(f"image {first_image}", per_image)]
        body += [Segment(f"image {first_image}.{j}", per_image) for j in range(2, plan.images_per_call + 1)]
        if plan.conversation:
            for i in range(2, t + 1):
                blocks += [Block(2 * i - 3, "assistant", "text"), Block(2 * i - 2, "user", "image")]
                body += [Segment(f"answer {i - 1}", OUTPUT_TOKENS_PER_CALL), Segment(f"image {i}", per_image)]
        # the system prompt comes first; a one-shot call's newest message is its whole user message
        newest = 1 if not plan.conversation or len(body) == 2 else len(body)
        marks = breakpoints(blocks, plan.conversation and t < plan.calls)
        marked = [segment._replace(breakpoint=n in marks.blocks) for n, segment in enumerate(body)]
        requests.append(Request((Segment("system", system_tokens, marks.system), *marked), newest))
    return requests


def _usage(requests: list[Request], splits: Sequence[CacheSplit]) -> Usage:
    return Usage(
        input_tokens=sum(request.tokens for request in requests),
        cached_input_tokens=sum(split.read for split in splits),
        cache_write_tokens=sum(split.write for split in splits),
        output_tokens=len(requests) * OUTPUT_TOKENS_PER_CALL,
    )


def _add(total: Usage, usage: Usage, times: int) -> Usage:
    fields = (
        "input_tokens",
        "cached_input_tokens",
        "cache_write_tokens",
        "cache_write_1h_tokens",
        "output_tokens",
    )
    return Usage(**{field: getattr(total, field) + times * getattr(usage, field) for field in fields})


def _range(model: str, pricing: Pricing, usages: list[Usage]) -> CostRange:
    high, expected, low = (pricing.cost(model, usage) for usage in usages)
    return CostRange(low_usd=low, expected_usd=expected, high_usd=high)


def _reports_of(folder: Path) -> list[Path]:
    """A job's dry-run report, or its tasks' (a job whose tasks mix metrics runs one per task, each in
    a folder of its own: giant.job.split_tasks)."""
    own = folder / DRY_RUN_FILE
    return [own] if own.is_file() else sorted(folder.glob(f"*/{DRY_RUN_FILE}"))


def sweep_lines(job_dirs: Sequence[Path]) -> list[str]:
    """A dry-run sweep's cells at a glance, after every job has priced its own: one line per cell
    (what an item-run sends, its warnings) and the whole sweep's expected cost per price tier."""
    reports = [
        DryRunReport.model_validate_json(path.read_text(encoding="utf-8"))
        for folder in job_dirs
        for path in _reports_of(Path(folder))
    ]
    if not reports:
        return []
    lines = [f"dry-run sweep: {len(reports)} cells priced"]
    totals: dict[str, float | None] = {}
    for report in reports:
        lines.append("  " + report.cell_line())
        lines += [f"    WARNING: {warning}" for warning in report.warnings]
        if report.no_mpp:
            lines.append(
                f"    {len(report.no_mpp)} item(s) on slides without mpp will fail (see {DRY_RUN_FILE})"
            )
        for tier, usd in report.estimate.tiers.items():
            known = totals.get(tier, 0.0)
            totals[tier] = None if usd is None or known is None else known + usd
    shown = " / ".join(
        f"{tier} {'unknown' if usd is None else f'${usd:,.2f}'}" for tier, usd in totals.items()
    )
    lines.append(f"the whole sweep, expected: {shown or 'unknown (models not in the price table)'}")
    lines.append(sweep_time_line(reports))
    return lines


def sweep_time_line(reports: Sequence[DryRunReport]) -> str:
    """The whole sweep's wall time per tier, its cells one after another (cells that share a key share
    its rate limits, so running them side by side is no faster once the limits bind); and the sum of
    the pilots' forecasts (giant.eval.pilot_time) of the cells that had a pilot."""
    spans: dict[str, tuple[float, float]] = {}
    unknown = 0
    piloted = [r.pilot.time for r in reports if r.pilot is not None and r.pilot.time is not None]
    for report in reports:
        if report.time is None or not report.time.tiers:
            unknown += 1
            continue
        for tier in report.time.tiers:
            low, high = spans.get(tier.tier, (0.0, 0.0))
            spans[tier.tier] = (low + tier.low_s, high + tier.high_s)
    shown = " / ".join(f"{tier} {duration(low)} - {duration(high)}" for tier, (low, high) in spans.items())
    left = f" ({unknown} cell(s) not timed)" if unknown else ""
    if piloted:
        forecast, low, high = (
            sum(getattr(t, field) for t in piloted) for field in ("forecast_s", "low_s", "high_s")
        )
        left += (
            f"; from the pilots of {len(piloted)} cell(s): {duration(forecast)} "
            f"({duration(low)} - {duration(high)})"
        )
    return f"the whole sweep's wall time, cells one after another: {shown or 'unknown'}{left}"
