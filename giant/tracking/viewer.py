"""One trajectory as a single self-contained HTML page: the overview with every crop box numbered on
it, then each provider call (reasoning, action or error, the crop, tokens and cost), then the outcome.

The images are not embedded: each <img> names its JPEG beside the page (`<sha256>.jpg`), so the page
opens from the job folder, from a copied folder or from any web server, and the images stay on disk
once (base64 would add 4/3 of them again, then MLflow's copy of the page the same). MLflow's artifact
view shows an HTML artifact as a `blob:` document in a sandboxed iframe, where a relative name resolves
to nothing; there the page's one script (ours, fixed text) points each image at the server that made
the blob (`get-artifact` with the run id and the folder's artifact path written into the page). All
model text is HTML-escaped: a model can write `<script>` as easily as anything else.
"""

from __future__ import annotations

import functools
import html
from pathlib import Path
from typing import NamedTuple

from giant.agent.trajectory import Call, Region, ToolCall, Trajectory
from giant.core import Box
from giant.eval.results import latest_by_slot, read_results
from giant.job_layout import TRAJECTORY_FILE, TRAJECTORY_PAGE, JobLayout, trajectory_dir
from giant.llm.types import AnswerAction, ConchAction, CropAction, NoteAction, Step, Usage

COLOURS = ("#e6194b", "#3cb44b", "#4363d8", "#f58231", "#911eb4", "#42d4f4", "#f032e6", "#9a6324")

CSS = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:1.5em auto;padding:0 1em;color:#222}
h1{font-size:1.3em}h2{font-size:1.1em;border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:1.6em}
pre{white-space:pre-wrap;word-wrap:break-word;background:#f6f6f6;padding:.6em;border-radius:4px}
table.kv td{padding:.1em .8em .1em 0;vertical-align:top}table.kv td:first-child{color:#666}
.call{border:1px solid #ddd;border-radius:6px;padding:.6em 1em;margin:1em 0}
.error{color:#b00020}.feedback{color:#8a5a00}.usage{color:#666;font-size:.9em}
.ok{background:#1b7f3b;color:#fff;padding:.1em .5em;border-radius:4px}
.bad{background:#b00020;color:#fff;padding:.1em .5em;border-radius:4px}
.unknown{background:#888;color:#fff;padding:.1em .5em;border-radius:4px}
.crop img{max-width:100%;border:1px solid #ccc}.crop{margin:.6em 0}
svg.overview{max-width:100%;height:auto;border:1px solid #ccc}
.badge{display:inline-block;min-width:1.4em;text-align:center;color:#fff;border-radius:3px;padding:0 .3em}
"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


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
    return _e(name) if (folder / name).is_file() else None


def _colour(number: int) -> str:
    return COLOURS[(number - 1) % len(COLOURS)]


def _badge(number: int) -> str:
    return f'<span class="badge" style="background:{_colour(number)}">{number}</span>'


def _kv(rows: list[tuple[str, str]]) -> str:
    """Rows whose values are already HTML."""
    return (
        '<table class="kv">' + "".join(f"<tr><td>{_e(k)}</td><td>{v}</td></tr>" for k, v in rows) + "</table>"
    )


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
    return f'<div class="usage">{_e(text)}</div>'


def _action(step: Step) -> str:
    action = step.action
    if isinstance(action, CropAction):
        box = Box(x=action.x, y=action.y, w=action.width, h=action.height)
        return f"<b>crop</b> {_e(box)}"
    if isinstance(action, AnswerAction):
        return f"<b>answer</b><pre>{_e(action.text)}</pre>"
    if isinstance(action, NoteAction):
        return f"<b>note</b> {_e(action.text)}"
    if isinstance(action, ConchAction):
        return "<b>conch</b><ul>" + "".join(f"<li>{_e(text)}</li>" for text in action.hypotheses) + "</ul>"
    return f"<b>{_e(action.type)}</b>"


def _tool_call(call: ToolCall) -> str:
    """A tool's result as the model got it: each hypothesis with its score, highest first."""
    rows = "".join(f"<tr><td>{score:+.3f}</td><td>{_e(text)}</td></tr>" for text, score in call.ranked())
    what = (
        f"{call.model} scored the central square {call.region} of {call.image} "
        f"({call.input_size}×{call.input_size} px read from the slide) in {call.seconds:.2f} s"
    )
    return f'<div class="tool"><div class="usage">{_e(what)}</div><table class="kv tool">{rows}</table></div>'


def _region_figure(region: Region, number: int | None, folder: Path) -> str:
    title = (f"{_badge(number)} crop " if number is not None else "overview ") + _e(region.read)
    details = f"level {region.level}, {region.output_width}×{region.output_height} px"
    if region.clamped or region.requested != region.read:
        details += f"; requested {region.requested}, clamped to the slide"
    name = _image_name(folder, region.image)
    img = (
        f'<img src="{name}" data-image="{name}" alt="region {_e(region.read)}">'
        if name
        else f'<p class="error">image missing: {_e(region.image)}</p>'
    )
    return f'<div class="crop"><div>{title} <span class="usage">{_e(details)}</span></div>{img}</div>'


def _overview(overview: Region, crops: list[tuple[int, Region]], folder: Path) -> str:
    """The overview with each crop's read box drawn in overview pixels (SVG over the JPEG)."""
    name = _image_name(folder, overview.image)
    if name is None:
        return f'<p class="error">overview image missing: {_e(overview.image)}</p>'
    width, height = overview.output_width, overview.output_height
    sx, sy = width / max(overview.read.w, 1), height / max(overview.read.h, 1)
    font = max(12, round(0.035 * min(width, height)))
    shapes = []
    for number, region in crops:
        box = region.read
        x, y = (box.x - overview.read.x) * sx, (box.y - overview.read.y) * sy
        w, h = max(box.w * sx, 1.0), max(box.h * sy, 1.0)
        colour = _colour(number)
        shapes.append(
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" fill="none" stroke="{colour}" '
            f'stroke-width="2" vector-effect="non-scaling-stroke">'
            f"<title>crop {number}: {_e(box)}</title></rect>"
            f'<text x="{x + 2:.1f}" y="{y + font:.1f}" font-size="{font}" font-weight="bold" fill="{colour}" '
            f'stroke="#fff" stroke-width="3" paint-order="stroke">{number}</text>'
        )
    return (
        f'<svg class="overview" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}">'
        f'<image href="{name}" data-image="{name}" x="0" y="0" width="{width}" height="{height}"/>'
        + "".join(shapes)
        + "</svg>"
    )


def _call(call: Call, crops: list[tuple[int, Region]], folder: Path, tools: list[ToolCall]) -> str:
    head = f"Call {call.index}" + (f" (restart {call.attempt})" if call.attempt else "")
    body = []
    for step in call.steps:
        body.append(f"<div><b>reasoning</b><pre>{_e(step.reasoning)}</pre>{_action(step)}</div>")
    if call.error:
        body.append(f'<p class="error"><b>error ({_e(call.error_kind or "?")})</b>: {_e(call.error)}</p>')
    if call.decode_note:  # the reply was usable only after passing over part of it: show what and why
        body.append(f'<p class="feedback"><b>reply decoded</b>: {_e(call.decode_note)}</p>')
    if call.raw_text and (not call.steps or call.decode_note):
        body.append(f"<details><summary>raw model output</summary><pre>{_e(call.raw_text)}</pre></details>")
    body += [
        _region_figure(region, number, folder) for number, region in crops if region.call_index == call.index
    ]
    body += [_tool_call(tool) for tool in tools if tool.call_index == call.index]
    if call.feedback:
        body.append(f'<p class="feedback"><b>feedback sent</b>: {_e(call.feedback)}</p>')
    body.append(_usage(call.usage))
    return f'<div class="call"><h3>{_e(head)}</h3>{"".join(body)}</div>'


def _verdict(correct: bool | None) -> str:
    if correct is None:
        return '<span class="unknown">not scored</span>'
    return '<span class="ok">correct</span>' if correct else '<span class="bad">incorrect</span>'


def render_html(
    traj: Trajectory,
    folder: Path,
    *,
    truth: str | None = None,
    correct: bool | None = None,
    label: str | None = None,
    mlflow_run_id: str | None = None,
) -> str:
    """The page for `traj`, whose JPEGs are in `folder` (named, not embedded). `label` is what the
    scorer read from the answer (e.g. "2 (response_json)"); `mlflow_run_id` the run the folder is
    logged to, so the images also load inside MLflow's artifact view."""
    overview = next((r for r in traj.regions if r.call_index == 0), None)
    # Every other region is a numbered crop: the model's zooms, and in random_regions mode the
    # regions sent with the overview before the first call (call_index 0).
    crops = list(enumerate((r for r in traj.regions if r is not overview), start=1))
    t = traj.totals
    tokens = (
        f"input {t.input_tokens}, output {t.output_tokens}, reasoning {t.reasoning_tokens}, "
        f"cached {t.cached_input_tokens}"
    )
    outcome = _kv(
        [
            (
                "status",
                f"<b>{_e(traj.status)}</b>"
                + (f" — {_e(traj.reason)}" if traj.reason and traj.reason != traj.status else ""),
            ),
            ("answer", _answer(traj)),
            ("answer read as", _e(label) if label is not None else "<i>not scored</i>"),
            ("truth", _e(truth) if truth is not None else "<i>unknown</i>"),
            ("verdict", _verdict(correct)),
            ("calls / steps / crops", _e(f"{t.calls} / {t.steps} / {t.crops}")),
            ("tokens", _e(tokens)),
            ("cost", _e(_cost(t.cost_usd))),
            ("time", _e(f"{t.seconds:.1f} s")),
        ]
    )
    setting = _kv(
        [
            ("item", _e(traj.item_key) + (f" (run {traj.run_index})" if traj.run_index else "")),
            ("mode", _e(f"{traj.mode}, T={traj.max_steps}, S={traj.crop_size}")),
            ("model", _e(f"{traj.provider} / {traj.model}")),
            ("slide", _e(f"{traj.slide_path} ({traj.slide_width}×{traj.slide_height} px at level 0)")),
        ]
    )
    parts = [
        f"<h1>{_e(traj.item_key)}</h1>",
        setting,
        "<h2>Outcome</h2>",
        outcome,
        "<h2>Question</h2>",
        f"<pre>{_e(traj.question)}</pre>",
    ]
    if traj.system_prompt:
        parts.append(
            f"<details><summary>system prompt</summary><pre>{_e(traj.system_prompt)}</pre></details>"
        )
    if overview is not None:
        parts += ["<h2>Overview and crops</h2>", _overview(overview, crops, folder)]
    with_overview = [_region_figure(r, n, folder) for n, r in crops if r.call_index == 0]
    if with_overview:
        parts += ["<h2>Regions sent with the overview</h2>", *with_overview]
    parts.append("<h2>Calls</h2>")
    parts += [_call(call, crops, folder, traj.tool_calls) for call in traj.calls]
    if traj.notes:
        parts += ["<h2>Notes</h2>", "<ul>" + "".join(f"<li>{_e(n)}</li>" for n in traj.notes) + "</ul>"]
    title = _e(f"{traj.item_key} · {traj.mode} · {traj.status}")
    where = f' data-artifact-dir="{_e(trajectory_dir(traj.item_key, traj.run_index))}"'
    if mlflow_run_id:
        where += f' data-mlflow-run="{_e(mlflow_run_id)}"'
    return (
        f'<!DOCTYPE html>\n<html lang="en"{where}><head><meta charset="utf-8"><title>{title}</title>'
        f"<style>{CSS}</style></head><body>{''.join(parts)}<script>{MLFLOW_IMAGES}</script></body></html>\n"
    )


class Scored(NamedTuple):
    truth: str | None = None
    correct: bool | None = None
    label: str | None = None


@functools.lru_cache(maxsize=4)
def _scored_by_folder(results: Path, mtime_ns: int) -> dict[Path, Scored]:
    """Every scored trajectory folder of one results.jsonl, parsed once per file version: the runner
    writes a page per item, and re-reading the file for each would cost O(items^2)."""
    out: dict[Path, Scored] = {}
    for record in latest_by_slot(read_results(results)).values():
        if record.trajectory:
            read = "none" if record.label is None else str(record.label)
            out[(results.parent / record.trajectory).resolve()] = Scored(
                str(record.truth), record.correct, f"{read} ({record.method or record.status})"
            )
    return out


def _scored_result(folder: Path) -> Scored:
    """Truth, verdict and label from the run's results.jsonl when the folder sits in a run's output
    (<out>/trajectories/<item>/run<k>): the trajectory itself does not know the truth."""
    folder = folder.resolve()
    for out_dir in list(folder.parents)[:3]:
        results = JobLayout(out_dir).results
        if results.is_file():
            found = _scored_by_folder(results, results.stat().st_mtime_ns).get(folder)
            if found is not None:
                return found
    return Scored()


def _answer(traj: Trajectory) -> str:
    """The answer text, or in patch mode each patch's answer (eval votes over them)."""
    if traj.patch_answers is not None:
        lines = [
            f"patch {n}: {text if text is not None else '(no answer)'}"
            for n, text in enumerate(traj.patch_answers, 1)
        ]
        return f"<pre>{_e(chr(10).join(lines))}</pre>"
    return f"<pre>{_e(traj.answer)}</pre>" if traj.answer is not None else "<i>none</i>"


def load_trajectory(folder: Path) -> Trajectory:
    return Trajectory.model_validate_json((folder / TRAJECTORY_FILE).read_text(encoding="utf-8"))


def write_html(
    folder: Path,
    traj: Trajectory | None = None,
    *,
    truth: str | None = None,
    correct: bool | None = None,
    label: str | None = None,
    mlflow_run_id: str | None = None,
) -> Path:
    """Write folder/trajectory.html; without truth, verdict and label they are looked up in the
    run's results.jsonl (the runner writes pages after scoring, the trajectory does not know them)."""
    traj = traj if traj is not None else load_trajectory(folder)
    if truth is None and correct is None and label is None:
        truth, correct, label = _scored_result(folder)
    path = folder / TRAJECTORY_PAGE
    page = render_html(traj, folder, truth=truth, correct=correct, label=label, mlflow_run_id=mlflow_run_id)
    path.write_text(page, encoding="utf-8")
    return path
