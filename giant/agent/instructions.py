"""Every text the agent writes to the model, in one place so the modes cannot drift apart. The system
prompts, the step count and the answer request are template files (giant.agent.wording) that
`agent.prompts` may replace; the other texts name the answer format through them.

The wording follows paper_facts §1: the system prompt states the level-0 slide size, the step budget
T (up to T-1 examination steps, the last one for the answer) and that coordinates are level-0 pixels;
answers come as a <report> block and a <response> block carrying the task's JSON.
"""

from __future__ import annotations

from collections.abc import Sequence

from giant.agent.config import BaseAgentConfig, NavigationConfig, RegionsConfig
from giant.agent.wording import Wording, wording
from giant.core import Box

SHIPPED = wording(None)  # the shipped templates (giant/agent/prompts/)


def words_of(cfg: BaseAgentConfig) -> Wording:
    """The run's wording: the shipped templates, or those of `agent.prompts`."""
    return wording(cfg.prompts)


def system_prompt(cfg: NavigationConfig, width: int, height: int, *, pacing: str) -> str:
    """The navigation system prompt (giant, paper, authors; template system.j2); `pacing` is the
    mode's line on how to spend the T steps (free_pacing, fixed_pacing, authors_pacing)."""
    words = words_of(cfg)
    return words.render(
        "system",
        mode=cfg.mode,
        width=width,
        height=height,
        max_steps=cfg.max_steps,
        crop_size=cfg.crop_size,
        pacing=pacing,
        context="\n\n".join(_context_lines(cfg)),
        note_tool=cfg.note_tool,
        answer_format=words.answer_format(),
    )


def free_pacing() -> str:
    """giant mode: early answers are accepted, but the model should look first."""
    return (
        "Use your steps to examine the tissue at the magnification the question needs before "
        "answering; answer earlier only when you are certain."
    )


def fixed_pacing(t: int) -> str:
    """paper mode: fixed iterations, an early answer is rejected."""
    return (
        f"You must crop exactly {t - 1} regions before answering. Do not answer earlier: "
        f"an early answer is rejected. You must answer at step {t}."
    )


def authors_pacing(t: int) -> str:
    """Authors mode: the authors' prompt presses the model to spend its step budget rather than answer
    early (paper_facts §1), so this mode says the same, in this project's words."""
    return (
        f"Spend as many of your {t} steps as you can on the slide; there is no reward for answering "
        "quickly, so do not rush to a conclusion. Look closely at the tissue, at the magnification "
        "the question calls for and in more than one place, before you decide: an answer ends the "
        "examination."
    )


def _context_lines(cfg: RegionsConfig) -> list[str]:
    """max_images_in_context drops older images from what the model sees; paper_facts §1 wants the
    system prompt to say so, in every mode that renders its context with it."""
    if cfg.max_images_in_context is None:
        return []
    kept = cfg.max_images_in_context - 1
    visible = (
        "only the overview image stays visible"
        if kept == 0
        else f"only the overview and up to {kept} recent crop image(s) stay visible (past that, "
        "earlier crop images are hidden all at once and only the newest stays)"
    )
    return [
        f"To save context, {visible}; older crops keep only their text description, so note what "
        "you see as you go."
    ]


def random_regions_system_prompt(cfg: RegionsConfig, width: int, height: int, n_regions: int) -> str:
    """The random-region ablation (template random_regions_system.j2): the regions were chosen for
    the model, which only answers."""
    words = words_of(cfg)
    return words.render(
        "random_regions_system",
        width=width,
        height=height,
        n_regions=n_regions,
        context="\n\n".join(_context_lines(cfg)),
        answer_format=words.answer_format(),
    )


def joint_patches_text(count: int, mpp: float | None) -> str:
    """Patch mode with inference=joint: what the numbered patch images after the question are."""
    scale = (
        "all at full resolution (level 0 of the slide)"
        if mpp is None
        else f"all at the same magnification, about {mpp:.2g} microns per pixel"
    )
    return (
        f"Below are {count} numbered image patches (patch 1 to patch {count}). They are tissue regions "
        f"of one whole-slide image, {scale}. Answer the question once, from all {count} patches together."
    )


def patch_label_text(number: int, count: int) -> str:
    return f"Patch {number} of {count}:"


def calls_left_text(left: int, words: Wording = SHIPPED) -> str:
    """The step count sent with the overview and every crop (template steps_left.j2)."""
    return words.steps_left(left)


def overview_text(width: int, height: int, left: int, words: Wording = SHIPPED) -> str:
    return f"Overview of the whole slide ({width} x {height} level-0 pixels). {calls_left_text(left, words)}"


def region_text(
    label: str, read: Box, requested: Box, width: int, height: int, level: int, clamped: bool
) -> str:
    """What a crop result says about itself: the region read, where it sits, what was clamped."""
    text = f"{label}: region {read} of the {width} x {height} slide, read at pyramid level {level}."
    if clamped:
        text += f" The requested box {requested} extends beyond the slide, so it was clamped to {read}."
    return text


def notes_text(notes: Sequence[str]) -> str:
    return "Your notes so far:\n" + "\n".join(f"- {note}" for note in notes)


def examined_summary(regions: Sequence[str], notes: Sequence[str]) -> str:
    lines = ["- the overview of the whole slide", *(f"- {region}" for region in regions)]
    text = "You have examined:\n" + "\n".join(lines)
    if notes:
        text += "\n" + notes_text(notes)
    return text


def force_answer_text(
    regions: Sequence[str],
    notes: Sequence[str],
    question: str,
    *,
    budget_usd: float | None = None,
    words: Wording = SHIPPED,
) -> str:
    """The force-answer message (paper_facts §13): the limit, what was examined, the question again."""
    if budget_usd is not None:
        head = f"The cost budget for this question (${budget_usd:g}) is used up."
    else:
        head = "You have reached the step limit."
    return (
        f"{head} Based on all the regions you have examined, you MUST now provide your final "
        "answer; do not crop again.\n\n"
        f"{examined_summary(regions, notes)}\n\n"
        f"Question: {question}\n\n"
        f"{words.answer_format()}"
    )


def step_limit_corrective(words: Wording = SHIPPED) -> str:
    return (
        "You have reached the maximum navigation steps. You MUST provide your final answer now using the "
        "answer action; no more crops will be executed. " + words.answer_format()
    )


STEP_LIMIT_CORRECTIVE = step_limit_corrective()


def early_answer_corrective(crops_done: int, max_steps: int) -> str:
    """The paper-mode rejection of an answer before step T (paper_facts §12)."""
    return (
        f"Do not answer yet; continue navigating. You have cropped {crops_done} of the "
        f"{max_steps - 1} regions you must examine. You must answer on the final step "
        f"(step {max_steps})."
    )


def invalid_crop_feedback(requested: Box, width: int, height: int, issues: Sequence[str]) -> str:
    """The invalid-box feedback (strict crops, paper_facts §13): the box, the bounds, the rule broken."""
    return (
        f"Invalid crop: you asked for x={requested.x}, y={requested.y}, width={requested.w}, "
        f"height={requested.h}, but the slide is {width} x {height} level-0 pixels "
        f"(x must be in [0, {width}), y in [0, {height}), x + width <= {width}, y + height <= {height}). "
        f"Problem: {'; '.join(issues)}. No region was read; choose a box inside the slide."
    )


def answer_only_corrective(words: Wording = SHIPPED) -> str:
    return "Cropping is not available in this task: answer from the image(s) you were given. " + (
        words.answer_format()
    )


ANSWER_ONLY_CORRECTIVE = answer_only_corrective()

EXTRA_CROP_SKIPPED = (
    "Not executed: your step budget for crops was already used by the earlier crops of this turn."
)
NOTE_RECORDED = "Note recorded."


def unavailable_action_text(action: str, offered: Sequence[str]) -> str:
    """A step the model sent whose action this run does not offer (a tool not enabled, a note
    without the note tool): said back, never skipped in silence."""
    choices = ", ".join(["crop", *offered, "answer"])
    return f"Not executed: '{action}' is not available in this task. Use one of: {choices}."


def tool_failed_text(tool: str, exc: Exception) -> str:
    """A tool that raised something other than its own refusal (UnusableCall): one line naming the
    cause, sent to the model and kept as the call's feedback, so the run goes on."""
    first = (str(exc).splitlines() or [""])[0][:200]
    return f"Not executed: the {tool} tool failed ({type(exc).__name__}: {first}). Crop or answer instead."
