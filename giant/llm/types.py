"""The provider contract: what the agent sends (a neutral conversation) and gets back (a model turn).

Actions are pydantic models and the single source of truth for their constraints: the OpenAI strict
schema and the Anthropic tool schema are generated from them, so the two can never drift
(paper_facts §11).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Annotated, Any, ClassVar, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, SerializeAsAny

from giant.actions import ActionModel, NonEmptyStr
from giant.core import AnswerSpace, EncodedImage, SetupCause
from giant.llm.caching import Block, CacheSplit, Marks, Request
from giant.registry import members
from giant.tagged import tagged


class CropAction(ActionModel):
    """Zoom into a level-0 box."""

    type: Literal["crop"] = "crop"
    x: int = Field(ge=0)
    y: int = Field(ge=0)
    width: int = Field(gt=0)
    height: int = Field(gt=0)


class AnswerAction(ActionModel):
    """The final answer; its task part is inside <response> when the model follows the format."""

    type: Literal["answer"] = "answer"
    text: NonEmptyStr


class NoteAction(ActionModel):
    """The authors' optional note tool: an observation repeated back after later crops."""

    type: Literal["note"] = "note"
    text: NonEmptyStr


BUILTIN_ACTIONS: dict[str, type[ActionModel]] = {
    "crop": CropAction,
    "answer": AnswerAction,
    "note": NoteAction,
}


def action_models() -> dict[str, type[ActionModel]]:
    """Every action a step may hold: the built-in ones, then each registered tool's, read from the
    registry (giant.registry), so llm/ imports nothing of tools/."""
    return {**BUILTIN_ACTIONS, **{name: tool.action for name, tool in members("tool").items()}}


Action = Annotated[SerializeAsAny[ActionModel], tagged("type", action_models)]


class Step(BaseModel):
    """One model decision: reasoning plus exactly one action."""

    model_config = ConfigDict(extra="forbid")
    reasoning: NonEmptyStr
    action: Action
    call_id: str | None = None  # the provider's tool-call id in tools mode, echoed back with results


class TokenCounts(BaseModel):
    """The token counts every level reports under the same JSON names: one call (`Usage`), one
    episode (trajectory.json totals), one item-run (a results.jsonl line), one run (summary.json)."""

    input_tokens: int = 0  # all input tokens, cached ones included
    output_tokens: int = 0  # all output tokens, reasoning included
    reasoning_tokens: int = 0
    cached_input_tokens: int = 0  # read from the provider's prompt cache
    cache_write_tokens: int = 0
    # Calls answered from the ledger (giant.llm.ledger) and what they cost when first paid: their
    # tokens are counted above as the episode used them, but they are no new spend (cost_usd 0).
    calls_replayed: int = 0
    replayed_cost_usd: float = 0.0
    # Paid calls billed at a discounted tier (giant.llm.pricing); the rest of the paid calls were standard.
    calls_flex: int = 0
    calls_batch: int = 0
    # Of cost_usd, what those calls cost: a tier's saving is only seen beside its own spend.
    cost_flex_usd: float = 0.0
    cost_batch_usd: float = 0.0

    def token_counts(self) -> dict[str, Any]:
        """Just the counts, to copy into the record of the next level up."""
        return {name: getattr(self, name) for name in TokenCounts.model_fields}

    @staticmethod
    def summed(counts: Iterable[TokenCounts]) -> dict[str, Any]:
        """Field-wise sums, as keyword arguments for the record of the next level up."""
        totals: dict[str, Any] = dict.fromkeys(TokenCounts.model_fields, 0)
        for item in counts:
            for name in totals:
                totals[name] += getattr(item, name)
        return totals


# The price tier a call was billed at: OpenAI flex processing and the providers' batch APIs cost about
# half of standard (conf/pricing.yaml).
Tier = Literal["standard", "flex", "batch"]


class Usage(TokenCounts):
    """What one provider call consumed. Image tokens are already inside input_tokens."""

    tier: Tier = "standard"  # the tier the server billed (a flex call that fell back is standard)
    # Of cache_write_tokens, those written with Anthropic's 1-hour TTL: billed at 2x input, not 1.25x.
    cache_write_1h_tokens: int = 0
    request_id: str | None = None
    latency_s: float = 0.0
    cost_usd: float | None = None  # None = model not in the pricing table ("unknown"), never a guess

    @property
    def replayed(self) -> bool:
        """Answered from the ledger: no new spend, the original cost is in replayed_cost_usd."""
        return self.calls_replayed > 0


class Reasoning(BaseModel):
    """Provider-only reasoning state of a turn (as inspect_ai's ContentReasoning): OpenAI reasoning
    items and Anthropic thinking blocks, which the API wants back unmodified in later requests. It
    travels in the conversation (ModelTurn -> AssistantMessage), so a provider keeps no per-episode
    state; only the provider named here re-sends it, the others skip it."""

    model_config = ConfigDict(extra="forbid")
    provider: str
    id: str | None = None  # OpenAI: the reasoning item id
    summary: list[str] = Field(default_factory=list)  # OpenAI: the summary texts
    thinking: str = ""  # Anthropic: the thinking text
    signature: str = ""  # OpenAI encrypted_content; Anthropic signature, or redacted_thinking data
    redacted: bool = False  # Anthropic redacted_thinking


class ModelTurn(BaseModel):
    """One provider call's parsed result. Structured mode yields one step; OpenAI tools mode may
    yield several crops in one turn (all are executed, in order)."""

    steps: list[Step] = Field(min_length=1)
    usage: Usage
    raw_text: str = ""  # the whole reply, whatever the decoder passed over
    decode_note: str | None = None  # how the steps were found when the reply was not one clean object
    reasoning: list[Reasoning] = Field(default_factory=list)  # copied into the AssistantMessage


# ----------------------------------------------------------------------------- conversation


class TextPart(BaseModel):
    type: Literal["text"] = "text"
    text: str


class ImagePart(BaseModel):
    type: Literal["image"] = "image"
    image: EncodedImage
    label: str = ""  # e.g. "overview" or "crop (x=.., y=.., w=.., h=..)": used in saved requests


Part = Annotated[TextPart | ImagePart, Field(discriminator="type")]


class UserMessage(BaseModel):
    """Text and images for the model. `in_reply_to` is the call_id of the step this message answers
    (the crop result in tools mode); None for the first message and plain corrective messages."""

    role: Literal["user"] = "user"
    parts: list[Part]
    in_reply_to: str | None = None


class AssistantMessage(BaseModel):
    """What the model said earlier; providers re-render it in their own wire format."""

    role: Literal["assistant"] = "assistant"
    steps: list[Step]
    raw_text: str = ""
    reasoning: list[Reasoning] = Field(default_factory=list)  # the turn's provider-only state


Message = Annotated[UserMessage | AssistantMessage, Field(discriminator="role")]


class SentRequests:
    """The ledger keys one episode has asked for, counted. A request identical to an earlier one of
    the same episode (the retry after a reply that did not parse or was refused, the first call of a
    restarted attempt) asks the model again for a new sample: were it keyed as the first, the ledger
    would answer it with the reply it retries. The count restarts with the episode, so a resumed
    episode meets its calls in the same order and replays every one of them."""

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}

    def repeat(self, key: str) -> int:
        """How many earlier calls of this episode had `key` (0 for the first), counting this one."""
        seen = self._counts.get(key, 0)
        self._counts[key] = seen + 1
        return seen


class CallContext(BaseModel):
    """Per-call facts a provider may need beyond the conversation."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    item_key: str  # also the prompt-cache key, so one item's calls share a cache prefix
    run_index: int = 0
    seed: int = 0
    step: int  # 1-based provider call index within the episode
    slide_width: int
    slide_height: int
    answer_space: AnswerSpace
    must_answer: bool = False  # the final step (or a forced answer): a crop will be rejected
    allow_crop: bool = True  # False for one-shot modes (thumbnail, patch)
    # Actions beyond crop and answer the model is offered (schema enum / tools): the note tool, tools.
    extra_actions: tuple[str, ...] = ()
    record_path: str | None = None  # if set, append the sanitized request and response here (JSONL)
    sent: SentRequests | None = None  # the episode's ledger keys so far (None: a call on its own)


class Conversation(BaseModel):
    system: str | None
    messages: list[Message]


# ----------------------------------------------------------------------------- errors


class ProviderError(Exception):
    """A provider call that produced no usable turn. Carries usage when the call was billed."""

    kind: str = "provider_error"

    def __init__(
        self,
        message: str,
        *,
        usage: Usage | None = None,
        raw_text: str = "",
        cause: SetupCause | None = None,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(message)
        self.usage = usage
        self.raw_text = raw_text
        self.cause = cause  # what the user must fix (key, quota, ...); None: the model's reply or unknown
        self.retry_after_s = retry_after_s  # the pause the server asked for before asking again


class TransientError(ProviderError):
    """Rate limit, timeout, 5xx after the SDK's own retries: worth asking again."""

    kind = "transient"


class ParseError(ProviderError):
    """The model answered but the reply is not a valid step (bad JSON, schema violation, truncation)."""

    kind = "parse"


class RefusalError(ProviderError):
    """The model refused to answer."""

    kind = "refusal"


class FatalProviderError(ProviderError):
    """Authentication, bad request, unknown model: asking again will not help."""

    kind = "fatal"


_PAID = "giant_paid_usage"


def mark_paid(error: BaseException, usage: Usage) -> None:
    """An exception nothing classified, raised after the reply was paid for (a bug in the parser):
    it carries the call's usage, so the episode records the call as paid (paid_usage)."""
    setattr(error, _PAID, usage)


def paid_usage(error: BaseException) -> Usage | None:
    """The usage mark_paid put on `error`, if any."""
    usage = getattr(error, _PAID, None)
    return usage if isinstance(usage, Usage) else None


class Provider(Protocol):
    """One small protocol per concept (as in inspect_ai): the agent's only view of a model."""

    name: str
    model: str

    async def next_turn(self, conversation: Conversation, ctx: CallContext) -> ModelTurn:
        """Send the whole conversation, return the parsed turn or raise a ProviderError subclass."""
        ...


class ProviderClass(Protocol):
    """A registered provider class (giant.llm.factory): what it is built from, and what the dry run
    asks it without an API key."""

    image_formula: ClassVar[str]  # the name of its image-token formula, shown in the dry run

    def __call__(self, cfg: Any, *, http_client: Any = None, ledger: Any = None, **batches: Any) -> Provider:
        """Offline providers accept and ignore `http_client` and `ledger` (a giant.llm.ledger.Ledger:
        they pay for nothing, so keep nothing) so every provider is built alike. A provider in batch
        mode is also handed the run's `batches` (giant.llm.batch.batch_collector)."""
        ...

    def image_tokens(self, width: int, height: int) -> int:
        """Input tokens one image of this size costs (a static method on the class)."""
        ...

    def cache_rule(self, requests: Sequence[Request], enabled: bool, model: str = "") -> list[CacheSplit]:
        """Input tokens of each request read from and written to the prompt cache, by the provider's
        billing (giant.llm.caching; a static method on the class)."""
        ...

    def cache_breakpoints(self, blocks: Sequence[Block], write_newest: bool = True) -> Marks:
        """Where the provider marks cache breakpoints in a request's blocks: the rule its requests
        follow and the dry run asks (giant.llm.caching; a static method on the class)."""
        ...
