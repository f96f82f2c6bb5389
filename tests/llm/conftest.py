"""Helpers for provider tests: a tiny real JPEG and contexts/conversations built from giant.llm.types."""

from __future__ import annotations

import base64
import hashlib
import io

import pytest
from PIL import Image

from giant.agent.context import Context
from giant.core import AnswerSpace, EncodedImage
from giant.llm.types import CallContext, Conversation, ImagePart, TextPart, UserMessage


def make_image(
    color: tuple[int, int, int] = (200, 40, 120), size: tuple[int, int] = (16, 12)
) -> EncodedImage:
    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, format="JPEG", quality=75)
    data = buf.getvalue()
    return EncodedImage(
        data_b64=base64.b64encode(data).decode(),
        sha256=hashlib.sha256(data).hexdigest(),
        width=size[0],
        height=size[1],
    )


def make_ctx(**overrides: object) -> CallContext:
    fields: dict[str, object] = {
        "item_key": "tcga/7",
        "step": 1,
        "slide_width": 100_000,
        "slide_height": 80_000,
        "answer_space": AnswerSpace(kind="option", n_options=4),
    }
    fields.update(overrides)
    return CallContext.model_validate(fields)


def make_conversation(n_images: int = 1) -> Conversation:
    parts: list[TextPart | ImagePart] = [TextPart(text="Which cancer type is this?")]
    parts += [ImagePart(image=make_image((10 * i, 80, 90)), label=f"image {i}") for i in range(n_images)]
    return Conversation(system="You are a pathologist.", messages=[UserMessage(parts=parts)])


def agent_context() -> Context:
    """The agent's own conversation holder, started like make_conversation(): turns are added with
    its add_assistant, which must carry the provider-only state along."""
    context = Context(system="You are a pathologist.")
    context.messages = list(make_conversation().messages)
    return context


@pytest.fixture
def conversation() -> Conversation:
    return make_conversation()
