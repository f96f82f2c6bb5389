"""The providers' published image-token formulas, for the dry run's estimate (no SDK, no key).

Each provider class names the formula its API charges by (`image_formula`, `image_tokens`); the
estimate asks the class, never the model string.
"""

from __future__ import annotations

import math


def openai_high_detail(width: int, height: int) -> int:
    """OpenAI's high-detail formula (GPT-4o family): fit 2048 px, short side to 768 px, then 85 plus
    170 per 512-px tile."""
    scale = min(1.0, 2048 / max(width, height))
    w, h = width * scale, height * scale
    scale = min(1.0, 768 / min(w, h))
    w, h = w * scale, h * scale
    return 85 + 170 * math.ceil(w / 512) * math.ceil(h / 512)


def anthropic_pixels(width: int, height: int) -> int:
    """Anthropic's approximation, width x height / 750, after its 1568 px resize."""
    scale = min(1.0, 1568 / max(width, height))
    return math.ceil(width * scale * height * scale / 750)
