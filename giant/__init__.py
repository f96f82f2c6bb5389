"""giant: large multimodal models navigating gigapixel pathology slides (GIANT, arXiv 2511.19652)."""

__version__ = "0.1.0"

__all__ = ["__version__"]  # the layers are subpackages and modules (docs/ARCHITECTURE.md)
