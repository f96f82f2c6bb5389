"""One trajectory as a single self-contained HTML page (giant/templates/trajectory.html): the overview
with every crop box numbered on it, then each provider call (reasoning, action or error, the crop,
tokens and cost), then the outcome.

The images are not embedded: each <img> names its JPEG beside the page (`<sha256>.jpg`), so the page
opens from the job folder, from a copied folder or from any web server, and the images stay on disk
once (base64 would add 4/3 of them again, then MLflow's copy of the page the same). MLflow's artifact
view shows an HTML artifact as a `blob:` document in a sandboxed iframe, where a relative name resolves
to nothing; there the page's one script (ours, fixed text) points each image at the server that made
the blob (`get-artifact` with the run id and the folder's artifact path written into the page). This
module prepares plain data; the template escapes all of it (a model can write `<script>` as easily as
anything else).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from markupsafe import Markup

from giant import pages
from giant.core import Box
from giant.llm.types import AnswerAction, CropAction, NoteAction, Step, Usage
from giant.record import (
    TRAJECTORY_PAGE,
    ResultRecord,
    latest_by_slot,
    read_trajectory,
    trajectory_dir,
)
from giant.record.read import JobRecord, read_runs
from giant.record.trajectory import Call, PatchesPlaced, Region, Trajectory
from giant.tools import TOOLS, ToolRecord
from giant.wsi.magnification import mpp_text

log = logging.getLogger(__name__)

Outlines = Sequence[Sequence[tuple[float, float]]]  # closed rings in level-0 px

COLOURS = ("#e6194b", "#3cb44b", "#4363d8", "#f58231", "#911eb4", "#42d4f4", "#f032e6", "#9a6324")

# Inside MLflow's artifact view: relative names cannot resolve against a blob: URL, so ask the server
# that made the blob (its origin is inside the blob URL) for each image of this run's folder.
MLFLOW_IMAGES = """(function () {
  var root = document.documentElement, run = root.getAttribute("data-mlflow-run");
  if (location.protocol !== "blob:" || !run) return;
  var base = new URL(location.href.slice(5)).origin + "/get-artifact?run_uuid=" + encodeURIComponent(run)
    + "&path=" + encodeURIComponent(root.getAttribute("data-artifact-dir") + "/");
  document.querySelectorAll("[data-image]").forEach(function (el) {
    var url = base + encodeURIComponent(el.getAttribute("data-image"));
    el.setAttribute(el.localName === "img" ? "src" : "href", url);
  });
})();"""


def _image_name(folder: Path, name: str) -> str | None:
    """The image's name beside the page (a relative URL), or None when the file is missing."""
    name = Path(name).name  # names are "<sha256>.jpg"; never follow a path out of the folder
    return name if (folder / name).is_file() else None


def _colour(number: int) -> str:
    return COLOURS[(number - 1) % len(COLOURS)]


def _cost(value: float | None) -> str:
    return "unknown" if value is None else f"${value:.4f}"


def _usage(usage: Usage) -> str:
    parts = [f"input {usage.input_tokens}", f"output {usage.output_tokens}"]
    if usage.reasoning_tokens:
        parts.append(f"reasoning {usage.reasoning_tokens}")
    if usage.cached_input_tokens:
        parts.append(f"cached {usage.cached_input_tokens}")
    text = "tokens: " + ", ".join(parts) + f" · cost {_cost(usage.cost_usd)}"
    if usage.latency_s:
        text += f" · {usage.latency_s:.1f} s"
    return text


def _action(step: Step) -> dict[str, Any]:
    """The action's kind and its text (a crop's box), or a tool's arguments as a list (`listed`)."""
    action = step.action
    text: str | None = None
    listed: list[str] | None = None
    if isinstance(action, CropAction):
        text = str(Box(x=action.x, y=action.y, w=action.width, h=action.height))
    elif isinstance(action, AnswerAction | NoteAction):
        text = action.text
    elif action.type in TOOLS:
        listed = TOOLS[action.type].show(action)
    return {"kind": action.type, "text": text, "listed": listed}


def _tool_call(record: ToolRecord, folder: Path) -> dict[str, Any]:
    """A tool's result as the model got it, as its tool describes it (giant.tools), with the image it
    kept beside the trajectory (`overlay`, e.g. the cells tool's detections) when it kept one."""
    shown = TOOLS[record.tool].describe(record)
    overlay = shown.get("overlay")
    return {
        "what": shown["summary"],
        "rows": shown["rows"],
        "overlay": overlay and _image_name(folder, overlay),
        "overlay_file": overlay,
    }


def _figure(region: Region, number: int | None, folder: Path, kind: str = "crop") -> dict[str, Any]:
    details = f"level {region.level}, {region.output_width}×{region.output_height} px, {mpp_text(region.mpp)}"
    if region.clamped or region.requested != region.read:
        details += f"; requested {region.requested}, clamped to the slide"
    return {
        "number": number,
        "kind": kind,
        "colour": None if number is None else _colour(number),
        "read": str(region.read),
        "details": details,
        "name": _image_name(folder, region.image),
        "image": region.image,
    }


def _overview(
    overview: Region,
    crops: list[tuple[int, Region]],
    folder: Path,
    kind: str,
    heading: str,
    details: str,
    outlines: Outlines = (),
) -> dict[str, Any]:
    """The overview and each crop's (or patch's) read box in overview pixels (drawn as SVG over the
    JPEG), with the slide's annotated target regions' outlines under them (SVG polygon points)."""
    width, height = overview.output_width, overview.output_height
    sx, sy = width / max(overview.read.w, 1), height / max(overview.read.h, 1)
    rings = [
        " ".join(f"{(x - overview.read.x) * sx:.1f},{(y - overview.read.y) * sy:.1f}" for x, y in ring)
        for ring in outlines
    ]
    boxes = [
        {
            "number": number,
            "kind": kind,
            "colour": _colour(number),
            "box": str(region.read),
            "x": (region.read.x - overview.read.x) * sx,
            "y": (region.read.y - overview.read.y) * sy,
            "w": max(region.read.w * sx, 1.0),
            "h": max(region.read.h * sy, 1.0),
        }
        for number, region in crops
    ]
    return {
        "name": _image_name(folder, overview.image),
        "image": overview.image,
        "width": width,
        "height": height,
        "font": max(12, round(0.035 * min(width, height))),
        "boxes": boxes,
        "heading": heading,
        "details": details,
        "outlines": rings,
    }


def _call(
    call: Call, crops: list[tuple[int, Region]], folder: Path, tools: list[ToolRecord], kind: str
) -> dict[str, Any]:
    return {
        "head": f"Call {call.index}" + (f" (restart {call.attempt})" if call.attempt else ""),
        "steps": [{"reasoning": step.reasoning, "action": _action(step)} for step in call.steps],
        "error": call.error,
        "error_kind": call.error_kind,
        "decode_note": call.decode_note,  # the reply was usable only after passing over part of it
        "raw": call.raw_text if call.raw_text and (not call.steps or call.decode_note) else None,
        "figures": [
            _figure(region, n, folder, kind) for n, region in crops if region.call_index == call.index
        ],
        "tools": [_tool_call(tool, folder) for tool in tools if tool.call_index == call.index],
        "feedback": call.feedback,
        "usage": _usage(call.usage),
    }


def render_html(
    traj: Trajectory,
    folder: Path,
    *,
    truth: str | None = None,
    correct: bool | None = None,
    label: str | None = None,
    mlflow_run_id: str | None = None,
    outlines: Outlines = (),
) -> str:
    """The page for `traj`, whose JPEGs are in `folder` (named, not embedded). `label` is what the
    scorer read from the answer (e.g. "2 (response_json)"); `mlflow_run_id` the run the folder is
    logged to, so the images also load inside MLflow's artifact view; `outlines` the slide's annotated
    target regions (closed rings in level-0 px), drawn under the crop boxes."""
    overview = next((r for r in traj.regions if r.call_index == 0), None)
    # Every other region is a numbered crop: the model's zooms, and in random_regions mode the
    # regions sent with the overview before the first call (call_index 0); in patch mode the patches.
    crops = list(enumerate((r for r in traj.regions if r is not overview), start=1))
    kind, heading = "crop", "Overview and crops"
    details = "" if overview is None else f"the overview the model saw: {mpp_text(overview.mpp)}"
    if traj.patches is not None:  # patch mode: no overview was sent; the page's own map shows the patches
        overview, kind, heading = traj.patches.map, "patch", "Patches on the slide"
        details = _patches_line(traj.patches)
    t = traj.totals
    tokens = (
        f"input {t.input_tokens}, output {t.output_tokens}, reasoning {t.reasoning_tokens}, "
        f"cached {t.cached_input_tokens}"
    )
    return pages.render(
        "trajectory.html",
        title=f"{traj.item_key} · {traj.mode} · {traj.status}",
        traj=traj,
        artifact_dir=trajectory_dir(traj.item_key, traj.run_index),
        mlflow_run_id=mlflow_run_id,
        setting=[
            ("item", traj.item_key + (f" (run {traj.run_index})" if traj.run_index else "")),
            ("mode", f"{traj.mode}, T={traj.max_steps}, S={traj.crop_size}"),
            ("model", f"{traj.provider} / {traj.model}"),
            ("slide", f"{traj.slide_path} ({traj.slide_width}×{traj.slide_height} px at level 0)"),
            ("level 0", mpp_text(traj.slide_mpp)),
            *([("patches", _patches_line(traj.patches))] if traj.patches is not None else []),
        ],
        answer=_answer(traj),
        label=label,
        truth=truth,
        correct=correct,
        totals=[
            ("calls / steps / crops", f"{t.calls} / {t.steps} / {t.crops}"),
            ("tokens", tokens),
            ("cost", _cost(t.cost_usd)),
            ("time", f"{t.seconds:.1f} s"),
        ],
        overview=None
        if overview is None
        else _overview(overview, crops, folder, kind, heading, details, outlines),
        with_overview=[_figure(r, n, folder, kind) for n, r in crops if r.call_index == 0],
        calls=[_call(call, crops, folder, traj.tool_calls, kind) for call in traj.calls],
        script=Markup(MLFLOW_IMAGES),  # giant's own fixed script, the page's only one
    )


def _patches_line(patches: PatchesPlaced) -> str:
    shown = f"{patches.sent} of {patches.requested} patches sent"
    return (
        f"{shown}, each {patches.level0_side} level-0 px ({patches.placement} placement); the map is the "
        f"slide's thumbnail for this page ({mpp_text(patches.map.mpp if patches.map else None)}), never sent"
    )


class Scored(NamedTuple):
    """What a page shows of its result record: the trajectory itself does not know the truth."""

    truth: str | None = None
    correct: bool | None = None
    label: str | None = None


def scored(record: ResultRecord) -> Scored:
    """What a page shows of its item-run's result record."""
    read = "none" if record.label is None else str(record.label)
    return Scored(str(record.truth), record.correct, f"{read} ({record.method or record.status})")


def write_job_pages(
    out_dir: Path,
    *,
    mlflow_run_id: str | None = None,
    outlines: Callable[[Trajectory], Outlines] | None = None,
    job: JobRecord | None = None,
) -> None:
    """trajectory.html in the trajectory folder of each recorded item-run of the job in `out_dir`,
    scored from its result record: the job's record in memory (`job`, as the runner returned it), else
    the folder's, read once (giant.record.read.read_runs). `outlines` gives a trajectory's slide's
    annotated target regions (giant.eval.annotations)."""
    records, trajectories = (job.records, job.trajectories) if job is not None else read_runs(out_dir)
    for record in latest_by_slot(records).values():
        traj = trajectories.get(record.slot)
        if traj is None or record.trajectory is None:
            continue
        folder = out_dir / record.trajectory
        try:
            write_html(
                folder,
                traj,
                **scored(record)._asdict(),
                mlflow_run_id=mlflow_run_id,
                outlines=outlines(traj) if outlines else (),
            )
        except Exception as exc:  # a page is a convenience: never lose a run over it
            log.warning("viewer: no trajectory.html for %s (%s)", folder.name, exc)


def _answer(traj: Trajectory) -> str | None:
    """The answer text, or in patch mode each patch's answer (eval votes over them)."""
    if traj.patch_answers is not None:
        return "\n".join(
            f"patch {n}: {text if text is not None else '(no answer)'}"
            for n, text in enumerate(traj.patch_answers, 1)
        )
    return traj.answer


def write_html(
    folder: Path,
    traj: Trajectory | None = None,
    *,
    truth: str | None = None,
    correct: bool | None = None,
    label: str | None = None,
    mlflow_run_id: str | None = None,
    outlines: Outlines = (),
) -> Path:
    """Write folder/trajectory.html with the truth, verdict and label the caller read from the job's
    results (write_job_pages, `scored`); the trajectory itself does not know them."""
    traj = traj if traj is not None else read_trajectory(folder)
    path = folder / TRAJECTORY_PAGE
    page = render_html(
        traj,
        folder,
        truth=truth,
        correct=correct,
        label=label,
        mlflow_run_id=mlflow_run_id,
        outlines=outlines,
    )
    path.write_text(page, encoding="utf-8")
    return path
