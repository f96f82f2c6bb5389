"""Slide reads turned into model-ready images, and the content-addressed image folder.

Reads run in a worker thread (`asyncio.to_thread`): an OpenSlide read of a large region takes tens
of milliseconds and would otherwise stall every other item's provider calls on the event loop.
"""

from __future__ import annotations

import asyncio
import base64
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from giant.atomic import write_atomic
from giant.core import Box, EncodedImage
from giant.llm.ledger import Ledger
from giant.storage import image_name, link_or_copy
from giant.wsi.encode import encode_jpeg
from giant.wsi.guides import draw_guides
from giant.wsi.slide import RegionImage, Slide

Fill = Literal["white", "black"]


@dataclass(frozen=True)
class Placed:
    """Where a rendered region came from: a RegionImage without its pixels."""

    requested: Box
    read: Box
    level: int
    clamped: bool

    @classmethod
    def of(cls, region: RegionImage) -> Placed:
        return cls(requested=region.requested, read=region.read, level=region.level, clamped=region.clamped)


@dataclass(frozen=True)
class Rendered:
    """A region as the model is shown it: where it was read, and its JPEG. The decoded pixels are not
    kept: an episode holds its overview (and the patch baseline its patches) until it ends, and a
    batch campaign keeps hundreds of episodes waiting on a round (2.25 MB each at S=1000)."""

    region: Placed
    encoded: EncodedImage


class ImageStore:
    """Writes each distinct JPEG once as <sha256>.jpg; without a folder it only names them.

    With the provider's ledger the image is written there (where the paid call will keep it anyway)
    and the trajectory folder gets a hard link to it: one file on disk for both."""

    def __init__(self, out_dir: Path | None, ledger: Ledger | None = None) -> None:
        self.out_dir = out_dir
        self.ledger = ledger

    def save(self, image: EncodedImage) -> str:
        """Each file appears whole or not at all (a rename), so a run killed mid-write leaves none
        for the rerun to keep; one already there is kept only at its full size (a torn file that an
        older non-atomic write left behind is written again)."""
        name = image_name(image.sha256)
        if self.out_dir is not None:
            path = self.out_dir / name
            data = base64.b64decode(image.data_b64)
            if _whole(path, len(data)):
                return name
            if self.ledger is not None:
                link_or_copy(self.ledger.keep_image(image), path)
            else:
                write_atomic(path, data)
        return name


def _whole(path: Path, size: int) -> bool:
    try:
        return path.stat().st_size == size
    except OSError:  # absent
        return False


def _render(slide: Slide, box: Box, size: int, fill: Fill, guides: int, quality: int) -> Rendered:
    region = slide.read_region(box, size, fill)
    image = draw_guides(region.image, region.read, guides) if guides > 0 else region.image
    return Rendered(region=Placed.of(region), encoded=encode_jpeg(image, quality))


async def render_region(
    slide: Slide, box: Box, size: int, *, fill: Fill, guides: int, quality: int
) -> Rendered:
    """Read, draw guides on, and JPEG-encode one region off the event loop."""
    return await asyncio.to_thread(_render, slide, box, size, fill, guides, quality)


def _thumbnail(slide: Slide, long_side: int, quality: int) -> EncodedImage:
    return encode_jpeg(slide.thumbnail(long_side), quality)


async def render_thumbnail(slide: Slide, long_side: int, quality: int) -> EncodedImage:
    """The thumbnail baseline's image: the whole slide, no guides (paper_facts §4)."""
    return await asyncio.to_thread(_thumbnail, slide, long_side, quality)
