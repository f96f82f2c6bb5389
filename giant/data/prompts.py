"""Turning a CSV prompt field into the exact question text the model sees (paper_facts §5)."""

from __future__ import annotations

from collections.abc import Sequence

# The VQA rows carry a bare question; this wrapper mirrors the wording of the CSV's own tcga/gtex
# templates so that every task asks for the option number in the same JSON shape.
VQA_TEMPLATE = (
    "{question}\n\n"
    "Select from the following options:\n"
    "{options}\n\n"
    "Please choose the number of the correct option and respond in the following JSON format:\n"
    "```json\n"
    '{{"answer": YOUR_ANSWER}}\n'
    "```\n"
)


def format_options(options: Sequence[str]) -> str:
    return "\n".join(f"{i}. {option}" for i, option in enumerate(options, start=1))


def is_template(prompt: str) -> bool:
    """The tcga/gtex/panda prompts are str.format templates: they name {options} or escape JSON
    braces as {{ }} (panda has no options but still escapes its JSON example)."""
    return "{options}" in prompt or "{{" in prompt


def render_prompt(prompt: str, options: Sequence[str]) -> str:
    """Raises KeyError/IndexError/ValueError on a malformed template; the loader names the row."""
    if is_template(prompt):
        return prompt.format(options=format_options(options))
    if options:
        return VQA_TEMPLATE.format(question=prompt.strip(), options=format_options(options))
    return prompt
