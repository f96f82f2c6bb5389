"""What one request may carry at a hosted API, as the dry run checks a plan against it before any
call (an open-model server's own limits come from the run's preflight, giant.llm.preflight, and its
context from giant.eval.context_fit).

Each provider class names its limits (`request_limits`), as it names its image-token formula; the
figures are the providers' published ones and may change, so the dry run warns, it never refuses.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RequestLimits:
    images: int  # images in one request
    input_tokens: int  # prompt tokens of one request (the smallest window of the provider's current models)
    payload_mb: int  # request body size
    source: str  # where the figures come from


# OpenAI's image-input requirements: up to 500 images and 50 MB per request; GPT-5's 400k-token window
# holds at most 272k input tokens (128k are kept for the output).
OPENAI_LIMITS = RequestLimits(images=500, input_tokens=272_000, payload_mb=50, source="OpenAI API")
# Anthropic's vision guide: up to 100 images per request for models with a 200k-token window (and at
# most 2000 x 2000 px each beyond 20 images); standard endpoints take 32 MB per request.
ANTHROPIC_LIMITS = RequestLimits(images=100, input_tokens=200_000, payload_mb=32, source="Anthropic API")
