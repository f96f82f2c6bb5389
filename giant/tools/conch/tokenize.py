"""Text -> token ids the text tower reads: start token, the text's ids, end token, padding, and one
trailing placeholder column that the class token replaces (giant.tools.conch.model.TextTower).

Two tokenizers feed the same layout: CONCH's byte-level BPE (read from its tokenizer JSON with the
`tokenizers` package, part of the `conch` extra) for the real weights, and a word-hashing tokenizer
built in code for the tiny random model, which needs no file.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import torch

PAD, START, END = 0, 1, 2  # the ids CONCH's tokenizer gives <pad>, <start_of_text>, <end_of_text>


class Tokenizer(Protocol):
    def ids(self, text: str, limit: int) -> list[int]:
        """The text's ids, start and end tokens included, at most `limit` of them."""
        ...


def token_batch(tokenizer: Tokenizer, texts: Sequence[str], context_length: int) -> torch.Tensor:
    """(len(texts), context_length) ids: each text truncated to context_length - 1 ids (its end token
    kept), padded, then the placeholder column."""
    rows = torch.full((len(texts), context_length), PAD, dtype=torch.long)
    for row, text in enumerate(texts):
        ids = tokenizer.ids(text, context_length - 1)
        rows[row, : len(ids)] = torch.tensor(ids, dtype=torch.long)
    return rows


class HashTokenizer:
    """Lower-cased words hashed into the vocabulary: deterministic, no file, only for random models."""

    def __init__(self, vocab_size: int) -> None:
        self.vocab_size = vocab_size

    def ids(self, text: str, limit: int) -> list[int]:
        words = re.findall(r"\w+|[^\w\s]", text.lower())
        first_free = END + 1
        ids = [
            first_free + int(hashlib.sha256(w.encode()).hexdigest(), 16) % (self.vocab_size - first_free)
            for w in words
        ]
        return [START, *ids[: limit - 2], END]


class BpeTokenizer:
    """CONCH's tokenizer file (byte-level BPE, lower-cased, start/end tokens added by its template)."""

    def __init__(self, path: Path) -> None:
        from tokenizers import Tokenizer as HfTokenizer

        self._tok = HfTokenizer.from_file(str(path))

    def ids(self, text: str, limit: int) -> list[int]:
        self._tok.enable_truncation(max_length=limit)  # keeps the end token, as CONCH's truncation does
        ids: list[int] = self._tok.encode(text).ids
        return ids
