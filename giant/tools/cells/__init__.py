"""Nuclei counted and measured in microns by classical image analysis (the `cells` tool): no weights,
no extra to install (NumPy, SciPy and OpenCV are giant's own dependencies)."""

from giant.tools.cells.tool import CellsTool

__all__ = ["CellsTool"]
