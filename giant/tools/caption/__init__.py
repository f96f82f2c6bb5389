"""A second model, served by any configured provider, describing a region (the `caption` tool)."""

from giant.tools.caption.tool import CaptionTool

__all__ = ["CaptionTool"]
