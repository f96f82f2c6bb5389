"""The frame the SDK-backed providers (openai, anthropic, gemini, openai_compatible) share.

Each API differs in its client and in how the request is built, sent, counted and parsed; the rest
(the constructor, one `CallRuntime` per instance, the key, the client options, request id, latency
and cost on the usage, the call path through `CallRuntime.execute`) is the same and lives here once.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, Generic, TypeVar

from giant.errors import ConfigError
from giant.llm.batch import BatchApi, BatchCollector
from giant.llm.config import BatchedSettings, SdkSettings
from giant.llm.ledger import Ledger, LedgerEntry, call_key
from giant.llm.runtime import CallRuntime, sanitized
from giant.llm.types import CallContext, Conversation, ModelTurn, Usage

S = TypeVar("S", bound=SdkSettings)


def client_options(cfg: SdkSettings, http_client: Any) -> dict[str, Any]:
    """The SDK client arguments both SDKs take alike (the key differs per provider). The SDK retries
    nothing: giant.llm.retry is the one layer that does (`cfg.max_retries`)."""
    return {
        "base_url": cfg.base_url,
        "max_retries": 0,
        "timeout": cfg.client_timeout_s(),
        "http_client": http_client,
    }


def length_label(kind: str, opaque: str) -> str:
    """What audit records keep of an encrypted or signed blob: its kind and length, never the blob."""
    return f"<{kind} {len(opaque)} chars>"


class SdkProvider(ABC, Generic[S]):
    """Holds the settings, the client and the call runtime, never episode state: whatever a later
    request needs from a reply travels in the conversation (`ModelTurn.reasoning`)."""

    name: str  # set by each subclass; also the provider label in errors and records

    def __init__(
        self,
        cfg: S,
        *,
        http_client: Any = None,
        ledger: Ledger | None = None,
        batches: BatchCollector | None = None,
    ) -> None:
        self.cfg = cfg
        self.ledger = ledger  # where paid replies are kept, and replayed from (None: every call is sent)
        self.model = cfg.model
        self.runtime = CallRuntime(cfg, provider=self.name)
        self._key = cfg.api_key()
        self.client = self._client(http_client)
        # The run's batch rounds (provider.batch=true; None: each call is sent on its own), shared by
        # every episode of the run: the provider sends through them, the runner counts the episodes.
        self.batches = batches
        if isinstance(cfg, BatchedSettings) and cfg.batch and (batches is None or ledger is None):
            raise ConfigError(
                f"provider={self.name}: provider.batch=true needs a run's batch collector and ledger "
                "(scripts/run_eval.py builds both); set provider.batch=false to send each call on its own"
            )
        if batches is not None and ledger is not None:
            batches.connect(self._batch_api, _BatchReplies(self, ledger), self._key or None)
        self._watched = False

    @abstractmethod
    def _client(self, http_client: Any) -> Any:
        """The SDK's async client, which retries nothing (giant.llm.retry is the one layer);
        `http_client` (an httpx2.AsyncClient) lets tests drive the real SDK through a mock transport."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, protocol={self.cfg.protocol!r})"

    def _watch(self) -> None:
        """Read the rate-limit headers of every reply the SDK's HTTP client receives (an httpx
        response hook, so 429s and replies the SDK parses alike) into the shared pacer."""
        if self._watched:
            return
        self._watched = True
        http = getattr(self.client, "_client", None)  # the openai and anthropic SDKs'
        hooks = getattr(http, "event_hooks", None)
        if isinstance(hooks, dict):
            http.event_hooks = {**hooks, "response": [*hooks.get("response", []), self.runtime.observe]}  # type: ignore[union-attr]

    def _batch_api(self) -> BatchApi:
        """The API's batch wire format (its provider package's batch.py)."""
        raise ConfigError(f"provider={self.name} has no batch API; set provider.batch=false")

    @abstractmethod
    def build_request(self, conversation: Conversation, ctx: CallContext) -> dict[str, Any]:
        """The wire body (also what the audit record saves)."""

    @abstractmethod
    async def _send(self, request: dict[str, Any]) -> Any:
        """The SDK call; its exceptions are classified by the runtime."""

    @abstractmethod
    def _tokens(self, response: Any) -> Usage:
        """The token counts of a response; request id, latency and cost are added here."""

    @abstractmethod
    def _parse(self, response: Any, usage: Usage) -> ModelTurn:
        """The reply -> a turn, or a ProviderError subclass naming what was wrong."""

    def _recorded(self, request: dict[str, Any]) -> dict[str, Any]:
        """The request as the audit record saves it; a provider shrinks bulky opaque payloads here."""
        return request

    async def next_turn(self, conversation: Conversation, ctx: CallContext) -> ModelTurn:
        request = self.build_request(conversation, ctx)
        recorded = self._recorded(request)
        keep = None
        send: Callable[[], Awaitable[Any]] = partial(self._send, request)
        if self.ledger is not None:
            keyed = partial(
                call_key,
                provider=self.name,
                model=self.model,
                settings=self.cfg.model_dump(mode="json"),
                request=sanitized(request, conversation),
                run_index=ctx.run_index,
            )
            key = keyed()
            if ctx.sent is not None and (repeat := ctx.sent.repeat(key)):
                key = keyed(repeat=repeat)
            # A key a batch in flight holds is answered by it, as paid now, even if its reply reached
            # the ledger first (a batch this run collected for a job that died).
            held = self.batches is not None and await self.batches.holds(key)
            entry = None if held else self.ledger.get(key)
            if entry is not None:
                return await self._replay(entry, ctx, conversation, recorded)
            keep = self._keeper(self.ledger, key, ctx, conversation, recorded)
            if self.batches is not None:  # the ledger key is the request's custom_id in its batch
                send = partial(self.batches.call, key, request)
        self._watch()
        return await self.runtime.execute(
            ctx,
            conversation,
            recorded,
            send=send,
            usage_of=self._usage,
            parse=self._parse,
            secret=self._key or None,
            kept=keep,
            pace=self.batches is None,
        )

    def _keeper(
        self, ledger: Ledger, key: str, ctx: CallContext, conversation: Conversation, recorded: dict[str, Any]
    ) -> Callable[[Any, Usage], None]:
        """What puts a paid reply into the ledger, called before the reply is parsed."""

        def keep(response: Any, usage: Usage) -> None:
            entry = Ledger.entry(
                key,
                provider=self.name,
                model=self.model,
                run_index=ctx.run_index,
                request=sanitized(recorded, conversation),
                response=response,
                usage=usage,
            )
            ledger.put(entry, conversation)

        return keep

    async def _replay(
        self, entry: LedgerEntry, ctx: CallContext, conversation: Conversation, recorded: dict[str, Any]
    ) -> ModelTurn:
        """The kept reply, rebuilt as the SDK object and parsed again exactly as when it was paid
        (a reply that failed to parse fails the same way): no new spend, the first cost kept apart."""
        response = entry.reply()

        async def send() -> Any:
            return response

        def usage_of(_: Any, latency: float) -> Usage:
            usage = Usage.model_validate(entry.usage)
            usage.latency_s = latency
            usage.replayed_cost_usd = entry.cost_usd or 0.0
            usage.cost_usd = 0.0
            usage.calls_replayed = 1
            usage.calls_flex = usage.calls_batch = 0  # not paid now; `tier` keeps how it was billed
            usage.cost_flex_usd = usage.cost_batch_usd = 0.0
            return usage

        return await self.runtime.execute(
            ctx,
            conversation,
            recorded,
            send=send,
            usage_of=usage_of,
            parse=self._parse,
            secret=None,
            paced=False,
        )

    def _usage(self, response: Any, latency: float) -> Usage:
        usage = self._tokens(response)
        if self.batches is not None:
            usage.tier = "batch"  # billed at the batch rates, whatever the reply says of its tier
        usage.request_id = getattr(response, "_request_id", None) or response.id
        usage.latency_s = latency
        return self.runtime.priced(usage)


class _BatchReplies:
    """The ledger as batch mode's ReplyStore (giant.llm.batch): a reply kept when its batch ends,
    by key, priced at the batch tier; the call that asks for it later rewrites the entry whole."""

    def __init__(self, provider: SdkProvider[Any], ledger: Ledger) -> None:
        self.provider = provider
        self.ledger = ledger

    def keep(self, key: str, reply: Any) -> None:
        provider = self.provider
        entry = Ledger.entry(
            key,
            provider=provider.name,
            model=provider.model,
            run_index=None,
            request=None,
            response=reply,
            usage=provider._usage(reply, 0.0),
        )
        self.ledger.put(entry)

    def reread(self, key: str) -> Any:
        entry = self.ledger.read(key)
        return None if entry is None else entry.reply()
