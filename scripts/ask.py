"""Ask one question about one slide: the agent navigates it and answers.

    python scripts/ask.py slide=PATH question="Which organ is this tissue from?" options='[liver,lung,kidney]'
    python scripts/ask.py slide=PATH question="..." provider=openai provider.model=gpt-5 agent.max_steps=10

Writes trajectory.json, the crops and trajectory.html into the Hydra job folder
(outputs/ask/<date>/<time>/, or hydra.run.dir=...).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import NoReturn

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from giant.agent.modes import AgentConfig
from giant.cli.checks import check_command_line  # also registers ${giant_root:} and `tools: all`
from giant.config import RunOptions, one_line, resolve, shipped
from giant.errors import EXIT_CONFIG, EXIT_FAILED, ConfigError, exit_with
from giant.llm.config import ProviderConfig
from giant.tools.settings import ToolSettings

SLIDE_STATUSES = ("slide_error", "slide_missing")


class AskSettings(BaseModel):
    """conf/ask.yaml validated once: every later step reads these, never the raw config."""

    model_config = ConfigDict(extra="ignore")  # `paths` only feeds interpolations
    slide: Path = Field(description="The whole-slide image file, any format OpenSlide reads (required).")
    question: str = Field(min_length=1, description="The question, as the model sees it (required).")
    options: list[str] = Field(
        description="Answer options, shown numbered 1..n (the model answers with the number); []: free text."
    )
    seed: int = Field(description="Seed of the random provider's draws and of the sampling modes.")
    provider: ProviderConfig
    agent: AgentConfig
    tools: ToolSettings


def settings_from(cfg: DictConfig) -> AskSettings:
    data = resolve(cfg)
    for key, example in (("slide", "slide=PATH"), ("question", 'question="..."')):
        if data.get(key) in (None, ""):
            raise ConfigError(f"{key} is required: pass {example} on the command line")
    try:
        return AskSettings.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(one_line(exc)) from None


def fail(message: str, code: int) -> NoReturn:
    exit_with("ask", message, code)


def ask(cfg: DictConfig) -> None:
    from giant.agent.episode import run_episode
    from giant.core import Item
    from giant.data.prompts import render_prompt
    from giant.eval.scoring import score_trajectory
    from giant.llm.factory import build_provider
    from giant.record import TRAJECTORY_FILE
    from giant.tools import TOOLS, load_tools
    from giant.tracking.viewer import write_html
    from giant.wsi import SlideError, SlideMissing
    from giant.wsi.slide import Slide

    settings = settings_from(cfg)
    slide_path = settings.slide.expanduser().resolve()
    try:  # fail before any (paid) provider call, with one line that names the slide and the fix
        with Slide.open(slide_path):
            pass
    except SlideMissing as err:
        fail(f"slide not found: {err.slide}; pass slide=PATH to a slide file", EXIT_FAILED)
    except SlideError as err:
        fail(str(err).splitlines()[0], EXIT_FAILED)
    try:
        prompt = render_prompt(settings.question, settings.options)
    except (KeyError, IndexError, ValueError) as err:
        raise ConfigError(
            f"question: braces are read as a template ({err}); double them as {{{{ }}}}"
        ) from None
    item = Item(
        benchmark="ask",
        benchmark_id="1",
        image_path=slide_path.name,
        prompt=prompt,
        options=tuple(settings.options),
        truth=1,  # required by Item, unused here: a one-off question has no known answer and is not scored
        metric="accuracy",
    )
    tools = load_tools(getattr(settings.agent, "tools", []), settings.tools)
    provider = build_provider(settings.provider)
    out_dir = Path(HydraConfig.get().runtime.output_dir)
    traj = asyncio.run(
        run_episode(
            item, slide_path, provider, settings.agent, out_dir=out_dir, seed=settings.seed, tools=tools
        )
    )
    option = None  # the option the answer names, read as the scorer reads benchmark answers
    if traj.status == "answered" and settings.options:
        label = score_trajectory(traj, item, shipped(RunOptions).scoring).label
        chosen = settings.options[label - 1] if label and 1 <= label <= len(settings.options) else None
        option = f"{label}. {chosen}" if chosen is not None else "none found in the answer"
    page = write_html(out_dir, traj, label=option)  # no truth: the question is not scored
    t = traj.totals
    cost = "unknown (model not in the pricing table)" if t.cost_usd is None else f"${t.cost_usd:.4f}"
    print(f"answer: {traj.answer if traj.answer is not None else '(none)'}")
    if option is not None:
        print(f"option: {option}")
    reason = f" ({traj.reason})" if traj.reason and traj.reason != traj.status else ""
    print(f"status: {traj.status}{reason}")
    print(f"steps: {t.steps} ({t.calls} provider calls, {t.crops} crops)")
    for record in traj.tool_calls:  # agent.tools: each call's result, as the pages show it
        shown = TOOLS[record.tool].describe(record)
        rows = "; ".join(" ".join(row) for row in shown["rows"])
        print(f"{record.tool} (call {record.call_index}, {shown['image']}): {rows}")
    print(
        f"tokens: input {t.input_tokens} (cached {t.cached_input_tokens}), output {t.output_tokens} "
        f"(reasoning {t.reasoning_tokens})"
    )
    print(f"cost: {cost}")
    print(f"trajectory: {out_dir / TRAJECTORY_FILE}")
    print(f"page: {page}")
    if traj.status in SLIDE_STATUSES:
        fail(traj.reason.splitlines()[0] if traj.reason else f"cannot read {slide_path}", EXIT_FAILED)
    if traj.status != "answered":
        fail(
            f"no answer: {traj.status}" + (f" ({traj.reason.splitlines()[0]})" if traj.reason else ""),
            EXIT_FAILED,
        )


@hydra.main(version_base="1.3", config_path="../conf", config_name="ask")
def main(cfg: DictConfig) -> None:
    try:
        ask(cfg)
    except ConfigError as err:
        fail(str(err), EXIT_CONFIG)


if __name__ == "__main__":
    check_command_line("ask", "ask", sys.argv[1:])
    main()
