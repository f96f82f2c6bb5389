"""Cosine similarity of an image to text hypotheses under a loaded CoCa-style encoder."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

import torch
from PIL import Image

from giant.tools.conch.model import CocaEncoder
from giant.tools.conch.preprocess import pixel_batch
from giant.tools.conch.tokenize import Tokenizer, token_batch

TEXT_CACHE = 4096  # text embeddings kept per process (a benchmark's class names recur in every item)


class ConchScorer:
    """Scores on one device; calls are serialised (episodes run concurrently, the model is one).

    Each text is embedded on its own and kept: a hypothesis's embedding (and so its score) never
    depends on the other hypotheses of the call or on what was asked before, and a text the model
    sends again costs nothing (the text tower costs about as much as the image tower per hypothesis)."""

    def __init__(self, model: CocaEncoder, tokenizer: Tokenizer, device: torch.device, label: str) -> None:
        self.model = model.eval().to(device)
        self.tokenizer = tokenizer
        self.device = device
        self.label = label
        self.input_size = model.spec.image_size
        self._lock = threading.Lock()
        self._texts: OrderedDict[str, torch.Tensor] = OrderedDict()

    def embed_images(self, images: Sequence[Image.Image]) -> torch.Tensor:
        """Unit-length image embeddings, one row per image (one batch through the tower)."""
        pixels = pixel_batch(images, self.model.spec).to(self.device)
        with self._lock, torch.inference_mode():
            return self.model.encode_image(pixels).float().cpu()

    def embed_texts(self, texts: Sequence[str]) -> torch.Tensor:
        """Unit-length text embeddings, one row per text."""
        with self._lock, torch.inference_mode():
            for text in texts:
                if text in self._texts:
                    self._texts.move_to_end(text)
                    continue
                tokens = token_batch(self.tokenizer, [text], self.model.spec.context_length).to(self.device)
                self._texts[text] = self.model.encode_text(tokens).float().cpu()[0]
                if len(self._texts) > TEXT_CACHE:
                    self._texts.popitem(last=False)
            return torch.stack([self._texts[text] for text in texts])

    @property
    def cached_texts(self) -> int:
        return len(self._texts)

    def score(self, image: Image.Image, hypotheses: Sequence[str]) -> list[float]:
        similarities = self.embed_texts(hypotheses) @ self.embed_images([image])[0]
        return [float(value) for value in similarities]
