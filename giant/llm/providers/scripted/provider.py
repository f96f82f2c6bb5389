"""Replays a JSONL script of model outputs: for tests, demos and reproducing a bug report.

One line per model call. A line is a step `{"reasoning": ..., "action": {"type": "crop", ...}}`, a
list of steps (several crops in one turn), `{"steps": [...]}`, or a failure
`{"error": "transient" | "parse" | "refusal" | "fatal", "message": ..., "raw_text": ...}`. Any dict
line may carry `"sleep": seconds` to simulate latency or a hang (runner timeout tests). Each
(item, run) has its own cursor starting at line 1, so the script replays identically for every item.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from giant.errors import ConfigError
from giant.llm.caching import no_breakpoints, no_caching
from giant.llm.image_tokens import openai_high_detail
from giant.llm.ledger import Ledger
from giant.llm.providers.scripted import ScriptedSettings
from giant.llm.types import (
    CallContext,
    Conversation,
    FatalProviderError,
    ModelTurn,
    ParseError,
    ProviderError,
    RefusalError,
    Step,
    TransientError,
    Usage,
)

ERRORS: dict[str, type[ProviderError]] = {
    "transient": TransientError,
    "parse": ParseError,
    "refusal": RefusalError,
    "fatal": FatalProviderError,
}


class ScriptLine(BaseModel):
    """One scripted model call: either steps or an error, optionally after a delay."""

    model_config = ConfigDict(extra="forbid")
    steps: list[Step] = Field(default_factory=list)
    error: Literal["transient", "parse", "refusal", "fatal"] | None = None
    message: str = ""
    raw_text: str = ""
    sleep: float = Field(0.0, ge=0)

    @classmethod
    def parse(cls, text: str) -> ScriptLine:
        data = json.loads(text)
        if isinstance(data, list):
            data = {"steps": data}
        elif isinstance(data, dict) and "action" in data:
            sleep = data.pop("sleep", 0.0)
            data = {"steps": [data], "sleep": sleep}
        line = cls.model_validate(data)
        if (line.error is None) == (not line.steps):
            raise ValueError("a line needs either steps or an error, not both and not neither")
        return line


def load_script(path: str) -> list[ScriptLine]:
    """Read and validate the whole script up front, so a typo fails before any item starts (that
    the file exists, ScriptedSettings checked)."""
    file = Path(path)
    lines = []
    for number, text in enumerate(file.read_text().splitlines(), start=1):
        if not text.strip():
            continue
        try:
            lines.append(ScriptLine.parse(text))
        except ValidationError as exc:  # name the field: pydantic's first line is only the model
            error = exc.errors()[0]
            first = f"{'.'.join(str(part) for part in error['loc'])}: {error['msg']}"
            raise ConfigError(
                f"provider.script={path} line {number}: invalid ({first}); fix the line"
            ) from None
        except ValueError as exc:  # json.JSONDecodeError is a ValueError
            first = str(exc).splitlines()[0]
            raise ConfigError(
                f"provider.script={path} line {number}: invalid ({first}); fix the line"
            ) from None
    if not lines:
        raise ConfigError(f"provider.script={path}: the script is empty; add one JSONL line per model call")
    return lines


class ScriptedProvider:
    name = "scripted"
    # It looks at no image; the dry run estimates it as the default model it stands in for.
    image_formula = "openai_high_detail"
    image_tokens = staticmethod(openai_high_detail)
    cache_rule = staticmethod(no_caching)
    cache_breakpoints = staticmethod(no_breakpoints)  # its requests mark no breakpoint

    def __init__(
        self, cfg: ScriptedSettings, *, http_client: Any = None, ledger: Ledger | None = None
    ) -> None:
        self.model = cfg.model
        self.path = cfg.script
        self.lines = load_script(cfg.script)
        self._cursors: dict[tuple[str, int], int] = {}

    async def next_turn(self, conversation: Conversation, ctx: CallContext) -> ModelTurn:
        key = (ctx.item_key, ctx.run_index)
        index = self._cursors.get(key, 0)
        if index >= len(self.lines):
            raise FatalProviderError(
                f"scripted provider: {self.path} has {len(self.lines)} lines but item {ctx.item_key} "
                f"run {ctx.run_index} asked for call {index + 1}; add lines to the script"
            )
        self._cursors[key] = index + 1
        line = self.lines[index]
        if line.sleep:
            await asyncio.sleep(line.sleep)
        usage = Usage(cost_usd=0.0)
        if line.error is not None:
            message = line.message or f"scripted {line.error} error (line {index + 1})"
            raise ERRORS[line.error](message, usage=usage, raw_text=line.raw_text)
        raw = json.dumps([step.model_dump(exclude_none=True) for step in line.steps])
        return ModelTurn(steps=line.steps, usage=usage, raw_text=raw)
