"""provider=openai_compatible: Chat Completions against your own OpenAI-compatible server (vLLM,
Ollama, LM Studio, llama.cpp; docs/open-models.md). The class is in `provider.py`, its errors are
giant.llm.sdk_errors, its server check giant.llm.preflight; values in conf/provider/openai_compatible.yaml."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_serializer, field_validator

from giant.llm.config import SdkSettings
from giant.registry import register
from giant.roles import Method, Operational


@register("provider")
class OpenAICompatibleSettings(SdkSettings):
    implementation = "giant.llm.providers.openai_compatible.provider:OpenAICompatibleProvider"
    key_required = False
    name: Method[Literal["openai_compatible"]] = Field(
        description="The provider; picking `provider=<name>` sets it."
    )
    protocol: Method[Literal["structured"]] = Field(
        description="structured (the only protocol it speaks): one strict-JSON step per call."
    )
    base_url: Operational[str | None] = Field(
        min_length=1,
        description="The server's address, e.g. http://127.0.0.1:8000/v1 (required but by a dry run).",
    )
    image_detail: Method[Literal["high", "low", "auto"]] = Field(description="The image detail level sent.")
    # How the step schema reaches the server (provider.py): response_format (OpenAI's json_schema:
    # vLLM, Ollama >= 0.5, llama.cpp), guided_json (vLLM before 0.12, as an extra body field) or none
    # (the schema stated in the prompt, the JSON read from the text). Old configs' true and false read
    # as response_format and none.
    json_schema: Method[Literal["response_format", "guided_json", "none"]] = Field(
        description="How the step schema is enforced: response_format, guided_json (vLLM < 0.12) or "
        "none (the JSON read from the text)."
    )
    # Ask the server before any item (giant.llm.preflight): the model is served and takes the images.
    preflight: Operational[bool] = Field(
        description="Before any item, check that the server serves the model and takes the agent's images."
    )
    # Whose image-token rule plans the context (giant.llm.image_tokens.FAMILIES); auto: by model name.
    image_tokens: Operational[
        Literal["auto", "qwen2_vl", "qwen3_vl", "internvl", "gemma3", "llama4", "openai_high_detail"]
    ] = Field(description="The image-token rule used to plan the context; auto: from the model name.")
    max_model_len: Operational[int | None] = Field(
        ge=1, description="The model's context in tokens; null: read from the server's /v1/models."
    )
    # What an hour of one GPU costs (cloud rent, or your cluster's internal rate): the run's cost is
    # then its active wall time x gpus x this (giant.eval.gpu_cost). None: the cost stays unknown.
    gpu_hour_usd: Operational[float | None] = Field(
        ge=0, description="Dollars per GPU-hour: cost = wall time x gpus x this; null: cost unknown."
    )
    gpus: Operational[int] = Field(
        ge=1, description="GPUs the server runs on (vllm serve --tensor-parallel-size N: gpus=N)."
    )
    # The dry run's clock for a self-hosted model (giant.eval.timing): wall time, GPU-hours, dollars.
    tokens_per_s: Operational[float | None] = Field(
        gt=0, description="Output tokens per second of one request on the server, for the dry run's time."
    )

    @field_validator("json_schema", mode="before")
    @classmethod
    def _old_json_schema(cls, value: object) -> object:
        if isinstance(value, bool):
            return "response_format" if value else "none"
        return value

    @field_serializer("json_schema")
    def _recorded_json_schema(self, value: str) -> bool | str:
        """Recorded as it was before the choice existed (true / false), so the run key and the ledger
        keys of calls paid then still match and their replies replay free."""
        return {"response_format": True, "none": False}.get(value, value)


__all__ = ["OpenAICompatibleSettings"]
