"""Bookkeeping every mode shares: provider calls and their records, regions, the retry counter, the
per-item budget, and how an episode ends.

Every call is recorded, failed ones included, with the usage the provider reported for it: nothing
that was paid for is lost from the totals.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from giant.agent.config import BaseAgentConfig
from giant.agent.images import ImageStore, Rendered
from giant.agent.limits import LimitExceeded, Limits
from giant.core import TRANSIENT_CAUSES, Box, Item, Status
from giant.llm.types import (
    CallContext,
    Conversation,
    FatalProviderError,
    ModelTurn,
    Provider,
    ProviderError,
    SentRequests,
    TokenCounts,
    Usage,
    paid_usage,
)
from giant.record.trajectory import Call, Region, Trajectory, TrajectoryTotals, error_kind
from giant.tools import Tool
from giant.wsi import SlideError
from giant.wsi.magnification import shown_mpp
from giant.wsi.slide import Slide
from giant.wsi.tissue import CropTissue, crop_tissue

log = logging.getLogger(__name__)

_RESPONSE = re.compile(r"<response>(.*?)</response>", re.DOTALL | re.IGNORECASE)


class EpisodeEnd(Exception):
    """Unwinds an episode to run_episode with its final status and a human-readable reason."""

    def __init__(self, status: Status, reason: str) -> None:
        super().__init__(reason)
        self.status: Status = status
        self.reason = reason


def task_answer(text: str) -> str:
    """The answer's task part: the last <response> block when the model used the format."""
    found = _RESPONSE.findall(text)
    return found[-1].strip() if found else text.strip()


@dataclass
class RetryCounter:
    """Consecutive failures (transient, parse, refusal, invalid crop): the item fails
    when `limit` happen in a row; any other reply resets the streak (paper_facts §10). Rule violations
    (a crop when the answer is due, a rejected early answer) have their own limit, max_corrections."""

    limit: int
    streak: list[str] = field(default_factory=list)

    def reset(self) -> None:
        self.streak.clear()

    def fail(self, status: Status, description: str) -> None:
        self.streak.append(description)
        if len(self.streak) >= self.limit:
            raise EpisodeEnd(status, f"{len(self.streak)} consecutive failures: " + "; ".join(self.streak))


C = TypeVar("C", bound=BaseAgentConfig, covariant=True)  # a mode may read its state as its base's


class EpisodeState(Generic[C]):
    """What one episode has done so far (calls, regions, steps) and the services it runs on; `C` is
    the mode's settings model."""

    def __init__(  # noqa: PLR0913  the state of one episode, built once by run_episode
        self,
        item: Item,
        slide: Slide,
        provider: Provider,
        cfg: C,
        traj: Trajectory,
        store: ImageStore,
        *,
        seed: int,
        record_path: str | None,
        limits: Limits,
        tools: Mapping[str, Tool[Any, Any, Any]],
    ) -> None:
        self.item = item
        self.slide = slide
        self.provider = provider
        self.cfg = cfg
        self.traj = traj
        self.store = store
        self.seed = seed
        self.record_path = record_path
        self.limits = limits
        self.tools = tools  # the run's loaded tools by name (giant.tools.load_tools)
        self.steps = 0  # actions executed: crops, notes and the answer (failed calls do not count)
        self.crops = 0  # regions shown besides the overview
        self._next_index = 1
        self._pending: dict[int, int] = {}  # call index -> attempt, for calls cut by the timeout
        self._sent = SentRequests()  # a retry of an identical request is a new sample, not a replay
        # The slide's tissue mask for crop fractions: built once per slide (shared with the slide's
        # other episodes), fetched on the first crop (None: not yet; False: the slide could not give one).
        self._tissue: CropTissue | bool | None = None

    @property
    def width(self) -> int:
        return self.slide.width

    @property
    def height(self) -> int:
        return self.slide.height

    @property
    def full_box(self) -> Box:
        return Box(x=0, y=0, w=self.slide.width, h=self.slide.height)

    def spent_usd(self) -> float:
        """The item's spend so far: its provider calls, and the tools' paid calls (a captioner)."""
        return sum(call.usage.cost_usd or 0.0 for call in self.traj.calls) + tool_cost(self.traj)

    def _mean_cost(self) -> float:
        costs = [call.usage.cost_usd or 0.0 for call in self.traj.calls]
        return sum(costs) / len(costs) if costs else 0.0

    def budget_reached(self) -> bool:
        """True when the item budget leaves room for one more call but not two (giant.agent.limits)."""
        return self.limits.item_budget_reached(self.spent_usd(), self._mean_cost())

    async def call(
        self,
        conversation: Conversation,
        *,
        must_answer: bool,
        allow_crop: bool = True,
        extra_actions: tuple[str, ...] = (),
        attempt: int = 0,
    ) -> tuple[Call, ModelTurn | None]:
        """One provider call, recorded. Returns the turn, or None after an error the model may do
        better on next time (a parse error, a refusal); a fatal provider error ends the episode, and so
        does a transient one (rate limit, 5xx, connection), which the provider's retry layer has
        already sent again; so does a budget (the item's or the run's) that refuses the call. A stop or
        a halt (LimitExceeded.ends_run) leaves the episode as it is: the run ends, not the item."""
        index = self._next_index
        self._next_index += 1
        self._pending[index] = attempt
        ctx = CallContext(
            item_key=self.item.key,
            run_index=self.traj.run_index,
            seed=self.seed,
            step=index,
            slide_width=self.width,
            slide_height=self.height,
            answer_space=self.item.answer_space,
            must_answer=must_answer,
            allow_crop=allow_crop,
            extra_actions=extra_actions if allow_crop else (),
            record_path=self.record_path,
            sent=self._sent,
        )
        started = time.monotonic()
        try:
            turn = await self.limits.call(
                self.provider, conversation, ctx, spent_usd=self.spent_usd(), mean_usd=self._mean_cost()
            )
        except LimitExceeded as exc:
            self._pending.pop(index, None)  # never sent
            if exc.ends_run:
                raise
            raise EpisodeEnd("budget_exceeded", exc.reason) from None
        except ProviderError as exc:
            usage = exc.usage or Usage(cost_usd=0.0)  # no usage reported: the call was not billed
            if not usage.latency_s:
                usage = usage.model_copy(update={"latency_s": time.monotonic() - started})
            call = Call(
                index=index,
                attempt=attempt,
                error_kind=error_kind(exc),
                error=str(exc),
                cause=exc.cause,
                raw_text=exc.raw_text,
                usage=usage,
            )
            self._record(call)
            if isinstance(exc, FatalProviderError):
                if exc.cause == "context":  # its own status: the knobs that fit are in the reason
                    raise EpisodeEnd("context_exceeded", f"call {index}: {exc}") from None
                raise EpisodeEnd("provider_error", f"fatal provider error at call {index}: {exc}") from None
            if exc.cause in TRANSIENT_CAUSES:  # giant.llm.retry already asked again: one retry layer
                raise EpisodeEnd(
                    "retries_exhausted", f"call {index} failed after the provider's retries: {exc}"
                ) from None
            return call, None
        except Exception as exc:  # nothing classified it (a bug): the call is counted, the episode ends
            usage = paid_usage(exc) or Usage(cost_usd=0.0)  # paid when the reply came before the bug
            usage = usage.model_copy(update={"latency_s": usage.latency_s or time.monotonic() - started})
            error = f"{type(exc).__name__}: {exc}"
            self._record(
                Call(index=index, attempt=attempt, error_kind="provider_error", error=error, usage=usage)
            )
            raise
        usage = turn.usage
        if not usage.latency_s:
            usage = usage.model_copy(update={"latency_s": time.monotonic() - started})
        call = Call(
            index=index,
            attempt=attempt,
            steps=turn.steps,
            raw_text=turn.raw_text,
            decode_note=turn.decode_note,
            usage=usage,
        )
        self._record(call)
        return call, turn

    def _record(self, call: Call) -> None:
        self._pending.pop(call.index, None)
        self.traj.calls.append(call)

    def record_interrupted(self, why: str) -> None:
        """Calls still running when the episode was cut (timeout) get a record too."""
        for index, attempt in sorted(self._pending.items()):
            self.traj.calls.append(Call(index=index, attempt=attempt, error_kind="timeout", error=why))
        self._pending.clear()
        self.traj.calls.sort(key=lambda call: call.index)

    def _is_overview(self, call_index: int) -> bool:
        """Whether a region added now is the overview: the first one of call 0, as the report counts."""
        return call_index == 0 and not any(r.call_index == 0 for r in self.traj.regions)

    @property
    def tissue(self) -> CropTissue | None:
        """The slide's crop-fraction mask, if a crop built it (the navigation record's coverage)."""
        return self._tissue if isinstance(self._tissue, CropTissue) else None

    def _build_tissue(self) -> None:
        if self._tissue is None:
            try:
                self._tissue = crop_tissue(self.slide)
            except SlideError as exc:
                log.info("no tissue fractions for %s (%s)", self.slide.path, exc)
                self._tissue = False

    async def add_crop(self, call_index: int, rendered: Rendered) -> Region:
        """`add_region` with the crop's tissue fraction: the slide's mask is built (off the event loop)
        on the episode's first crop."""
        if self._tissue is None and not self._is_overview(call_index):
            await asyncio.to_thread(self._build_tissue)
        return self.add_region(call_index, rendered)

    def add_region(self, call_index: int, rendered: Rendered) -> Region:
        """Record a region; a crop gets its tissue fraction once the mask exists (`add_crop`)."""
        region = rendered.region
        mask = self._tissue if isinstance(self._tissue, CropTissue) else None
        fraction = None if mask is None or self._is_overview(call_index) else mask.fraction(region.read)
        region_record = Region(
            call_index=call_index,
            requested=region.requested,
            read=region.read,
            level=region.level,
            output_width=rendered.encoded.width,
            output_height=rendered.encoded.height,
            image=self.store.save(rendered.encoded),
            clamped=region.clamped,
            tissue_fraction=fraction,
            mpp=shown_mpp(self.slide.mpp_x, region.read, rendered.encoded.width, rendered.encoded.height),
        )
        self.traj.regions.append(region_record)
        return region_record

    def answered(self, text: str | None, *, budget_forced: bool) -> None:
        """`text` None: the answers are elsewhere in the trajectory (patch mode's per-patch answers)."""
        self.traj.answer = None if text is None else task_answer(text)
        if budget_forced:
            self.traj.status = "budget_exceeded"
            self.traj.reason = (
                f"answered when the ${self.cfg.item_budget_usd:g} item budget left room for one more call "
                f"(spent ${self.spent_usd():.4f}); scored incorrect"
            )
        else:
            self.traj.status = "answered"
            self.traj.reason = "answered"


def tool_cost(traj: Trajectory) -> float:
    """What the episode's tool calls paid (a tool that calls a model records `cost_usd`; others none)."""
    return sum(getattr(record, "cost_usd", None) or 0.0 for record in traj.tool_calls)


def compute_totals(traj: Trajectory, *, steps: int, crops: int, seconds: float) -> TrajectoryTotals:
    """The episode's counts and cost: its provider calls' and, for the cost, its tools' paid calls."""
    usages = [call.usage for call in traj.calls]
    costs = [u.cost_usd for u in usages]
    costs += [getattr(record, "cost_usd", 0.0) for record in traj.tool_calls]
    return TrajectoryTotals(
        calls=len(traj.calls),
        steps=steps,
        crops=crops,
        **TokenCounts.summed(usages),
        cost_usd=None if any(c is None for c in costs) else sum(c for c in costs if c is not None),
        seconds=seconds,
    )
