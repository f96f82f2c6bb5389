"""The providers' published image-token formulas, for the dry run's estimate (no SDK, no key).

Each provider class names the formula its API charges by (`image_formula`, `image_tokens`); the
estimate asks the class, never the model string.
"""

from __future__ import annotations

import math
from collections.abc import Callable


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


# ----------------------------------------------------------------------------- open model families
# What a self-hosted model's processor turns one image into (vLLM runs the model's own Hugging Face
# processor with its defaults). The server's prompt_tokens are the truth after a call; these plan the
# context before one (the dry run's fit table, giant.eval.context_fit).


def _qwen_grid(width: int, height: int, factor: int, min_pixels: int, max_pixels: int) -> int:
    """Qwen-VL's smart_resize: each side to the nearest multiple of `factor` (one token per factor x
    factor block after the 2 x 2 merge), then the whole scaled into [min_pixels, max_pixels]."""
    h = max(factor, round(height / factor) * factor)
    w = max(factor, round(width / factor) * factor)
    if h * w > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h = max(factor, math.floor(height / beta / factor) * factor)
        w = max(factor, math.floor(width / beta / factor) * factor)
    elif h * w < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h = math.ceil(height * beta / factor) * factor
        w = math.ceil(width * beta / factor) * factor
    return (h // factor) * (w // factor) + 2  # + <|vision_start|> and <|vision_end|>


def qwen2_vl(width: int, height: int) -> int:
    """Qwen2-VL / Qwen2.5-VL: 14 px patches merged 2 x 2, so one token per 28 x 28 px; the processor's
    default bounds are 4 and 16384 tokens (min_pixels 3136, max_pixels 12845056)."""
    return _qwen_grid(width, height, 28, 4 * 28 * 28, 16384 * 28 * 28)


def qwen3_vl(width: int, height: int) -> int:
    """Qwen3-VL: 16 px patches merged 2 x 2, one token per 32 x 32 px; bounds 64 and 16384 tokens."""
    return _qwen_grid(width, height, 32, 64 * 32 * 32, 16384 * 32 * 32)


INTERNVL_TILE = 448
INTERNVL_TILE_TOKENS = 256  # 448 / 14 = 32 patches a side, pixel-shuffled 2 x 2: 16 x 16
INTERNVL_MAX_TILES = 12  # max_dynamic_patch, the default of InternVL's chat and of vLLM


def internvl(width: int, height: int) -> int:
    """InternVL 2.5 / 3: the image is cut into 448 px tiles on the grid (i x j <= 12) closest to its
    aspect ratio (a larger grid wins a tie when the image has the pixels for it), plus one thumbnail
    tile when there is more than one; 256 tokens a tile."""
    aspect = width / height
    grids = sorted(
        {
            (i, j)
            for n in range(1, INTERNVL_MAX_TILES + 1)
            for i in range(1, n + 1)
            for j in range(1, n + 1)
            if i * j <= INTERNVL_MAX_TILES
        },
        key=lambda grid: grid[0] * grid[1],
    )
    best, best_diff = (1, 1), float("inf")
    for i, j in grids:
        diff = abs(aspect - i / j)
        if diff < best_diff:
            best, best_diff = (i, j), diff
        elif diff == best_diff and width * height > 0.5 * INTERNVL_TILE**2 * i * j:
            best = (i, j)
    tiles = best[0] * best[1]
    return INTERNVL_TILE_TOKENS * (tiles + (1 if tiles > 1 else 0)) + 2  # + <img> and </img>


GEMMA3_IMAGE_TOKENS = 256  # SigLIP at 896 x 896, pooled to 16 x 16, whatever the image's size


def gemma3(width: int, height: int) -> int:
    """Gemma 3 (and MedGemma): every image is resized to 896 x 896 and costs 256 tokens (pan and scan,
    off by default in vLLM, would add crops)."""
    return GEMMA3_IMAGE_TOKENS + 2  # + <start_of_image> and <end_of_image>


LLAMA4_TILE = 336
LLAMA4_TILE_TOKENS = 144  # 336 / 14 = 24 patches a side, pixel-shuffled 2 x 2: 12 x 12
LLAMA4_MAX_TILES = 16


def llama4(width: int, height: int) -> int:
    """Llama 4 (Scout, Maverick): the image goes onto the canvas of 336 px tiles (at most 16) that
    needs the least upscaling, else the least downscaling, the smaller canvas on a tie; 144 tokens a
    tile plus one global tile when there is more than one."""
    canvases = [
        (rows, cols)
        for rows in range(1, LLAMA4_MAX_TILES + 1)
        for cols in range(1, LLAMA4_MAX_TILES // rows + 1)
    ]
    scales = {c: min(c[0] * LLAMA4_TILE / height, c[1] * LLAMA4_TILE / width) for c in canvases}
    up = [c for c in canvases if scales[c] >= 1]
    if up:
        best = min(up, key=lambda c: (scales[c], c[0] * c[1]))
    else:
        best = max(canvases, key=lambda c: (scales[c], -c[0] * c[1]))
    tiles = best[0] * best[1]
    return LLAMA4_TILE_TOKENS * (tiles + (1 if tiles > 1 else 0))


ImageRule = Callable[[int, int], int]
# provider.image_tokens names one of these; "auto" picks by the model name (`family_of`).
FAMILIES: dict[str, ImageRule] = {
    "qwen2_vl": qwen2_vl,
    "qwen3_vl": qwen3_vl,
    "internvl": internvl,
    "gemma3": gemma3,
    "llama4": llama4,
    "openai_high_detail": openai_high_detail,
}
_NAMES: tuple[tuple[str, str], ...] = (
    ("qwen3-vl", "qwen3_vl"),
    ("qwen3vl", "qwen3_vl"),
    ("qwen2.5-vl", "qwen2_vl"),
    ("qwen2.5vl", "qwen2_vl"),
    ("qwen2_5_vl", "qwen2_vl"),
    ("qwen2-vl", "qwen2_vl"),
    ("qwen2vl", "qwen2_vl"),
    ("internvl", "internvl"),
    ("medgemma", "gemma3"),
    ("gemma-3", "gemma3"),
    ("gemma3", "gemma3"),
    ("llama-4", "llama4"),
    ("llama4", "llama4"),
)


def family_of(model: str, setting: str = "auto") -> str:
    """The family whose rule counts this model's images: the setting, or for "auto" the first family
    the model name names (OpenAI's tiles, the SDK's convention, when none does)."""
    if setting != "auto":
        return setting
    name = model.lower()
    return next((family for key, family in _NAMES if key in name), "openai_high_detail")
