"""The dry run: check every slide and estimate the cost before spending anything.

Resolves and opens every item's slide (missing and unreadable ones are listed, not fatal) and
estimates tokens and dollars from the price table without calling any provider.

The estimate is a documented approximation, an upper bound for a run that uses every step:
- image tokens per image of side S (every image counted as an S x S square, the largest a crop can
  be), by the formula the provider class names (giant/llm/image_tokens.py: OpenAI's high-detail
  tiles, Anthropic's pixels / 750), asked without an API key;
- text at about 4 characters per token (system prompt and question, resent at every call) and
  OUTPUT_TOKENS_PER_CALL output tokens per call (hidden reasoning tokens of reasoning models can
  be several times more), each answer resent as input at later calls;
- the mode's call plan (giant/agent/modes): navigation modes send the whole conversation at every
  call, so call t carries t images and image input grows quadratically with T; thumbnail mode is
  one call, patch mode one call per patch;
- no prompt caching (caching cuts the input cost of a T = 20 trajectory by about 75-80%).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from giant.agent.config import AgentConfig
from giant.agent.modes import mode_of
from giant.core import Item
from giant.data.check import SlideRow, check_slides, first_lines
from giant.data.slides import layout_counts
from giant.job_layout import DRY_RUN_FILE, JobLayout
from giant.llm.config import ProviderSettings
from giant.llm.factory import provider_class
from giant.llm.pricing import Pricing
from giant.llm.types import Usage

OUTPUT_TOKENS_PER_CALL = 400
CHARS_PER_TOKEN = 4
# A missing slide's size is unknown; it only changes the digits of the system prompt's size line.
UNKNOWN_SIZE = (100_000, 100_000)
ASSUMPTIONS = (
    "upper bound: every step used, every image S x S, ~4 characters per text token, "
    f"{OUTPUT_TOKENS_PER_CALL} output tokens per call, whole conversation resent per call, no prompt caching"
)


class SlideProblem(BaseModel):
    key: str
    image_path: str
    reason: str


class CostEstimate(BaseModel):
    model: str
    image_formula: str  # openai_high_detail | anthropic
    tokens_per_image: int
    calls_per_item_run: int
    input_tokens: int  # over all item-runs, including those whose slide is missing
    output_tokens: int
    cost_usd: float | None  # None when the model is not in the price table
    cost_per_item_run_usd: float | None
    assumptions: str = ASSUMPTIONS


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
        est = self.estimate
        cost = "unknown (model not in the price table)" if est.cost_usd is None else f"${est.cost_usd:,.2f}"
        lines.append(
            f"estimate for {est.model}: {est.input_tokens:,} input + {est.output_tokens:,} output tokens, "
            f"{cost} for all {self.n_items} items ({est.calls_per_item_run} calls per item-run, "
            f"{est.tokens_per_image} tokens per image, no prompt caching; an upper bound)"
        )
        return "\n".join(lines)


def _first(lines: list[str]) -> list[str]:
    return first_lines(lines, f"see {DRY_RUN_FILE}")


def dry_run(
    items: Sequence[Item],
    *,
    wsi_root: Path,
    agent: AgentConfig,
    provider: ProviderSettings,
    pricing: Pricing,
    runs_per_item: int,
    out_dir: Path | None = None,
) -> DryRunReport:
    """Check slides and estimate cost; writes out_dir/dry_run.json when out_dir is given."""
    check = check_slides(items, wsi_root)
    rows = check.by_key()
    missing, unreadable, sizes = [], [], {}
    for item in items:
        row = rows[item.key]
        if row.status == "missing":
            missing.append(SlideProblem(key=item.key, image_path=item.image_path, reason=row.reason))
        elif row.status == "unreadable":
            name = row.path.name if row.path else item.image_path
            unreadable.append(SlideProblem(key=item.key, image_path=name, reason=row.reason))
        elif row.width is not None and row.height is not None:
            sizes[item.key] = (row.width, row.height)
    report = DryRunReport(
        n_items=len(items),
        items_per_task=dict(Counter(item.benchmark for item in items)),
        runs_per_item=runs_per_item,
        runnable_items=len(sizes),
        missing=missing,
        unreadable=unreadable,
        layouts=layout_counts(row.layout for row in check.slides if row.layout),
        slides=check.slides,
        # The estimate covers every item: it is what the run costs once the slides are in place.
        estimate=estimate_cost(items, sizes, agent, provider, pricing, runs_per_item),
    )
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        JobLayout(out_dir).dry_run.write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
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
    per_image = provider_cls.image_tokens(plan.image_side, plan.image_side)
    calls = plan.calls
    images = calls * (calls + 1) // 2 if plan.conversation else calls  # call t resends all t images
    resent_outputs = calls * (calls - 1) // 2 if plan.conversation else 0
    input_tokens = output_tokens = 0
    for item in items:
        size = sizes.get(item.key, UNKNOWN_SIZE)
        text = len(item.prompt) + len(mode.system_prompt(agent, *size) or "")
        input_tokens += (
            images * per_image + calls * (text // CHARS_PER_TOKEN) + resent_outputs * OUTPUT_TOKENS_PER_CALL
        )
        output_tokens += calls * OUTPUT_TOKENS_PER_CALL
    input_tokens *= runs_per_item
    output_tokens *= runs_per_item
    cost = pricing.cost(model, Usage(input_tokens=input_tokens, output_tokens=output_tokens))
    item_runs = len(items) * runs_per_item
    return CostEstimate(
        model=model,
        image_formula=provider_cls.image_formula,
        tokens_per_image=per_image,
        calls_per_item_run=calls,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cost_usd=cost,
        cost_per_item_run_usd=cost / item_runs if cost is not None and item_runs else None,
    )
