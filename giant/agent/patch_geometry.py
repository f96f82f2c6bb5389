"""How large a patch is on a slide, in level-0 pixels: what patch mode samples, and what the run
checks before its first request (giant.eval.geometry), so that a geometry no slide can serve stops
with one line instead of turning every item-run into a slide error."""

from __future__ import annotations

# A patch at patch_mpp may be read from a slide up to this much finer than the setting (GTEx's 0.4942
# um/px serves patch_mpp=0.5); a coarser slide would need upscaling, which patches never get.
MPP_TOLERANCE = 0.05


def level0_side(patch_size: int, patch_mpp: float | None, slide_mpp: float | None) -> int:
    """A patch's side in level-0 pixels: patch_size at level 0 (patch_mpp None), else what spans
    patch_size pixels at patch_mpp on a slide of `slide_mpp` (read at the best level and resampled,
    as crops are). ValueError (one line with the fix) when the slide cannot give patches at patch_mpp."""
    if patch_mpp is None:
        return patch_size
    if slide_mpp is None:
        raise ValueError(
            f"the slide records no microns per pixel (openslide.mpp-x), so agent.patch_mpp={patch_mpp:g} "
            "cannot be read from it; set agent.patch_mpp=null (level 0) or leave the slide out"
        )
    if patch_mpp < slide_mpp * (1 - MPP_TOLERANCE):
        raise ValueError(
            f"level 0 is {slide_mpp:.3g} µm/px, coarser than agent.patch_mpp={patch_mpp:g}, and patches "
            f"are never upscaled; set agent.patch_mpp >= {slide_mpp:.3g} or null"
        )
    return max(patch_size, round(patch_size * patch_mpp / slide_mpp))
