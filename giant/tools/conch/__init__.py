"""CONCH (a CoCa-style pathology vision-language model) behind the `conch` tool. The model needs
PyTorch (the `conch` extra), imported only when a run loads the tool; registering it needs none."""

from giant.tools.conch.tool import ConchTool

__all__ = ["ConchTool"]
