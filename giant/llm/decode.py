"""One tolerant decoder for every provider's replies: steps in text, step tool inputs, tool arguments.

Real models do not always send exactly one clean JSON object. GPT-5.x under strict json_schema output
sometimes adds chatter after the object or sends it twice; open-weight models wrap it in prose or a
```json fence, or write Python's True/None, single quotes or trailing commas; Claude sometimes sends
a nested object of a tool input as a JSON-encoded string. A reply is therefore read as: the first
complete top-level object in the text (those near-misses read too, string values never touched)
that validates against the pydantic step models (an object that parses but does not validate is
passed over for a later one), with strings in object- or array-typed fields decoded first. The full
reply always stays in `raw_text`; `Decoded.note` says what was passed over, so the run record shows
it. The answer scorer (giant.eval.answers) finds its answer objects with the same `json_objects`.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from giant.llm.schema import Tool, step_from_data, step_schema
from giant.llm.types import ParseError, Step, action_models

T = TypeVar("T")


@dataclass(frozen=True)
class Decoded(Generic[T]):
    """A validated value and, when the reply was not exactly that one clean object, how it was found."""

    value: T
    note: str | None = None


def _allowed_types(schema: dict[str, Any]) -> set[str]:
    kind = schema.get("type")
    return {kind} if isinstance(kind, str) else set(kind or ())


def decode_arguments(
    value: Any, schema: dict[str, Any], decoded: list[str] | None = None, path: str = ""
) -> Any:
    """`value` with every JSON-encoded string that sits where `schema` wants an object or an array
    replaced by what it encodes, recursively; the dotted paths decoded are appended to `decoded`.

    The schema decides, not the look of the string: a string field (an answer text, a note) stays a
    string even when it is exactly `{"answer": 3}`; a string that does not decode is left for
    validation to name.
    """
    wanted = _allowed_types(schema)
    if isinstance(value, str) and "string" not in wanted and wanted & {"object", "array"}:
        text = value.strip()
        if text[:1] in ("{", "["):
            try:
                value = json.loads(text)
            except json.JSONDecodeError:
                return value
            if decoded is not None:
                decoded.append(path or "(top level)")
    properties = schema.get("properties")
    if isinstance(value, dict) and isinstance(properties, dict):
        return {
            key: decode_arguments(item, properties[key], decoded, f"{path}.{key}".lstrip("."))
            if key in properties
            else item
            for key, item in value.items()
        }
    items = schema.get("items")
    if isinstance(value, list) and isinstance(items, dict):
        return [decode_arguments(item, items, decoded, f"{path}[{i}]") for i, item in enumerate(value)]
    return value


# A token of a JSON-like object as models write it: a whole quoted string (so nothing inside one is
# ever read as a literal, a comma or a brace), a word or number, or any other single character.
_TOKEN = re.compile(r"""\s*("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|[\w.+-]+|.)""", re.S)
_PYTHON_LITERALS = {"True": "true", "False": "false", "None": "null"}


def json_objects(text: str) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """Every complete top-level JSON object in `text`, in order, as (start, end, object).

    Scanning resumes after an object, never inside it, so braces inside a string field are never
    taken for an object of their own; a `{` that does not start an object is skipped, so a stray
    brace in prose does not hide the object after it. Where strict JSON fails, the near-misses
    models write are read too: see `_lenient_object`.
    """
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            obj, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            found = _lenient_object(text, start)
            if found is None:
                start = text.find("{", start + 1)
                continue
            obj, end = found
        yield start, end, obj
        start = text.find("{", end)


def _lenient_object(text: str, start: int) -> tuple[dict[str, Any], int] | None:
    """The object opening at `text[start]` and its end, read token by token as strict JSON with
    Python's True/False/None and quotes, trailing commas and raw newlines in strings allowed.

    Only what stands between strings is repaired; each string is decoded whole and re-encoded, so
    its value is exactly what the model wrote. A text replace is not: it made "null hypothesis"
    "None hypothesis" and "a,}" "a}" before the answer was scored. Anything else that is not JSON
    (a bare word such as YOUR_ANSWER, an object never closed) means no object here.
    """
    out: list[str] = []
    depth = 0
    for match in _TOKEN.finditer(text, start):
        token = match[1]
        if token[0] in "\"'":
            try:
                value = json.loads(token, strict=False) if token[0] == '"' else ast.literal_eval(token)
            except (ValueError, SyntaxError):
                return None
            token = json.dumps(value)
        elif token in ("]", "}") and out[-1] == ",":
            out.pop()
        out.append(_PYTHON_LITERALS.get(token, token))
        depth += (token in ("{", "[")) - (token in ("}", "]"))
        if depth == 0:
            try:
                obj = json.loads("".join(out))
            except ValueError:
                return None
            return (obj, match.end()) if isinstance(obj, dict) else None
    return None


def first_valid(
    text: str, validate: Callable[[Any], Decoded[T]], *, raw_text: str, missing: str
) -> Decoded[T]:
    """The first JSON object in `text` that `validate` accepts. ParseError (with `raw_text`) saying
    `missing` when there is no complete object, else the first object's validation message."""
    first_error: str | None = None
    skipped = prose = last_end = 0
    for start, end, obj in json_objects(text):
        prose += len(text[last_end:start].strip())
        last_end = end
        try:
            found = validate(obj)
        except ParseError as exc:
            first_error = first_error or str(exc)
            skipped += 1
            continue
        notes = []
        if prose:
            notes.append(f"text before the JSON ignored ({prose} chars)")
        if skipped:
            notes.append(f"{skipped} earlier JSON object(s) skipped: {first_error}")
        if text[end:].strip():
            notes.append(f"extra text after the JSON ignored ({len(text[end:].strip())} chars)")
        if found.note:
            notes.append(found.note)
        return Decoded(found.value, "; ".join(notes) or None)
    raise ParseError(first_error or missing, raw_text=raw_text)


THINK_OPEN, THINK_CLOSE = "<think>", "</think>"


@dataclass(frozen=True)
class Thought:
    """A reply split at its reasoning block: the think text (None: there was none) and the rest."""

    thinking: str | None
    text: str


def split_thinking(text: str) -> Thought:
    """A reasoning model's `<think>...</think>` block taken out of a reply (Qwen3, QwQ, DeepSeek-R1
    distills served without a reasoning parser), so nothing in it, a `{...}` least of all, is ever
    read as the step. A block counts when the reply opens with `<think>`, or, where the chat template
    already put `<think>` in the prompt (DeepSeek-R1), when the reply does not open with `{` and holds
    a `</think>`; a reply that opens with its JSON is never touched. A `<think>` never closed (the
    reply cut by max_tokens while thinking) is a ParseError saying so."""
    body = text.lstrip()
    if body.startswith(THINK_OPEN):
        body = body[len(THINK_OPEN) :]
        if THINK_CLOSE not in body:
            raise ParseError(
                f"the reply ended inside its unclosed {THINK_OPEN} block ({len(body.strip())} chars of "
                "thinking, no step): the model ran out of tokens while reasoning; raise provider.max_tokens "
                "or the server's context",
                raw_text=text,
            )
    elif body.startswith("{") or THINK_CLOSE not in body:
        return Thought(None, text)
    thinking, _, rest = body.partition(THINK_CLOSE)
    return Thought(thinking.strip(), rest)


def step_value(data: Any, raw_text: str) -> Decoded[Step]:
    """A decoded object (or a tool input) as a validated step, nested JSON strings decoded first."""
    decoded: list[str] = []
    # the flattened step schema over every action: it only guides which fields may hold a JSON string
    every = step_schema(tuple(action_models()))
    step = step_from_data(decode_arguments(data, every, decoded), raw_text)
    return Decoded(step, _nested_note(decoded))


def decode_step(text: str, raw_text: str | None = None) -> Decoded[Step]:
    """The step in a text reply: the first complete JSON object that is a valid step."""
    raw = text if raw_text is None else raw_text
    return first_valid(
        text, lambda obj: step_value(obj, raw), raw_text=raw, missing="no complete JSON object in the reply"
    )


def decode_tool_call(tool: Tool, arguments: str | dict[str, Any], raw_text: str) -> Decoded[BaseModel]:
    """A function/tool call's action: OpenAI sends the arguments as JSON text, Anthropic as an object."""

    def validate(args: Any) -> Decoded[BaseModel]:
        decoded: list[str] = []
        action = tool.validate(decode_arguments(args, tool.parameters(), decoded), raw_text)
        return Decoded(action, _nested_note(decoded))

    if isinstance(arguments, dict):
        return validate(arguments)
    missing = f"{tool.name}: arguments are not a JSON object"
    return first_valid(arguments or "{}", validate, raw_text=raw_text, missing=missing)


def _nested_note(paths: list[str]) -> str | None:
    return f"JSON string decoded in {', '.join(paths)}" if paths else None
