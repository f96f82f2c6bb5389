"""Model answer text -> canonical label, with the method recorded so that scoring choices are auditable.

Order of evidence (first that yields an answer wins):
1. the last `<response>...</response>` block: its last JSON object with an answer key (found and
   read by the providers' own scanner, giant.llm.decode.json_objects, so fences, Python literals
   and trailing commas are tolerated and an answer string is never rewritten), else a plain-text form;
2. the same, in the text outside `<report>` blocks (an answer written after the report);
3. the same, in the whole text (the last JSON object anywhere, e.g. left inside the report).
Plain-text forms are explicit only: "answer is 3", "Answer: B", "I choose (C)", a reply that is just
a number, a letter, "Option 2" or an option's text, and for grade tasks "ISUP grade 3" or
"Gleason 4+3". Free prose is never searched for stray numbers or option names: a report that
mentions "3 foci", "option 1 seemed unlikely" or "not thymoma" must not become an answer. Letters
are uppercase A-D standing as an answer, so the English article "a" ("The answer is 3, a high ...")
is never read as option 1.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

from pydantic import BaseModel

from giant.llm.decode import json_objects

GRADE_LABELS = range(0, 6)  # ISUP 0 (benign) .. 5: the label space of any item without options
OPTION_KEYS = ("answer", "option", "choice", "answer_index", "label")
GRADE_KEYS = ("isup_grade", "isup", "grade", "answer")
NULL_GRADE_KEY = "isup_grade"

_RESPONSE = re.compile(r"<response>(.*?)(?:</response>|$)", re.S | re.I)
_REPORT = re.compile(r"<report>.*?(?:</report>|$)", re.S | re.I)
# An uppercase letter that stands alone: not part of a word and not an article before a word.
_LETTER = r"(?-i:\(?(?P<letter>[A-D])\)?(?![\w'])(?!\s+[a-z]))"
_NUMBER = r"\(?(?P<number>\d+)\)?(?!\.?\d)"
_ANSWER_PHRASE = re.compile(
    r"\banswer\b[\"'*_]*\s*(?:is|:|=|-)?[\s*_]*(?:option|choice)?\s*(?:number|no\.?)?\s*[:#]?\s*"
    rf"(?:{_NUMBER}|{_LETTER}|(?P<text>[^\n]+))",
    re.I,
)
# "I choose 2", "the best option is (D)": a decision verb, not a mere mention like "option 1 seemed unlikely".
_CHOICE_PHRASE = re.compile(
    r"\b(?:i(?:\s+would|'d|\s+will)?\s+(?:choose|select|pick|go\s+with)|(?:best|correct|right)\s+(?:choice|option)"
    rf"\s+is)\s*:?\s*(?:option|choice)?\s*[:#]?\s*(?:{_NUMBER}|{_LETTER})",
    re.I,
)
_BARE = re.compile(
    rf"^(?:(?:option|choice)\s*[:#]?\s*)?(?:{_NUMBER}|{_LETTER})(?:[.):]\s*(?P<rest>.*))?$", re.S | re.I
)
# The key may be quoted (`"isup_grade": 3`, `'isup_grade': 3`), as in a JSON object cut off before
# its closing brace, which the JSON pass cannot parse.
_ISUP = re.compile(
    r"\bisup(?:[\s_-]*grade)?(?:[\s_-]*group)?\b[\"']?\s*(?:is|of|:|=)?\s*[\"']?(?P<grade>\d)\b", re.I
)
_GRADE_GROUP = re.compile(r"\bgrade\s+group\s*(?:is|of|:|=)?\s*(?P<grade>\d)\b", re.I)
_GRADE_STRING = re.compile(r"^(?:isup\s*)?(?:grade\s*)?(?:group\s*)?(?P<grade>\d)$", re.I)
_GLEASON = re.compile(r"\bgleason\b[^\n\d]{0,20}(?P<primary>[1-5])\s*\+\s*(?P<secondary>[1-5])\b", re.I)


class Extraction(BaseModel):
    label: int | None  # None: no valid answer (scored as incorrect)
    method: str  # how the label was found, or why none was: counted in summary.json
    detail: str = ""  # for failures: what was wrong, in one line


def extract_label(
    text: str, benchmark: str, options: Sequence[str], *, panda_null_as_zero: bool = True
) -> Extraction:
    """`benchmark` is recorded by callers; the label space comes from `options` (none = ISUP grade
    task, labels 0..5). `panda_null_as_zero` reads `"isup_grade": null` as grade 0 (benign): the
    panda prompt defines only grades 1-5, so models often answer null for benign tissue."""
    if not text.strip():  # nothing was said: no rule may turn silence into an option or a grade
        return Extraction(label=None, method="none", detail=f"empty reply for {benchmark}")
    space = _Space(tuple(options), panda_null_as_zero)
    for region, json_method in _regions(text):
        found = space.from_json(region, json_method) or space.from_text(region)
        if found:
            return found
    return Extraction(label=None, method="none", detail=f"no answer found for {benchmark}")


def _regions(text: str) -> Iterator[tuple[str, str]]:
    """Most to least trusted: the last <response> block, the text outside <report> blocks (an answer
    the model wrote after its report), then everything (an answer left inside the report)."""
    blocks = _RESPONSE.findall(text)
    if blocks:
        yield blocks[-1], "response_json"
    outside = _REPORT.sub("", text)
    if outside != text and outside.strip():
        yield outside, "last_json"
    yield text, "last_json"


class _Space:
    """The item's label space and the rules that turn evidence into a label within it."""

    def __init__(self, options: tuple[str, ...], null_as_zero: bool) -> None:
        self.options = options
        self.null_as_zero = null_as_zero
        self.valid = range(1, len(options) + 1) if options else GRADE_LABELS
        # an option with no text can only be chosen by its number: matching it by text would let an
        # empty or punctuation-only reply select it
        self._by_text = {_norm(o): i for i, o in enumerate(options, start=1) if _norm(o)}

    # ------------------------------------------------------------------ JSON

    def from_json(self, text: str, method: str) -> Extraction | None:
        for *_, obj in reversed(list(json_objects(text))):
            found = self._from_object(obj, method)
            if found:
                return found
        return None

    def _from_object(self, obj: dict[str, Any], method: str) -> Extraction | None:
        fields = {str(k).strip().lower(): v for k, v in obj.items()}
        for key in GRADE_KEYS if not self.options else OPTION_KEYS:
            if key not in fields:
                continue
            value = fields[key]
            if value is None:
                if key == NULL_GRADE_KEY and self.null_as_zero:
                    return Extraction(label=0, method=f"{method}_null_as_zero")
                return Extraction(label=None, method=f"{method}_null", detail=f'"{key}" is null')
            return self._checked(self._value_label(value), method, f'"{key}": {value!r}')
        if not self.options:
            found = self._gleason(fields.get("primary_pattern"), fields.get("secondary_pattern"), method)
            if found:
                return found
        # a wrapper such as {"response": {"answer": 2}}: the answer object is nested one level down
        nested = (
            self._from_object(v, method) for v in reversed(list(fields.values())) if isinstance(v, dict)
        )
        return next((found for found in nested if found), None)

    def _value_label(self, value: Any) -> int | None:
        if isinstance(value, bool):
            return None
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            grade = _GRADE_STRING.match(value.strip())
            if grade and not self.options:
                return int(grade["grade"])
            found = self._bare(value.strip())
            return found.label if found else None
        return None

    def _gleason(self, primary: Any, secondary: Any, method: str) -> Extraction | None:
        """A panda answer that gives the Gleason patterns but no ISUP grade still determines one."""
        if not all(
            isinstance(p, int) and not isinstance(p, bool) and 1 <= p <= 5 for p in (primary, secondary)
        ):
            return None
        return Extraction(label=_isup_from_gleason(primary, secondary), method=f"{method}_gleason")

    # ------------------------------------------------------------------ plain text

    def from_text(self, text: str) -> Extraction | None:
        if not self.options:
            found = self._grade_text(text)
            if found:
                return found
        for match in reversed(list(_ANSWER_PHRASE.finditer(text))):
            label = self._match_label(match)
            if label is None and match["text"] and self.options:
                label = self._option_at_start(match["text"])
            if label is not None:
                return self._checked(label, "answer_phrase", match[0])
        choices = list(_CHOICE_PHRASE.finditer(text))
        if choices and self.options:
            return self._checked(self._match_label(choices[-1]), "choice_phrase", choices[-1][0])
        return self._bare(text.strip())

    def _grade_text(self, text: str) -> Extraction | None:
        for pattern in (_ISUP, _GRADE_GROUP):
            matches = list(pattern.finditer(text))
            if matches:
                return self._checked(int(matches[-1]["grade"]), "grade_phrase", matches[-1][0])
        gleason = list(_GLEASON.finditer(text))
        if gleason:
            last = gleason[-1]
            return self._gleason(int(last["primary"]), int(last["secondary"]), "text")
        return None

    def _bare(self, text: str) -> Extraction | None:
        """A reply that is only an answer: "3", "3. Skin", "(B)", "B) Thymoma", or an option's text."""
        text = text.strip().strip("`*\"' ").strip()
        match = _BARE.match(text)
        if match:
            label = self._match_label(match)
            if label is not None:
                return self._checked(label, "bare", text[:40])
        label = self._by_text.get(_norm(text))
        return Extraction(label=label, method="option_text") if label else None

    def _option_at_start(self, text: str) -> int | None:
        """ "The answer is Thymoma type AB." -> the longest option that the phrase starts with."""
        norm = _norm(text)
        hits = [
            (len(o), i)
            for o, i in self._by_text.items()
            if norm.startswith(o) and not norm[len(o) : len(o) + 1].isalnum()
        ]
        return max(hits)[1] if hits else None

    def _match_label(self, match: re.Match[str]) -> int | None:
        groups = match.groupdict()
        if groups.get("number"):
            return int(groups["number"])
        if groups.get("letter") and self.options:
            return ord(groups["letter"]) - ord("A") + 1
        return None

    def _checked(self, label: int | None, method: str, evidence: str) -> Extraction:
        if label is None or label not in self.valid:
            valid = f"{self.valid.start}..{self.valid.stop - 1}"
            return Extraction(
                label=None, method="invalid", detail=f"{method} {evidence[:60]!r} is not in {valid}"
            )
        return Extraction(label=label, method=method)


def _isup_from_gleason(primary: int, secondary: int) -> int:
    total = primary + secondary
    if total <= 6:
        return 1
    if total == 7:
        return 2 if primary <= 3 else 3
    return 4 if total == 8 else 5


def _norm(text: str) -> str:
    return " ".join(text.lower().strip().rstrip(".").split())
