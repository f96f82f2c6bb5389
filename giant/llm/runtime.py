"""What every network provider does around a call: rate limits, cost, timing and the audit record.

Every lane of a run that calls one provider and model shares one pacer (giant.llm.pacer), looked up
in the running event loop at the first call: the rate limits, the rate-limit headers of each reply
and a 429's pause are the same for all of them. A 429 is asked again by the pacer (up to
RATE_LIMIT_RETRIES times, apart from `provider.max_retries`): rate limits slow a run, they do not
fail its item-runs.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from giant.llm.config import SdkSettings
from giant.llm.pacer import Kind, Pacer, pacer_for
from giant.llm.pricing import Pricing
from giant.llm.retry import with_retries
from giant.llm.sdk_errors import SDK_ERRORS, classify, unreadable_reply
from giant.llm.types import (
    CallContext,
    Conversation,
    ImagePart,
    ModelTurn,
    ProviderError,
    TextPart,
    TransientError,
    Usage,
    UserMessage,
    mark_paid,
)

_CHARS_PER_TOKEN = 4
_PIXELS_PER_TOKEN = 750  # Anthropic's published estimate; close enough for OpenAI high detail too
RATE_LIMIT_RETRIES = 20  # 429s one call is asked again after, each after every lane's shared pause


def estimate_tokens(conversation: Conversation, image_tokens: Callable[[int, int], int] | None = None) -> int:
    """A rough input size for the tokens-per-minute limiter and the budget's reservation (the real
    count arrives after the call). `image_tokens` is the provider's own rule (giant.llm.image_tokens);
    without it an image counts pixels / 750."""
    chars = len(conversation.system or "")
    pixels = images = 0
    for message in conversation.messages:
        if isinstance(message, UserMessage):
            for part in message.parts:
                if isinstance(part, TextPart):
                    chars += len(part.text)
                elif image_tokens is not None:
                    images += image_tokens(part.image.width, part.image.height)
                else:
                    pixels += part.image.width * part.image.height
        else:
            chars += len(message.raw_text) or sum(len(s.model_dump_json()) for s in message.steps)
    return chars // _CHARS_PER_TOKEN + pixels // _PIXELS_PER_TOKEN + images + 1


def count(obj: Any, *path: str) -> int:
    """A token count from an SDK usage object; 0 where the server left a field out."""
    for name in path:
        obj = getattr(obj, name, None)
        if obj is None:
            return 0
    return int(obj)


@dataclass
class Timer:
    started: float = field(default_factory=time.perf_counter)

    @property
    def seconds(self) -> float:
        return time.perf_counter() - self.started


class CallRuntime:
    def __init__(self, cfg: SdkSettings, *, provider: str) -> None:
        self.provider = provider
        self.model = cfg.model
        self.max_retries = cfg.max_retries
        self.max_tokens = cfg.max_tokens
        self.pricing = Pricing.load(cfg.pricing_file)
        self._rpm, self._tpm = cfg.rpm, cfg.tpm
        self._pacer: Pacer | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.hooked = False  # the SDK's HTTP client calls `departing` and `observe` (SdkProvider._watch)

    @property
    def pacer(self) -> Pacer:
        """This provider and model's pacer in the running loop, shared with every other lane."""
        loop = asyncio.get_running_loop()
        if self._pacer is None or self._loop is not loop:  # a provider reused by a later asyncio.run
            self._pacer = pacer_for(self.provider, self.model, rpm=self._rpm, tpm=self._tpm)
            self._loop = loop
        return self._pacer

    @property
    def pacer_used(self) -> Pacer | None:
        """The pacer, if any call of this provider was paced (None: nothing was sent)."""
        return self._pacer

    def cost(self, conversation: Conversation) -> dict[Kind, float]:
        """What a request is debited before it is sent: its estimated input, and its output cap."""
        sent = float(estimate_tokens(conversation))
        cap = float(self.max_tokens or 0)
        return {"tokens": sent + cap, "input_tokens": sent, "output_tokens": cap}

    def used(self, usage: Usage) -> dict[Kind, float]:
        """What the reply says it used; Anthropic does not count cache reads against its input limit."""
        counted = usage.input_tokens
        if self.provider == "anthropic":
            counted -= usage.cached_input_tokens
        return {
            "tokens": float(usage.input_tokens + usage.output_tokens),
            "input_tokens": float(counted),
            "output_tokens": float(usage.output_tokens),
        }

    @asynccontextmanager
    async def limited(self, conversation: Conversation, *, paced: bool = True) -> AsyncIterator[Timer]:
        """Wait for the pacer, then time the call (latency excludes the wait). A reply from the ledger
        or a batch's (`paced=False`) is not a request of this call's own, so it waits for nothing."""
        if not paced:
            yield Timer()
            return
        await self.pacer.acquire(self.cost(conversation), hooked=self.hooked)
        ok = False
        try:
            yield Timer()
            ok = True
        finally:
            self.pacer.finished(ok)

    async def departing(self, request: Any) -> None:  # an httpx request hook, as the bytes leave
        await self.pacer.depart()

    async def observe(self, response: Any) -> None:
        """An httpx response hook: the rate-limit headers of every reply, 429s included."""
        self.pacer.observe(response.status_code, response.headers)

    def priced(self, usage: Usage) -> Usage:
        """A paid call's cost at the tier that billed it, and its count among that tier's calls."""
        usage.cost_usd = self.pricing.cost(self.model, usage, usage.tier)
        usage.calls_flex = int(usage.tier == "flex")
        usage.calls_batch = int(usage.tier == "batch")
        usage.cost_flex_usd = (usage.cost_usd or 0.0) * usage.calls_flex
        usage.cost_batch_usd = (usage.cost_usd or 0.0) * usage.calls_batch
        return usage

    async def execute(  # noqa: PLR0913  the call's request, its context and the runtime's limits
        self,
        ctx: CallContext,
        conversation: Conversation,
        request: dict[str, Any],
        *,
        send: Callable[[], Awaitable[Any]],
        usage_of: Callable[[Any, float], Usage],
        parse: Callable[[Any, Usage], ModelTurn],
        secret: str | None,
        kept: Callable[[Any, Usage], None] | None = None,
        paced: bool = True,
        pace: bool = True,
    ) -> ModelTurn:
        """One call: limits, the SDK request (transient failures retried, giant.llm.retry), usage and
        cost, `kept` (the ledger keeps the paid reply before anything can fail on it), parsing, the
        audit record. `paced=False`: a reply from the ledger (no server, no retries); `pace=False`: a
        request that a batch sends (the batch API has limits of its own), retried but not paced.
        Every failure leaves as a ProviderError carrying the usage when it was billed."""
        response: Any = None
        usage: Usage | None = None

        def record(error: str | None = None, decode_note: str | None = None) -> None:
            record_call(
                ctx,
                conversation,
                provider=self.provider,
                model=self.model,
                request=request,
                response=_dump(response),
                error=error,
                decode_note=decode_note,
            )

        timer = Timer()
        throttled = 0
        pacing = paced and pace

        async def once() -> Any:
            nonlocal timer
            async with self.limited(conversation, paced=pacing) as timer:  # each attempt is paced
                try:
                    reply = await send()
                except SDK_ERRORS as exc:
                    raise classify(exc, provider=self.provider, secret=secret) from None
                except json.JSONDecodeError as exc:  # the SDK read a 200 whose body is not JSON, or empty
                    raise unreadable_reply(self.provider, f"a body that is not JSON ({exc})") from None
                if isinstance(reply, str | bytes):  # the SDK's answer to a 200 that is not JSON at all
                    raise unreadable_reply(self.provider, f"a {len(reply)}-character body that is not JSON")
                return reply

        async def attempt() -> Any:
            nonlocal throttled
            while True:
                try:
                    return await once()
                except TransientError as exc:
                    if not pacing or exc.cause != "rate_limit":
                        raise
                    if throttled >= RATE_LIMIT_RETRIES:
                        raise _Throttled(exc) from None  # not asked again by provider.max_retries too
                    throttled += 1
                    self.pacer.throttled(exc.retry_after_s, exc.limits)  # every lane waits; this goes again

        try:
            try:
                response = await with_retries(attempt, self.max_retries if paced else 0)
            except _Throttled as out:
                raise out.error from None
            usage = usage_of(response, timer.seconds)
            if pacing:
                self.pacer.corrected(self.cost(conversation), self.used(usage))
                self.pacer.answered(timer.seconds)
            if kept is not None:
                kept(response, usage)
            turn = parse(response, usage)
        except ProviderError as exc:
            exc.usage = exc.usage or usage
            record(f"{exc.kind}: {exc}")
            raise
        except Exception as exc:  # unclassified (a bug): the reply stays paid for, the error travels on
            if usage is not None:
                mark_paid(exc, usage)
            record(f"unclassified: {type(exc).__name__}: {exc}")
            raise
        record(decode_note=turn.decode_note)
        return turn


class _Throttled(Exception):
    """A call still answered 429 after RATE_LIMIT_RETRIES shared pauses: it leaves with that error."""

    def __init__(self, error: TransientError) -> None:
        super().__init__(str(error))
        self.error = error


def _dump(response: Any) -> Any:
    if response is None:
        return None
    dump = getattr(response, "model_dump", None)
    return dump(mode="json", exclude_none=True) if callable(dump) else str(response)


# ----------------------------------------------------------------------------- recording


def _image_index(conversation: Conversation) -> dict[str, str]:
    """base64 payload -> a short audit label, so saved requests hold the hash and label, not bytes."""
    index = {}
    for message in conversation.messages:
        if isinstance(message, UserMessage):
            for part in message.parts:
                if isinstance(part, ImagePart):
                    image = part.image
                    index[image.data_b64] = f"<image sha256={image.sha256} label={part.label!r}>"
    return index


def _sanitize(value: Any, images: dict[str, str]) -> Any:
    if isinstance(value, dict):
        return {k: _sanitize(v, images) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_sanitize(v, images) for v in value]
    if isinstance(value, str):
        payload = (
            value.split(";base64,", 1)[1] if value.startswith("data:") and ";base64," in value else value
        )
        if payload in images:
            return images[payload]
        if len(value) > 1000 and value.startswith("data:"):
            return f"<data url sha256={hashlib.sha256(value.encode()).hexdigest()}>"
    return value


def sanitized(request: dict[str, Any], conversation: Conversation) -> Any:
    """The wire request with each image replaced by its hash and label (records and ledger keys)."""
    return _sanitize(request, _image_index(conversation))


def record_call(
    ctx: CallContext,
    conversation: Conversation,
    *,
    provider: str,
    model: str,
    request: dict[str, Any],
    response: Any = None,
    error: str | None = None,
    decode_note: str | None = None,
) -> None:
    """Append one JSONL line: the wire request (images replaced by hash and label) and the response.

    `request` holds only the body the SDK sends; the API key lives in the client's headers and never
    reaches this record.
    """
    if not ctx.record_path:
        return
    line = {
        "time": time.time(),
        "provider": provider,
        "model": model,
        "item_key": ctx.item_key,
        "run_index": ctx.run_index,
        "step": ctx.step,
        "request": sanitized(request, conversation),
        "response": response,
        "error": error,
        "decode_note": decode_note,
    }
    path = Path(ctx.record_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as out:  # one write per line, no await in between: safe under asyncio
        out.write(json.dumps(line, default=str) + "\n")
