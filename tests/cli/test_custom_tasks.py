"""Your own slides and questions through the job of scripts/run_eval.py, in-process (giant.evaluate;
issue 32): a hand-written CSV of four questions over two slides the test writes runs end to end with the
random provider (two jobs, over two versions of the file) and with the real openai SDK against a
loopback server; a file with five mistakes stops before anything is paid (the ConfigError the command
line prints with exit 2); `make_tables` warns when two runs side by side scored
different versions of a task; a run with its own system prompt template is another method to `compare`.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from giant.agent.wording import SHIPPED_DIR
from giant.errors import EXIT_CONFIG
from giant.tracking.names import DATASET_DIGEST_TAG, OUTPUT_DIR_TAG
from giant.wsi.synthetic import write_synthetic_slide
from tests.browser import loopback
from tests.helpers.cli import COMPARE, MAKE_TABLES, Ended, Env, clean_env, run_script
from tests.llm.mock_api import message, responses_body, step_json

KEY = "sk-test-custom-0123456789"

pytestmark = pytest.mark.slow

# Four questions over two slides, written as a person would: options as JSON lists, answers as an
# option's number, an option's text and a grade label, one absolute slide path.
QUESTIONS = """slide,question,options,answer,id,task
s1.svs,Which organ is this tissue from?,"[""Liver"", ""Lung"", ""Skin""]",2,q1,organ
s2.svs,Which organ is this tissue from?,"[""Liver"", ""Lung"", ""Skin""]",Skin,q2,organ
s1.svs,What is the ISUP grade?,,3,g1,grade
{absolute},What is the ISUP grade?,,0,g2,grade
"""
# Five different mistakes, one per row: options not JSON, an answer not among the options, a slide
# that is not there, a duplicate id, an unknown metric.
MISTAKES = '''slide,question,options,answer,id,task,metric
s1.svs,Which organ?,"[""Liver"", ""Lung""",1,a,organ,
s2.svs,Which organ?,"[""Liver"", ""Lung""]",Kidney,b,organ,
absent.svs,What is the ISUP grade?,,3,c,grade,
s1.svs,What is the ISUP grade?,,2,c,grade,
s2.svs,Which organ?,"[""Liver"", ""Lung""]",1,d,organ,f1
'''


@dataclass
class Cohort:
    tmp: Path
    slides: Path
    questions: Path
    changed: Path  # one answer changed
    env: dict[str, str]
    requests: list[str] = field(default_factory=list)  # paths the loopback OpenAI server was asked

    @property
    def uri(self) -> str:
        return f"sqlite:///{self.tmp / 'store' / 'mlflow.db'}"

    def run(self, *args: str, script: Path) -> subprocess.CompletedProcess[str]:
        return run_script(script, *args, cwd=self.tmp, env=self.env, timeout=400)

    def job(self, folder: Path, *args: str) -> Ended:
        """The job of `run_eval.py args`, in-process, into `folder`."""
        return Env(self.tmp, self.env).ended(folder, *args)

    def common(self, *more: str) -> list[str]:
        return [
            "dataset=custom",
            f"paths.wsi_root={self.slides}",
            "agent.max_steps=2",
            f"tracking.uri={self.uri}",
            *more,
        ]


@pytest.fixture(scope="module")
def cohort(tmp_path_factory: pytest.TempPathFactory) -> Cohort:
    tmp = tmp_path_factory.mktemp("custom")
    slides = tmp / "slides"
    for seed in (1, 2):
        write_synthetic_slide(slides / f"s{seed}.svs", 2400, 1800, seed=seed)
    questions = tmp / "questions.csv"
    questions.write_text(QUESTIONS.format(absolute=slides / "s2.svs"))
    changed = tmp / "questions_v2.csv"
    changed.write_text(QUESTIONS.format(absolute=slides / "s2.svs").replace(",3,g1,", ",4,g1,"))
    env = clean_env(
        "OPENAI_",
        OPENAI_API_KEY=KEY,
        GIANT_CACHE_DIR=str(tmp / "cache"),
        GIANT_OUTPUT_DIR=str(tmp / "outputs"),
    )
    return Cohort(tmp, slides, questions, changed, env)


@pytest.fixture(scope="module")
def sweep(cohort: Cohort) -> list[Path]:
    """The random provider over both versions of the file: two jobs, the changed file's second."""
    folders = [cohort.tmp / "sweep" / "0", cohort.tmp / "sweep" / "1"]
    for folder, path in zip(folders, (cohort.questions, cohort.changed), strict=True):
        end = cohort.job(folder, *cohort.common("provider=random", f"dataset.path={path}"))
        assert end.code == 0, end
    return folders


def _summary(folder: Path) -> dict[str, object]:
    return json.loads((folder / "summary.json").read_text())


def _check_job(folder: Path, client: MlflowClient) -> str:
    """4 items scored, the report and 4 trajectory pages, an MLflow run whose input dataset is the
    file with its digest; returns the digest."""
    summary = _summary(folder)
    assert summary["n_items"] == 4 and summary["complete"] is True
    assert (folder / "report.html").is_file()
    assert len(list(folder.glob("trajectories/*/run0/trajectory.html"))) == 4
    digests = summary["provenance"]["dataset_digests"]  # type: ignore[index]
    run = next(
        r
        for r in client.search_runs([client.get_experiment_by_name("giant").experiment_id])
        if r.data.tags.get(OUTPUT_DIR_TAG) == str(folder)
    )
    [dataset] = run.inputs.dataset_inputs
    assert (dataset.dataset.name, dataset.dataset.digest) == (digests["source"], digests["digest"])
    assert run.data.tags[DATASET_DIGEST_TAG] == digests["digest"]
    assert set(digests["tasks"]) == {"organ", "grade"}
    return str(digests["digest"])


def test_a_hand_written_file_runs_end_to_end_with_the_random_provider(
    cohort: Cohort, sweep: list[Path]
) -> None:
    client = MlflowClient(cohort.uri)
    first, second = (_check_job(folder, client) for folder in sweep)
    assert first != second  # one answer changed: another version of the questions
    tasks = [_summary(folder)["provenance"]["dataset_digests"]["tasks"] for folder in sweep]  # type: ignore[index]
    assert tasks[0]["organ"] == tasks[1]["organ"] and tasks[0]["grade"] != tasks[1]["grade"]


@pytest.fixture(scope="module")
def openai_server(cohort: Cohort) -> Iterator[str]:
    answer = responses_body(
        message(step_json({"type": "answer", "text": '<response>{"answer": 1}</response>'}))
    )

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", 0)))
            cohort.requests.append(self.path)
            body = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return

    with loopback(Handler) as base:
        yield f"{base}/v1"


@pytest.fixture(scope="module")
def openai_run(cohort: Cohort, openai_server: str) -> Path:
    """The real openai SDK against the loopback server, on the first version of the file."""
    folder = cohort.tmp / "openai"
    before = len(cohort.requests)
    end = cohort.job(
        folder,
        *cohort.common(
            "provider=openai", f"provider.base_url={openai_server}", f"dataset.path={cohort.questions}"
        ),
    )
    assert end.code == 0, end
    assert len(cohort.requests) - before == 4  # one answer per question
    return folder


def test_a_hand_written_file_runs_end_to_end_with_a_loopback_openai_server(
    cohort: Cohort, openai_run: Path
) -> None:
    _check_job(openai_run, MlflowClient(cohort.uri))
    assert _summary(openai_run)["n_scored"] == 4


def test_make_tables_warns_when_side_by_side_runs_scored_different_versions(
    cohort: Cohort, sweep: list[Path], openai_run: Path
) -> None:
    """The random row's cell is the sweep's newer job (the changed file), the gpt-5 row's the first
    version: two rows of one column over different questions."""
    out = cohort.tmp / "tables"
    proc = cohort.run("--no-log", "--tracking-uri", cohort.uri, "--out", str(out), script=MAKE_TABLES)
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if "different versions" in line]
    assert len(warnings) == 1, proc.stderr
    for folder in (sweep[1], openai_run):
        assert _summary(folder)["provenance"]["dataset_digests"]["digest"] in warnings[0]  # type: ignore[index]
    assert "grade+organ" in warnings[0]  # the column both rows fill


def test_five_mistakes_are_five_lines_and_nothing_starts(cohort: Cohort, openai_server: str) -> None:
    bad = cohort.tmp / "mistakes.csv"
    bad.write_text(MISTAKES)
    store = cohort.tmp / "bad-store"
    before = len(cohort.requests)
    end = cohort.job(
        cohort.tmp / "mistakes",
        "dataset=custom",
        f"dataset.path={bad}",
        f"paths.wsi_root={cohort.slides}",
        "provider=openai",
        f"provider.base_url={openai_server}",
        f"tracking.uri=sqlite:///{store / 'mlflow.db'}",
    )
    assert end.code == EXIT_CONFIG, end
    message = end.line or ""
    lines = [line.strip() for line in message.splitlines() if line.strip().startswith("row ")]
    assert [line.split(":")[0] for line in lines] == [
        "row 1, column options",
        "row 2, column answer",
        "row 3, column slide",
        "row 4, column id",
        "row 5, column metric",
    ]
    assert "5 problem(s)" in message
    assert len(cohort.requests) == before  # no call
    if (store / "mlflow.db").exists():  # the store may exist, but no run is in it
        client = MlflowClient(f"sqlite:///{store / 'mlflow.db'}")
        assert not client.search_runs([e.experiment_id for e in client.search_experiments()])


def test_a_system_prompt_template_of_your_own_is_another_method_to_compare(
    cohort: Cohort, sweep: list[Path]
) -> None:
    templates = cohort.tmp / "wording"
    templates.mkdir()
    text = (SHIPPED_DIR / "system.j2").read_text().replace("an expert pathologist", "a careful pathologist")
    (templates / "system.j2").write_text(text)
    folder = cohort.tmp / "worded"
    end = cohort.job(
        folder,
        *cohort.common("provider=random", f"dataset.path={cohort.questions}", f"agent.prompts={templates}"),
    )
    assert end.code == 0, end
    default = _summary(sweep[0])["provenance"]["config_hash"]  # type: ignore[index]
    assert _summary(folder)["provenance"]["config_hash"] != default  # type: ignore[index]
    trajectory = json.loads(next(folder.glob("trajectories/*/run0/trajectory.json")).read_text())
    assert trajectory["system_prompt"].startswith("You are a careful pathologist")

    out = cohort.tmp / "comparison"
    proc = cohort.run(str(sweep[0]), str(folder), "--no-log", "--out", str(out), script=COMPARE)
    assert proc.returncode == 0, proc.stderr[-3000:]
    markdown = (out / "comparison.md").read_text()
    assert "agent.prompts" in markdown and str(templates) in markdown
