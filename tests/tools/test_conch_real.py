"""CONCH's real weights, when you have them: GIANT_CONCH_WEIGHTS=/path/to/pytorch_model.bin (CONCH's
tokenizer JSON beside it, or GIANT_CONCH_TOKENIZER=PATH). Skipped otherwise: the weights are gated."""

from __future__ import annotations

import os

import numpy as np
import pytest

from giant.tools.conch.settings import ConchSettings
from giant.wsi.synthetic import write_synthetic_slide

from .conftest import needs_torch

WEIGHTS = os.environ.get("GIANT_CONCH_WEIGHTS")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not WEIGHTS, reason="set GIANT_CONCH_WEIGHTS=/path/to/pytorch_model.bin to run"),
]


def test_real_weights_load_strictly_and_score_reproducibly(tmp_path_factory: pytest.TempPathFactory) -> None:
    needs_torch()
    from giant.core import Box
    from giant.tools.conch.load import load_conch
    from giant.wsi.slide import Slide

    settings = ConchSettings(
        weights=str(WEIGHTS),
        tokenizer=os.environ.get("GIANT_CONCH_TOKENIZER"),
        max_hypotheses=8,
        device="auto",
        hf_token_env="HF_TOKEN",
        seed=0,
    )
    scorer = load_conch(settings)  # strict: every parameter of both encoders named and shaped as ours
    assert scorer.input_size == 448
    path = write_synthetic_slide(tmp_path_factory.mktemp("real") / "s.svs", 4000, 3000, seed=2)
    with Slide.open(path) as slide:
        image = slide.read_region(Box(x=500, y=500, w=2000, h=2000), 448).image
    texts = ["an H&E image of tumour tissue", "an H&E image of adipose tissue", "a photo of a cat"]
    scores = scorer.score(image, texts)
    assert scores == scorer.score(image, texts) and all(-1 <= s <= 1 for s in scores)
    embedding = scorer.embed_images([image])
    assert embedding.shape == (1, 512) and np.isclose(float(embedding.norm()), 1.0, atol=1e-4)
