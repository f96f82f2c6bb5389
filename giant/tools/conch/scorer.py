"""Cosine similarity of an image to text hypotheses under a loaded CoCa-style encoder."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import torch
from PIL import Image

from giant.tools.conch.model import CocaEncoder
from giant.tools.conch.preprocess import pixel_batch
from giant.tools.conch.tokenize import Tokenizer, token_batch


class ConchScorer:
    """Scores on one device; calls are serialised (episodes run concurrently, the model is one)."""

    def __init__(self, model: CocaEncoder, tokenizer: Tokenizer, device: torch.device, label: str) -> None:
        self.model = model.eval().to(device)
        self.tokenizer = tokenizer
        self.device = device
        self.label = label
        self.input_size = model.spec.image_size
        self._lock = threading.Lock()

    def embed_images(self, images: Sequence[Image.Image]) -> torch.Tensor:
        """Unit-length image embeddings, one row per image (one batch through the tower)."""
        pixels = pixel_batch(images, self.model.spec).to(self.device)
        with self._lock, torch.inference_mode():
            return self.model.encode_image(pixels).float().cpu()

    def embed_texts(self, texts: Sequence[str]) -> torch.Tensor:
        tokens = token_batch(self.tokenizer, texts, self.model.spec.context_length).to(self.device)
        with self._lock, torch.inference_mode():
            return self.model.encode_text(tokens).float().cpu()

    def score(self, image: Image.Image, hypotheses: Sequence[str]) -> list[float]:
        similarities = self.embed_texts(hypotheses) @ self.embed_images([image])[0]
        return [float(value) for value in similarities]
