"""Images -> the tensor batch the image tower reads, as CONCH prepares its input: the short side
resized to the model's input size (bicubic), the central square cut out, scaled to [0, 1] and
normalised with the model's colour mean and standard deviation.

The agent already reads the region's central square from the slide at the input size
(giant.tools.conch.tool.central_square), so for it the resize and the crop leave the pixels
untouched; they matter for images from elsewhere (the benchmark, a user's own tile).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from PIL import Image

from giant.tools.conch.spec import ModelSpec


def fit(image: Image.Image, size: int) -> Image.Image:
    """Short side to `size` (bicubic, long side scaled in proportion and rounded down), then the
    central size x size square."""
    image = image.convert("RGB")
    width, height = image.size
    if min(width, height) != size:
        scale = size / min(width, height)
        width, height = (size, int(height * scale)) if width <= height else (int(width * scale), size)
        image = image.resize((width, height), Image.Resampling.BICUBIC)
    left, top = round((width - size) / 2), round((height - size) / 2)
    return image.crop((left, top, left + size, top + size))


def pixel_batch(images: Sequence[Image.Image], spec: ModelSpec) -> torch.Tensor:
    """(N, 3, size, size) float tensor, normalised."""
    arrays = [np.asarray(fit(image, spec.image_size), dtype=np.float32) / 255.0 for image in images]
    batch = torch.from_numpy(np.stack(arrays)).permute(0, 3, 1, 2)
    mean = torch.tensor(spec.mean).view(1, 3, 1, 1)
    std = torch.tensor(spec.std).view(1, 3, 1, 1)
    return (batch - mean) / std
