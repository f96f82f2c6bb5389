"""Images kept once on disk however many places hold them.

The JPEGs a model was sent are content-addressed (`<sha256>.jpg`) and never change once written, so
the ledger's image folder, each trajectory folder and a local MLflow artifact store can all hold the
same file: a hard link costs a directory entry, not the image again. Where a link cannot be made
(another filesystem, a filesystem without hard links) the file is copied, which is what every copy
cost before. Files that change after they are written (results.jsonl grows, pages are rewritten) are
never linked: a write through one name would change every other.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

IMAGE_SUFFIX = ".jpg"
_IMAGE_NAME = re.compile(r"[0-9a-f]{64}\.jpg")


def image_name(sha256: str) -> str:
    """The file name of an image with this content hash."""
    return f"{sha256}{IMAGE_SUFFIX}"


def is_stored_image(path: Path) -> bool:
    """True for a content-addressed image file (safe to link: its bytes never change)."""
    return _IMAGE_NAME.fullmatch(path.name) is not None


def link_or_copy(source: Path, target: Path) -> bool:
    """Make `target` hold `source`'s bytes: a hard link when possible (True), else a copy (False).
    The new name appears atomically, replacing any older file without writing through it."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists() and os.path.samefile(source, target):
        return True
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    os.close(fd)
    temporary = Path(tmp)
    try:
        temporary.unlink()
        try:
            os.link(source, temporary)
            linked = True
        except OSError:  # another filesystem (EXDEV), or one without hard links
            shutil.copyfile(source, temporary)
            linked = False
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return linked


def copy_linking_images(source: str, target: str) -> str:
    """A `shutil.copytree` copy function: content-addressed images linked, every other file copied."""
    if is_stored_image(Path(source)):
        link_or_copy(Path(source), Path(target))
        return target
    return shutil.copy2(source, target)
