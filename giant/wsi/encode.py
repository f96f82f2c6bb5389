"""JPEG encoding for providers: the bytes the model sees, plus a hash to audit them without the bytes."""

from __future__ import annotations

import base64
import hashlib
import io

from PIL import Image

from giant.core import EncodedImage

DEFAULT_QUALITY = 75  # PIL's default, the authors' value


def jpeg_bytes(image: Image.Image, quality: int = DEFAULT_QUALITY) -> bytes:
    if not 1 <= quality <= 100:
        raise ValueError(f"JPEG quality {quality} is outside 1..100")
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, format="JPEG", quality=quality)
    return buffer.getvalue()


def encode_jpeg(image: Image.Image, quality: int = DEFAULT_QUALITY) -> EncodedImage:
    """Base64 JPEG with media type, size and the sha256 of the JPEG bytes (trajectories save the
    image as <sha256>.jpg, so identical crops are stored once)."""
    data = jpeg_bytes(image, quality)
    return EncodedImage(
        data_b64=base64.b64encode(data).decode("ascii"),
        media_type="image/jpeg",
        sha256=hashlib.sha256(data).hexdigest(),
        width=image.width,
        height=image.height,
    )
