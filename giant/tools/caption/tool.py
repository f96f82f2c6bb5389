"""The caption tool: the navigating model asks a second model (the captioner) to describe a region.

The captioner is any provider giant can build (`tools.caption.provider` and its `options` over
conf/provider/<provider>.yaml: a pathology VLM behind an OpenAI-compatible server, or a frontier
model, with flex where that provider offers it; never batch, whose rounds a step cannot wait for).
Each call sends the region, read from the slide at `size` pixels, with the settings' system prompt
and request, and asks for the description as the step schema's answer; the provider's own ledger
keeps the paid reply under a key of the request, so a rerun replays it (nothing sent, nothing paid
twice). The record keeps the description, the model, the cost and the latency; the cost joins the
item's (its budget, its summary), and `budget_usd` caps what the captioner may spend on one item.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Self

from pydantic import Field

from giant.actions import ActionModel
from giant.core import AnswerSpace, Box
from giant.errors import ConfigError
from giant.registry import register
from giant.tools.base import REGION_HINTS, Seen, Tool, ToolContext, ToolRecord, UnusableCall
from giant.tools.caption.settings import CaptionSettings
from giant.wsi.encode import encode_jpeg
from giant.wsi.region import clamp_box

if TYPE_CHECKING:
    from giant.llm.config import ProviderConfig
    from giant.llm.types import Provider


class CaptionAction(ActionModel):
    """Ask the captioner to describe a level-0 box."""

    type: Literal["caption"] = "caption"
    x: int = Field(ge=0)
    y: int = Field(ge=0)
    width: int = Field(gt=0)
    height: int = Field(gt=0)


class CaptionRecord(ToolRecord):
    """One caption call: the region, the captioner, its description, and what the call cost."""

    region: Box  # level-0 box sent (clamped to the slide)
    model: str  # "provider / model"
    width: int  # pixels sent
    height: int
    mpp: float | None  # µm/px of the image sent (None: the slide records none)
    caption: str
    cost_usd: float | None  # None: the model is not in the pricing table
    latency_s: float
    input_tokens: int
    output_tokens: int
    replayed: bool  # answered from the ledger: nothing sent, nothing paid


def caption_prompt(settings: CaptionSettings, model: str) -> str:
    """The system prompt's paragraph on the caption tool, appended when it is enabled."""
    return (
        f"You can also ask a second model ({model}) to describe a region: the caption action takes a "
        "region (x, y, width, height in level-0 pixels, like a crop); the region is read from the slide at "
        f"{settings.size} px on its longer side and the model's description comes back as text. Its "
        "description is another model's opinion, not a measurement. A caption call uses one step."
    )


@register("tool")
class CaptionTool(Tool[CaptionSettings, CaptionAction, CaptionRecord]):
    """A captioner: a provider built from the tool's settings, once per event loop."""

    name = "caption"
    settings = CaptionSettings
    action = CaptionAction
    record = CaptionRecord
    description = "Ask a second model to describe a level-0 region of the slide."
    hints: ClassVar[dict[str, str]] = REGION_HINTS
    report_title = "Caption calls"
    report_note = "the region read from the slide and described by the captioner; its cost joins the item's."

    def __init__(self, settings: CaptionSettings, provider: ProviderConfig, http_client: Any = None) -> None:
        self.cfg = settings
        self.provider_cfg = provider
        self.http_client = http_client  # tests: the SDK's transport to a loopback server
        self._built: tuple[asyncio.AbstractEventLoop, Provider] | None = None
        self._spent: dict[tuple[str, int], float] = {}  # (item, run) -> the captioner's spend

    @classmethod
    def load(cls, settings: CaptionSettings, http_client: Any = None) -> Self:
        from giant.llm.config import provider_settings
        from giant.llm.factory import check_credentials

        provider = provider_settings(settings.provider, **settings.options)
        if getattr(provider, "batch", False):
            raise ConfigError(
                "tools.caption.options.batch=true: the captioner cannot wait for a batch round (its calls "
                "happen inside a step); drop it, or use flex where the provider offers it"
            )
        try:
            check_credentials(provider)
        except ConfigError as exc:
            raise ConfigError(f"tools.caption: {exc}") from None
        return cls(settings, provider, http_client)

    @property
    def model(self) -> str:
        return f"{self.provider_cfg.name} / {self.provider_cfg.model}"

    def _provider(self) -> Provider:
        """The captioner, built in the running event loop (its rate limiter belongs to one loop)."""
        loop = asyncio.get_running_loop()
        if self._built is None or self._built[0] is not loop:
            from giant.llm.config import SdkSettings
            from giant.llm.factory import build_provider
            from giant.llm.ledger import Ledger

            paid = isinstance(self.provider_cfg, SdkSettings)
            ledger = Ledger(self.cfg.ledger_dir, replay=self.cfg.ledger) if paid else None
            self._built = (
                loop,
                build_provider(self.provider_cfg, http_client=self.http_client, ledger=ledger),
            )
        return self._built[1]

    def prompt(self) -> str:
        return caption_prompt(self.cfg, self.model)

    async def run(self, ctx: ToolContext, seen: Seen, action: CaptionAction) -> CaptionRecord:
        """Send the region to the captioner. Raises UnusableCall (its budget spent, a provider error)
        with the feedback for the model."""
        from giant.llm.types import (
            AnswerAction,
            CallContext,
            Conversation,
            ImagePart,
            ProviderError,
            TextPart,
            UserMessage,
        )

        slide = ctx.slide
        spent = self._spent.get((ctx.item_key, ctx.run_index), 0.0)
        if self.cfg.budget_usd is not None and spent >= self.cfg.budget_usd:
            raise UnusableCall(
                f"Not executed: the captioner's budget for this item (${self.cfg.budget_usd:.2f}) is spent. "
                "Crop, measure or answer instead."
            )
        box = clamp_box(
            Box(x=action.x, y=action.y, w=action.width, h=action.height), slide.width, slide.height
        )
        region = await slide.aread_region(box, self.cfg.size, fill=ctx.fill)
        image = encode_jpeg(region.image)
        long_side = max(image.width, image.height)
        mpp = None if slide.mpp_x is None else slide.mpp_x * max(region.read.w, region.read.h) / long_side
        microns = (mpp or 0.0) * image.width
        request = self.cfg.prompt.format(microns=microns, mpp=mpp or 0.0)
        conversation = Conversation(
            system=self.cfg.system,
            messages=[
                UserMessage(
                    parts=[ImagePart(image=image, label=f"region {region.read}"), TextPart(text=request)]
                )
            ],
        )
        call = CallContext(
            item_key=ctx.item_key,
            run_index=ctx.run_index,
            step=seen.call_index,
            slide_width=slide.width,
            slide_height=slide.height,
            answer_space=AnswerSpace(kind="option"),
            must_answer=True,
            allow_crop=False,
        )
        try:
            turn = await self._provider().next_turn(conversation, call)
        except ProviderError as exc:
            first = (str(exc).splitlines() or [""])[0][:200]
            raise UnusableCall(
                f"The captioner could not describe the region ({exc.kind}: {first}). Crop or answer instead."
            ) from exc
        answer = next((step.action for step in turn.steps if isinstance(step.action, AnswerAction)), None)
        if answer is None:
            raise UnusableCall("The captioner sent no description. Crop or answer instead.")
        usage = turn.usage
        self._spent[(ctx.item_key, ctx.run_index)] = spent + (usage.cost_usd or 0.0)
        return CaptionRecord(
            call_index=seen.call_index,
            tool=self.name,
            region=region.read,
            model=self.model,
            width=image.width,
            height=image.height,
            mpp=None if mpp is None else round(mpp, 4),
            caption=answer.text,
            cost_usd=usage.cost_usd,
            latency_s=round(usage.latency_s, 3),
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            replayed=usage.replayed,
        )

    def reply(self, record: CaptionRecord) -> str:
        return f"The captioner ({record.model}) described the region {record.region}:\n{record.caption}"

    @classmethod
    def show(cls, action: CaptionAction) -> list[str]:
        return [str(Box(x=action.x, y=action.y, w=action.width, h=action.height))]

    @classmethod
    def describe(cls, record: CaptionRecord) -> dict[str, Any]:
        cost = "unknown" if record.cost_usd is None else f"${record.cost_usd:.4f}"
        how = "replayed from the ledger" if record.replayed else f"{record.latency_s:.1f} s"
        return {
            "summary": f"{record.model} described {record.region} ({record.width}×{record.height} px), {how}",
            "model": record.model,
            "image": f"the region {record.region}",
            "target": str(record.region),
            "rows": [
                ("caption", record.caption),
                ("cost", cost),
                ("tokens", f"input {record.input_tokens}, output {record.output_tokens}"),
            ],
        }
