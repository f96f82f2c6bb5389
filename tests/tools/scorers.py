"""A deterministic scorer for the agent side: real embeddings and real cosine similarities, no model.

The image embedding is the image's colour histogram (4 bins per channel); a hypothesis is embedded by
hashing its words onto the same 12 dimensions. Different images and different texts give different
scores, and the same inputs always the same ones.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np
from PIL import Image

BINS = 4


def image_vector(image: Image.Image) -> np.ndarray:
    pixels = np.asarray(image.convert("RGB"))
    parts = [np.histogram(pixels[..., c], bins=BINS, range=(0, 256))[0] for c in range(3)]
    return np.concatenate(parts).astype(np.float64)


def text_vector(text: str) -> np.ndarray:
    vector = np.zeros(3 * BINS)
    for word in text.lower().split():
        digest = hashlib.sha256(word.encode()).digest()
        vector[digest[0] % vector.size] += 1.0 + digest[1] / 255.0
    return vector


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


class HistogramScorer:
    """Keeps every image it was given, so a test can see what the agent sent."""

    label = "histogram test scorer"

    def __init__(self, input_size: int = 64) -> None:
        self.input_size = input_size
        self.images: list[Image.Image] = []

    def score(self, image: Image.Image, hypotheses: Sequence[str]) -> list[float]:
        self.images.append(image.copy())
        pixels = image_vector(image)
        return [cosine(pixels, text_vector(text)) for text in hypotheses]
