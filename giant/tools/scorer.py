"""What the agent needs from an image-text tool: similarities of one image to text hypotheses."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from PIL import Image


class Scorer(Protocol):
    """An image-text model behind a tool. `input_size` is the square side, in pixels, the model reads:
    the agent reads the region from the slide at that size, so the model sees the slide's own pixels,
    never a resized or re-compressed copy."""

    label: str  # what the records call it, e.g. "CONCH (MahmoodLab/CONCH)"
    input_size: int

    def score(self, image: Image.Image, hypotheses: Sequence[str]) -> list[float]:
        """One similarity per hypothesis, in the hypotheses' order; the same inputs give the same scores."""
        ...
