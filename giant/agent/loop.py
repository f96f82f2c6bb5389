"""The navigation loop (Algorithm 1). Its three readings (paper_facts §1) differ only in their
`NavigationRules` (giant/agent/config.py; each mode in giant/agent/modes/navigation.py gives its
own), which this loop follows:

- early_answer: accepted (giant, authors) or, in paper mode (paper_facts §12), rejected with a
  corrective message, so successful trajectories hold exactly T-1 crops and the answer at step T.
- force_answer: at step T the model must answer (giant, paper); without it (authors) T calls without
  an answer end the attempt.
- attempts: authors mode restarts the episode from scratch, up to `max_restarts` times.
- budget: what T counts. Executed actions, or answered calls as the authors' loop does, so every
  crop of a multi-crop turn is executed (paper_facts §1).

Two rules end an item early, and they count different things so that neither eats into the other:

- Corrections (the paper's "incorrect if the model exceeds the limit after 3 retries"). A violation
  is a reply that breaks the loop's contract: a crop (or note) once the answer is due (step T, or the
  per-item budget reached), or, in paper mode, an answer before step T. Each violation gets a
  corrective message, up to `max_corrections` (3) per episode; the next violation fails the item
  with step_limit_exceeded (budget_exceeded once the budget forced the answer) or
  early_answer_rejected. So an episode makes at most T + max_corrections provider calls that return
  a turn (T-1 crops, then max_corrections + 1 violations), and `Trajectory.corrections` records how
  many corrective messages were sent. A turn holding several crops is one violation.
- Failures (paper_facts §10, §13): a call that fails (transient, parse, refusal) or an action that
  cannot be executed (an invalid box in strict mode). `max_retries` of them in
  a row fail the item with retries_exhausted; any other reply (an executed action, or a violation,
  which the correction rule judges) ends the streak.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from giant.agent import instructions
from giant.agent.config import NavigationConfig, NavigationRules, RegionsConfig
from giant.agent.context import Context
from giant.agent.episode_state import EpisodeEnd, EpisodeState, RetryCounter
from giant.agent.images import ImageStore, Rendered, render_region
from giant.core import Box, Status
from giant.llm.types import (
    AnswerAction,
    CropAction,
    ImagePart,
    ModelTurn,
    NoteAction,
    Part,
    Step,
    TextPart,
)
from giant.record.trajectory import Call
from giant.tools import Seen, ToolContext, UnusableCall, loaded


def crop_issues(box: Box, width: int, height: int) -> list[str]:
    """The rules a requested box breaks (an empty list: the box lies inside the slide)."""
    issues = []
    if box.w <= 0 or box.h <= 0:
        issues.append("width and height must be positive")
    if box.x >= width:
        issues.append(f"x={box.x} is not left of the slide's right edge ({width})")
    elif box.right > width:
        issues.append(f"x + width = {box.right} exceeds the slide width {width}")
    if box.y >= height:
        issues.append(f"y={box.y} is not above the slide's bottom edge ({height})")
    elif box.bottom > height:
        issues.append(f"y + height = {box.bottom} exceeds the slide height {height}")
    return issues


async def overview(ep: EpisodeState[RegionsConfig]) -> Rendered:
    """The step-0 image: the whole slide at S with its guides."""
    cfg = ep.cfg
    return await render_region(
        ep.slide, ep.full_box, cfg.crop_size, fill=cfg.fill, guides=cfg.guides, quality=cfg.jpeg_quality
    )


def image_part(rendered: Rendered, label: str) -> ImagePart:
    return ImagePart(image=rendered.encoded, label=label)


@dataclass
class _Reply:
    call_id: str | None
    parts: list[Part] = field(default_factory=list)


@dataclass
class _Attempt:
    """The state of one navigation attempt (a restart creates a fresh one)."""

    ctx: Context
    number: int
    steps: int = 0  # crops and notes executed in this attempt
    turns: int = 0  # provider calls that returned a turn (the budget when it counts calls)
    examined: list[str] = field(default_factory=list)
    latest: tuple[str, Box] | None = None  # the newest crop's label and box (None: the overview)
    notes: list[str] = field(default_factory=list)
    forced: bool = False  # the force-answer notice has been sent
    budget_forced: bool = False


class Navigator:
    def __init__(self, ep: EpisodeState[NavigationConfig], rules: NavigationRules, system: str) -> None:
        self.ep = ep
        self.cfg = ep.cfg
        self.rules = rules
        self.system = system
        self.t = ep.cfg.max_steps
        self.words = instructions.words_of(ep.cfg)
        self.counter = RetryCounter(ep.cfg.max_retries)
        self.extra_actions = (*(("note",) if ep.cfg.note_tool else ()), *ep.cfg.tools)
        self.tools = {name: loaded(ep.tools, name) for name in ep.cfg.tools}
        for tool in self.tools.values():
            self.system += "\n\n" + tool.prompt()

    async def run(self) -> None:
        attempts = self.rules.attempts
        first = await overview(self.ep)
        self.ep.add_region(0, first)
        for number in range(attempts):
            self.ep.traj.restarts = number
            if await self._attempt(number, first):
                return
        raise EpisodeEnd(
            "step_limit_exceeded",
            f"no answer within {self.t} steps in {attempts} attempts "
            f"(the first and {attempts - 1} restarts from scratch)",
        )

    async def _attempt(self, number: int, first: Rendered) -> bool:
        """One episode from the overview on; False when it ends without an answer (no forced answer)."""
        ep, cfg, t, rules = self.ep, self.cfg, self.t, self.rules
        state = _Attempt(
            ctx=Context(self.system, cfg.max_images_in_context),
            number=number,
        )
        ep.traj.system_prompt = state.ctx.system
        state.ctx.add_user(
            [
                TextPart(text=ep.item.prompt),
                image_part(first, "overview"),
                TextPart(text=instructions.overview_text(ep.width, ep.height, t, self.words)),
            ]
        )
        self.counter.reset()
        while True:
            if not rules.force_answer and self._used(state) >= t:
                return False
            if not state.budget_forced and ep.budget_reached():
                state.budget_forced = True
            must_answer = state.budget_forced or (rules.force_answer and state.steps >= t - 1)
            if must_answer and not state.forced:
                budget = cfg.item_budget_usd if state.budget_forced else None
                state.ctx.append_text(
                    instructions.force_answer_text(
                        state.examined, state.notes, ep.item.prompt, budget_usd=budget, words=self.words
                    )
                )
                state.forced = True
            call, turn = await ep.call(
                state.ctx.render(), must_answer=must_answer, extra_actions=self.extra_actions, attempt=number
            )
            if turn is None:
                self.counter.fail(
                    self._failure_status(state), f"call {call.index}: {call.error_kind} error ({call.error})"
                )
                continue
            state.turns += 1
            state.ctx.add_assistant(turn)
            if await self._handle_turn(state, call, turn, must_answer):
                return True

    def _failure_status(self, state: _Attempt) -> Status:
        return "budget_exceeded" if state.budget_forced else "retries_exhausted"

    async def _handle_turn(self, state: _Attempt, call: Call, turn: ModelTurn, must_answer: bool) -> bool:  # noqa: PLR0915  one turn's dispatch over every action kind, kept in one place
        """Execute the turn's steps in order; True when the episode is answered."""
        ep, t = self.ep, self.t
        replies: list[_Reply] = []
        failure: tuple[Status, str] | None = None
        feedback: list[str] = []
        limit_violated = False  # one corrective per turn, however many crops it holds

        def reject(step: Step, text: str, status: Status, why: str) -> None:
            nonlocal failure
            replies.append(_Reply(step.call_id, [TextPart(text=text)]))
            feedback.append(text)
            failure = (status, f"call {call.index}: {why}")

        for step in turn.steps:
            action = step.action
            if isinstance(action, AnswerAction):
                if self.rules.early_answer == "reject" and state.steps < t - 1 and not state.budget_forced:
                    self._violation(call, "early_answer_rejected", f"early answer at step {state.steps + 1}")
                    text = instructions.early_answer_corrective(state.steps, t)
                    replies.append(_Reply(step.call_id, [TextPart(text=text)]))
                    feedback.append(text)
                    failure = None  # a violation is judged by the correction rule alone
                    break  # nothing after a (rejected) answer is executed
                ep.steps += 1
                ep.answered(action.text, budget_forced=state.budget_forced)
                return True
            if not isinstance(action, CropAction) and action.type not in self.extra_actions:
                text = instructions.unavailable_action_text(action.type, self.extra_actions)
                reject(step, text, self._failure_status(state), f"{action.type} is not offered in this run")
                continue
            if must_answer:
                if not limit_violated:
                    limit_violated = True
                    status: Status = "budget_exceeded" if state.budget_forced else "step_limit_exceeded"
                    self._violation(call, status, f"{action.type} instead of the required answer")
                    failure = None
                corrective = instructions.step_limit_corrective(self.words)
                replies.append(_Reply(step.call_id, [TextPart(text=corrective)]))
                feedback.append(corrective)
                continue
            if state.steps >= t - 1 and self.rules.budget == "actions":
                replies.append(_Reply(step.call_id, [TextPart(text=instructions.EXTRA_CROP_SKIPPED)]))
                continue
            if isinstance(action, CropAction):
                parts = await self._crop(state, call, action)
                if isinstance(parts, str):
                    reject(step, parts, self._failure_status(state), "invalid crop")
                    continue
                replies.append(_Reply(step.call_id, parts))
            elif isinstance(action, NoteAction):
                state.notes.append(action.text)
                ep.traj.notes.append(action.text)
                state.steps += 1
                ep.steps += 1
                replies.append(_Reply(step.call_id, [TextPart(text=instructions.NOTE_RECORDED)]))
            elif action.type in self.tools:
                tool = self.tools[action.type]
                image, box = state.latest or ("the overview", ep.full_box)
                keep = ImageStore(ep.store.out_dir).save  # a tool's images stay out of the ledger
                try:
                    record = await tool.run(
                        ToolContext(ep.slide, ep.cfg.fill, keep, ep.item.key, ep.traj.run_index),
                        Seen(call.index, image, box),
                        action,
                    )
                except UnusableCall as exc:
                    reject(step, exc.feedback, self._failure_status(state), f"unusable {action.type} call")
                    continue
                except Exception as exc:  # a tool's own bug ends the call, never the episode
                    text = instructions.tool_failed_text(action.type, exc)
                    reject(step, text, self._failure_status(state), f"{action.type} failed")
                    continue
                ep.traj.tool_calls.append(record)
                state.steps += 1
                ep.steps += 1
                left = instructions.calls_left_text(t - self._used(state), self.words)
                replies.append(_Reply(step.call_id, [TextPart(text=f"{tool.reply(record)}\n\n{left}")]))
            self.counter.reset()
            failure = None  # the streak is judged by the turn's last action

        if feedback:
            call.feedback = "\n\n".join(feedback)
        self._send(state, replies)
        if failure is not None:
            self.counter.fail(*failure)
        else:
            self.counter.reset()  # an executed action or a violation ends the failure streak
        return False

    def _violation(self, call: Call, status: Status, what: str) -> None:
        """Count one violation: a corrective message follows, or, with max_corrections already
        sent, the item fails with `status`."""
        traj = self.ep.traj
        if traj.corrections >= self.cfg.max_corrections:
            raise EpisodeEnd(
                status, f"call {call.index}: {what} after {traj.corrections} corrective messages"
            )
        traj.corrections += 1

    async def _crop(self, state: _Attempt, call: Call, action: CropAction) -> list[Part] | str:
        """Read one crop; returns the reply parts, or the error feedback (strict mode, or a box that
        starts outside the slide, which no clamping can turn into a region)."""
        ep, cfg = self.ep, self.cfg
        requested = Box(x=action.x, y=action.y, w=action.width, h=action.height)
        issues = crop_issues(requested, ep.width, ep.height)
        outside = requested.x >= ep.width or requested.y >= ep.height  # clamping leaves nothing to read
        if issues and (cfg.strict_crops or outside):
            return instructions.invalid_crop_feedback(requested, ep.width, ep.height, issues)
        rendered = await render_region(
            ep.slide, requested, cfg.crop_size, fill=cfg.fill, guides=cfg.guides, quality=cfg.jpeg_quality
        )
        region = await ep.add_crop(call.index, rendered)
        state.steps += 1
        ep.steps += 1
        ep.crops += 1
        label = f"crop {len(state.examined) + 1}"
        state.examined.append(f"{label} {region.read}")
        state.latest = (label, region.read)
        text = instructions.region_text(
            label.capitalize(), region.read, requested, ep.width, ep.height, region.level, region.clamped
        )
        parts: list[Part] = [
            TextPart(text=text),
            image_part(rendered, f"{label} {region.read}"),
            TextPart(text=instructions.calls_left_text(self.t - self._used(state), self.words)),
        ]
        if state.notes:
            parts.append(TextPart(text=instructions.notes_text(state.notes)))
        return parts

    def _used(self, state: _Attempt) -> int:
        """Steps of the budget used: answered calls or executed actions, as the rules count."""
        return state.turns if self.rules.budget == "calls" else state.steps

    def _send(self, state: _Attempt, replies: list[_Reply]) -> None:
        """Tools mode answers each tool call by id; structured mode gets one message."""
        if not replies:
            return
        if all(reply.call_id is None for reply in replies):
            state.ctx.add_user([part for reply in replies for part in reply.parts])
            return
        for reply in replies:
            state.ctx.add_user(reply.parts, in_reply_to=reply.call_id)
