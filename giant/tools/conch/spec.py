"""The sizes of a CoCa-style image-text model: CONCH's published configuration, and a tiny one.

Both build the same modules (giant.tools.conch.model); only the numbers differ, so the tiny model
exercises every line the real weights go through (loading, preprocessing, scoring) without a download.
"""

from __future__ import annotations

from dataclasses import dataclass

# CLIP's colour statistics: CONCH normalises its input with them (its factory sets them on the model).
CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)


@dataclass(frozen=True)
class ModelSpec:
    """Every size the two towers need; the field names say which tower reads them."""

    image_size: int  # square model input, pixels
    patch_size: int
    vision_width: int
    vision_layers: int
    vision_heads: int
    embed_dim: int  # the shared image-text space the scores are computed in
    caption_dim: int  # width of the captioning pooler (kept only so checkpoints load whole)
    caption_queries: int
    pooler_heads: int
    context_length: int  # text tokens, the trailing class token included
    vocab_size: int
    text_width: int
    text_layers: int
    text_heads: int
    mlp_ratio: int = 4
    pad_id: int = 0
    mean: tuple[float, float, float] = CLIP_MEAN
    std: tuple[float, float, float] = CLIP_STD

    @property
    def grid(self) -> int:
        return self.image_size // self.patch_size


# conch_ViT-B-16: ViT-B/16 at 448 px, attentional poolers, a 12-layer text tower over 32007 BPE tokens.
CONCH = ModelSpec(
    image_size=448,
    patch_size=16,
    vision_width=768,
    vision_layers=12,
    vision_heads=12,
    embed_dim=512,
    caption_dim=768,
    caption_queries=256,
    pooler_heads=8,
    context_length=128,
    vocab_size=32007,
    text_width=768,
    text_layers=12,
    text_heads=12,
)

# The same layout at toy sizes: fast on a CPU, random weights, built in code.
TINY = ModelSpec(
    image_size=64,
    patch_size=16,
    vision_width=32,
    vision_layers=2,
    vision_heads=2,
    embed_dim=16,
    caption_dim=32,
    caption_queries=4,
    pooler_heads=2,
    context_length=16,
    vocab_size=512,
    text_width=32,
    text_layers=2,
    text_heads=2,
)
