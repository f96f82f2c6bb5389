"""Slide access: opening slides, reading regions, axis guides, tissue masks, synthetic slides.

The package root exports only the slide error tree (giant.wsi.errors): it is what every caller
catches, and importing it must not load OpenSlide. The readers live in their modules
(giant.wsi.slide.Slide, giant.wsi.tissue, ...).
"""

from giant.wsi.errors import SlideError, SlideMissing, SlidePathInvalid, SlideUnreadable

__all__ = ["SlideError", "SlideMissing", "SlidePathInvalid", "SlideUnreadable"]
