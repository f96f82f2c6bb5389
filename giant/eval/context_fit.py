"""Whether a run's largest prompt fits a self-hosted model's context, planned before the run.

A navigation call t carries the overview and t-1 crops (at most `agent.max_images_in_context` of
them shown), the answers so far and the texts around them; the last call is the largest. On a 32k
model, T=20 crops at S=1000 do not fit and every item would fail somewhere in the middle; the dry
run says so up front, for T = 5, 10, 20, and names the `agent.max_images_in_context` or
`agent.crop_size` that would fit. Image tokens come from the model family's own rule
(giant.llm.image_tokens, `provider.image_tokens`); text at ~4 characters per token, as the cost
estimate counts it.

Also the run's preflight hook (`check_server`): what the agent will send, asked of the server first.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from giant.agent.modes import mode_of
from giant.core import Item
from giant.errors import ConfigError
from giant.llm.config import ProviderSettings
from giant.llm.image_tokens import FAMILIES, ImageRule, family_of
from giant.llm.preflight import ImageNeed, preflight, served
from giant.llm.providers.openai_compatible import OpenAICompatibleSettings

if TYPE_CHECKING:
    from giant.agent.modes import AgentConfig

log = logging.getLogger(__name__)

FIT_STEPS = (5, 10, 20)
OUTPUT_TOKENS_PER_CALL = 400  # as the cost estimate (giant.eval.dryrun) counts a reply
STEP_TEXT_TOKENS = 120  # a crop's text around its image (region, steps left, a dropped image's note)
CHARS_PER_TOKEN = 4
MIN_CROP_SIZE = 224  # the smallest S the fit suggests: below it a crop shows little tissue
CROP_STEP = 32
SERVER_TIMEOUT_S = 5.0  # the dry run's GET /v1/models: a server that is not up is no error there


def image_need(agent: AgentConfig) -> ImageNeed:
    """The most images one prompt carries: call T of a navigation holds the overview and T-1 crops,
    capped by max_images_in_context; a one-shot mode sends its plan's images per call (patch mode's joint
    call: every patch)."""
    plan = mode_of(agent).plan(agent)
    cap: int | None = getattr(agent, "max_images_in_context", None)
    most = plan.calls if plan.conversation else plan.images_per_call
    return ImageNeed(min(most, cap) if cap else most, agent.max_steps, cap)


def image_rule(
    provider: ProviderSettings, provider_rule: ImageRule, provider_formula: str
) -> tuple[str, ImageRule]:
    """The image-token rule the estimate uses: the family `provider.image_tokens` names (or the model
    name suggests), where the provider has that setting; else the provider class's own."""
    setting = getattr(provider, "image_tokens", None)
    if not isinstance(setting, str):
        return provider_formula, provider_rule
    family = family_of(provider.model, setting)
    return family, FAMILIES[family]


class FitRow(BaseModel):
    steps: int  # T
    images: int  # images in the last call
    tokens: int  # the last call's prompt plus its reply
    fits: bool
    max_images_in_context: int | None = None  # the largest that fits (None: none needed, or none does)
    crop_size: int | None = None  # the largest S that fits with the same images (None: likewise)


class ContextFit(BaseModel):
    model: str
    family: str
    crop_size: int
    tokens_per_image: int
    max_model_len: int | None
    source: str  # where max_model_len came from
    rows: list[FitRow]

    def render(self) -> list[str]:
        if self.max_model_len is None:
            return [f"context fit: max_model_len unknown ({self.source}); set provider.max_model_len"]
        lines = [
            f"context fit for {self.model} (max_model_len {self.max_model_len:,} from {self.source}; "
            f"{self.family}: {self.tokens_per_image:,} tokens per {self.crop_size} px image):",
            f"  {'T':>3} {'images':>6} {'tokens':>8}  fits  would fit",
        ]
        for row in self.rows:
            fixes = []
            if row.max_images_in_context is not None:
                fixes.append(f"agent.max_images_in_context={row.max_images_in_context}")
            if row.crop_size is not None:
                fixes.append(f"agent.crop_size={row.crop_size}")
            hint = "" if row.fits else (" or ".join(fixes) or "neither knob alone; lower agent.max_steps")
            fits = "yes" if row.fits else "NO"
            lines.append(f"  {row.steps:>3} {row.images:>6} {row.tokens:>8,}  {fits:<4}  {hint}".rstrip())
        return lines


def last_call_tokens(steps: int, shown: int, per_image: int, text_tokens: int, reply_tokens: int) -> int:
    """Call T's prompt: the text, `shown` images, T-1 answers with their crop texts; plus its reply."""
    per_step = OUTPUT_TOKENS_PER_CALL + STEP_TEXT_TOKENS
    return text_tokens + shown * per_image + (steps - 1) * per_step + reply_tokens


def fit_rows(
    *,
    max_model_len: int,
    rule: ImageRule,
    crop_size: int,
    cap: int | None,
    text_tokens: int,
    reply_tokens: int,
    steps: Sequence[int] = FIT_STEPS,
) -> list[FitRow]:
    """One row per T: does the last call fit, and if not, which cap or crop size would."""
    per_image = rule(crop_size, crop_size)
    rows = []
    for t in steps:
        shown = min(t, cap) if cap else t

        def tokens(images: int, side_tokens: int, t: int = t) -> int:
            return last_call_tokens(t, images, side_tokens, text_tokens, reply_tokens)

        total = tokens(shown, per_image)
        row = FitRow(steps=t, images=shown, tokens=total, fits=total <= max_model_len)
        if not row.fits:
            # At least 2: one image left is the overview alone, and no crop would ever be seen.
            row.max_images_in_context = next(
                (n for n in range(shown - 1, 1, -1) if tokens(n, per_image) <= max_model_len), None
            )
            row.crop_size = next(
                (
                    s
                    for s in range(crop_size - CROP_STEP, MIN_CROP_SIZE - 1, -CROP_STEP)
                    if tokens(shown, rule(s, s)) <= max_model_len
                ),
                None,
            )
        rows.append(row)
    return rows


def context_fit(items: Sequence[Item], agent: AgentConfig, provider: ProviderSettings) -> ContextFit | None:
    """The dry run's fit table for an openai_compatible run (None for the hosted APIs, whose
    windows are far larger than a run sends)."""
    if not isinstance(provider, OpenAICompatibleSettings):
        return None
    mode = mode_of(agent)
    plan = mode.plan(agent)
    family, rule = image_rule(provider, FAMILIES["openai_high_detail"], "openai_high_detail")
    limit, source = provider.max_model_len, "provider.max_model_len"
    if limit is None:
        limit, source = _served_limit(provider)
    system = len(mode.system_prompt(agent, 100_000, 100_000) or "")
    question = max((len(item.prompt) for item in items), default=0)
    cap = getattr(agent, "max_images_in_context", None)
    rows = (
        fit_rows(
            max_model_len=limit,
            rule=rule,
            crop_size=plan.image_side,
            cap=cap,
            text_tokens=(system + question) // CHARS_PER_TOKEN,
            reply_tokens=provider.max_tokens or OUTPUT_TOKENS_PER_CALL,
        )
        if limit is not None
        else []
    )
    return ContextFit(
        model=provider.model,
        family=family,
        crop_size=plan.image_side,
        tokens_per_image=rule(plan.image_side, plan.image_side),
        max_model_len=limit,
        source=source,
        rows=rows,
    )


def _served_limit(provider: OpenAICompatibleSettings) -> tuple[int | None, str]:
    """max_model_len from the server's GET /v1/models (free: no model call), when it is up."""
    import openai

    if provider.base_url is None:  # a dry run without the server's address asks no one
        return None, "no provider.base_url to ask"
    client = openai.OpenAI(
        api_key="not-needed", base_url=provider.base_url, max_retries=0, timeout=SERVER_TIMEOUT_S
    )
    try:
        facts = served(client, provider, "")
    except ConfigError as exc:
        return None, f"the server did not say: {exc}"[:300]
    if facts.unconfirmed:
        return None, f"the server did not say: {'; '.join(facts.unconfirmed)}"[:300]
    if facts.max_model_len is None:
        return None, f"{'the server' if facts.server == 'unknown' else facts.server} does not report it"
    return facts.max_model_len, f"{provider.base_url}/models"


def check_server(provider_settings: ProviderSettings, agent: AgentConfig, provider: Any) -> None:
    """The run's preflight (provider.preflight): raises ConfigError with the one line; keeps the
    server's max_model_len on the provider for its context errors, and warns when the plan does not
    fit it."""
    if not isinstance(provider_settings, OpenAICompatibleSettings) or not provider_settings.preflight:
        return
    need = image_need(agent)
    facts = preflight(provider_settings, need)
    limit = provider_settings.max_model_len or facts.max_model_len
    doubts = list(facts.unconfirmed)
    if facts.max_model_len is None:
        doubts.append(
            "the context length (unknown: set provider.max_model_len to check prompts against it)"
            if limit is None
            else f"the context length (provider.max_model_len={limit} is used)"
        )
    if doubts:
        log.warning(
            "preflight: %s answered provider.model=%s with %d image(s); not confirmed: %s",
            provider_settings.base_url,
            provider_settings.model,
            need.images,
            "; ".join(doubts),
        )
    if limit is None:
        return
    provider.max_model_len = limit
    plan = mode_of(agent).plan(agent)
    family, rule = image_rule(provider_settings, FAMILIES["openai_high_detail"], "openai_high_detail")
    total = last_call_tokens(
        plan.calls if plan.conversation else 1,
        need.images,
        rule(plan.image_side, plan.image_side),
        0,
        provider_settings.max_tokens or OUTPUT_TOKENS_PER_CALL,
    )
    if total > limit:
        log.warning(
            "the last call of an item may need ~%d tokens (%d images of %d px by the %s rule) but "
            "max_model_len is %d: items will end with cause 'context'; see the dry run's context fit",
            total,
            need.images,
            plan.image_side,
            family,
            limit,
        )
