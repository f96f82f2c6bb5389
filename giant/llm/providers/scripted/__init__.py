"""provider=scripted: replays a JSONL script of model outputs, offline and free (the class in
`provider.py`). Its values are in conf/provider/scripted.yaml."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator

from giant.llm.config import ProviderSettings, _invalid
from giant.registry import register
from giant.roles import Method


@register("provider")
class ScriptedSettings(ProviderSettings):
    implementation = "giant.llm.providers.scripted.provider:ScriptedProvider"
    name: Method[Literal["scripted"]] = Field(description="The provider; picking `provider=<name>` sets it.")
    # The YAML ships null: required.
    script: Method[str] = Field(description="A JSONL file of model outputs, one line per call (required).")

    @field_validator("script", mode="before")
    @classmethod
    def _script_exists(cls, script: object) -> object:
        if not script:
            raise _invalid("provider=scripted needs a script: pass provider.script=FILE (a JSONL of steps)")
        if isinstance(script, str) and not Path(script).is_file():
            raise _invalid("file not found; pass an existing JSONL file")  # the key and value lead the line
        return script


__all__ = ["ScriptedSettings"]
