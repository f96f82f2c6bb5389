"""MLflow tag and metric names are spelled once, in giant.tracking.names: a literal anywhere else in
giant/ or scripts/ is a writer or reader that a renamed name would silently leave behind.

Two checks. The first finds any literal "giant.x" / "mlflow.x" tag (or a filter naming one). The second
reads the code with ast and finds a plain string literal in a place where MLflow takes a tag or metric
name, as giant's writers and readers use it:
- the key argument of a call that writes or reads one (`client.set_tag(run, KEY, v)`, `log_metric`,
  `Metric(KEY, ...)`, `RunTag(KEY, ...)`, `get_metric_history`, ...);
- a key of a dict literal of tags or metrics: passed as `tags=` / `metrics=`, to `set_tags(...)` /
  `log_metrics(...)`, assigned to or `update`d into a variable or attribute named `tags` / `metrics`
  (or `..._tags` / `..._metrics`), or returned by a function so named (`job_tags`, `summary_metrics`);
- an element of a collection literal assigned to a `..._TAGS` / `..._METRICS` constant
  (`SCORE_METRICS = ("metric", ...)`);
- a key read back or stored on such a container: `tags.get(KEY)`, `run.data.metrics[KEY]`,
  `KEY in tags`, `metrics.pop(KEY)`, `tags[KEY] = v`;
- a literal fed to any of the above through a loop variable (`for key in ("T", "S"): tags.get(key)`);
- a collection or dict literal that mixes names from giant.tracking.names with literals;
- an MLflow search filter naming a tag or metric (`"tags.model = 'x'"`), docstrings aside.
"""

from __future__ import annotations

import ast
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The names module, and the one below tracking it re-exports (the metric names the job record declares)
NAMES = (ROOT / "giant" / "tracking" / "names.py", ROOT / "giant" / "record" / "names.py")
NAMES_MODULES = ("giant.tracking.names", "giant.record.names")
# "giant.role", "mlflow.parentRunId", or a filter naming one ("tags.`giant.role` = 'job'")
TAG = re.compile(r"""^[rbuf]*["'](giant|mlflow)\.[A-Za-z_]+["']$|tags\.`?(giant|mlflow)\.""")

# Calls whose arguments name a tag or metric: the method or class -> positions that may hold the name
# (MlflowClient's take the run id first, mlflow's fluent ones and the entities take the name first).
KEY_ARGS = {
    "set_tag": (0, 1),
    "delete_tag": (0, 1),
    "set_experiment_tag": (0, 1),
    "log_metric": (0, 1),
    "get_metric_history": (0, 1),
    "Metric": (0,),
    "RunTag": (0,),
    "ExperimentTag": (0,),
}
DICT_CALLS = {"set_tags", "log_metrics", "set_experiment_tags"}  # take {name: value}
CONTAINER_KEYWORDS = {"tags", "metrics"}
CONTAINER = re.compile(r"(^|_)(tags|metrics)$")  # tags, metrics, start_tags, summary_metrics, ...
COLLECTION = re.compile(r"_(TAGS|METRICS)$")  # SCORE_METRICS, RUN_ONLY_TAGS: a constant naming several
READ_METHODS = {"get", "pop", "setdefault"}
FILTER = re.compile(r"\b(tags|metrics)\.`?[A-Za-z_]")  # a search filter naming a tag or metric


def _is_module(literal: str) -> bool:
    """ "giant.roles" names a module (a logger, a docstring's pointer), not a tag."""
    name = literal.strip("\"'").split(".", 1)[1]
    return (ROOT / "giant" / f"{name}.py").is_file() or (ROOT / "giant" / name).is_dir()


def tag_literals(path: Path) -> list[str]:
    with tokenize.open(path) as source:
        tokens = list(tokenize.generate_tokens(source.readline))
    return [
        f"{path}:{token.start[0]}: {token.string}"
        for token in tokens
        if token.type == tokenize.STRING and TAG.search(token.string) and not _is_module(token.string)
    ]


def _is_str(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _name_of(node: ast.AST) -> str | None:
    """`tags` for a variable, `tags` for `run.data.tags` / `self.tags`, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _is_container(node: ast.AST) -> bool:
    name = _name_of(node)
    return name is not None and CONTAINER.search(name) is not None


def _docstrings(tree: ast.Module) -> set[int]:
    """ids of the string statements (docstrings and bare string expressions): prose, not code."""
    return {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr) and _is_str(node.value)}


class _Finder(ast.NodeVisitor):
    def __init__(self, tree: ast.Module) -> None:
        self.found: dict[int, tuple[int, str]] = {}  # id(node) -> (line, why)
        self.prose = _docstrings(tree)
        self.names = {
            alias.asname or alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module in NAMES_MODULES
            for alias in node.names
        }
        self.loop_literals: dict[str, list[ast.Constant]] = {}  # loop variable -> the literals it takes
        self.function: list[str] = []
        self.rows: set[int] = set()  # ids of tuples that are rows of a collection

    # what gets flagged
    def _flag(self, node: ast.AST | None, why: str) -> None:
        if isinstance(node, ast.Constant) and _is_str(node):
            self.found.setdefault(id(node), (node.lineno, f"{why}: {node.value!r}"))
        elif isinstance(node, ast.Name) and node.id in self.loop_literals:
            for literal in self.loop_literals[node.id]:
                self._flag(literal, f"{why} (through loop variable {node.id})")

    def _flag_keys(self, node: ast.AST | None, why: str) -> None:
        if isinstance(node, ast.Dict):
            for key in node.keys:
                self._flag(key, why)

    # where
    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self.function.append(node.name)
        self.generic_visit(node)
        self.function.pop()

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self.function.append(node.name)
        self.generic_visit(node)
        self.function.pop()

    def visit_Return(self, node: ast.Return) -> None:
        if self.function and CONTAINER.search(self.function[-1]):
            self._flag_keys(node.value, f"key of the dict {self.function[-1]}() returns")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        for position in KEY_ARGS.get(name, ()):
            if position < len(node.args):
                self._flag(node.args[position], f"name passed to {name}()")
        for keyword in node.keywords:
            if keyword.arg == "key" and name in KEY_ARGS:
                self._flag(keyword.value, f"name passed to {name}()")
            if keyword.arg in CONTAINER_KEYWORDS:
                self._flag_keys(keyword.value, f"key of {keyword.arg}=")
        if name in DICT_CALLS:
            for arg in node.args:
                self._flag_keys(arg, f"key passed to {name}()")
        if isinstance(func, ast.Attribute) and _is_container(func.value):
            container = _name_of(func.value)
            if func.attr in READ_METHODS and node.args:
                self._flag(node.args[0], f"key read by {container}.{func.attr}()")
            if func.attr == "update":
                for arg in node.args:
                    self._flag_keys(arg, f"key put by {container}.update()")
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if _is_container(node.value):
            self._flag(node.slice, f"key of {_name_of(node.value)}[...]")
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        for op, right in zip(node.ops, node.comparators, strict=True):
            if isinstance(op, ast.In | ast.NotIn) and _is_container(right):
                self._flag(node.left, f"key looked up in {_name_of(right)}")
        self.generic_visit(node)

    def _assigned(self, targets: list[ast.expr], value: ast.AST | None) -> None:
        for target in targets:
            if _is_container(target):
                self._flag_keys(value, f"key of the dict assigned to {_name_of(target)}")
            if (name := _name_of(target)) is not None and COLLECTION.search(name):
                self._flag_elements(value, f"name in the collection assigned to {name}")

    def _flag_elements(self, node: ast.AST | None, why: str) -> None:
        """The names of a collection literal: `(*("a", B), "c")`, `frozenset({"a"})`, ..."""
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            for element in node.elts:
                self._flag(element, why)
                self._flag_elements(element, why)
        elif isinstance(node, ast.Starred):
            self._flag_elements(node.value, why)
        elif isinstance(node, ast.Call) and _name_of(node.func) in ("frozenset", "set", "tuple", "list"):
            for arg in node.args:
                self._flag_elements(arg, why)

    def visit_Assign(self, node: ast.Assign) -> None:
        self._assigned(node.targets, node.value)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._assigned([node.target], node.value)
        self.generic_visit(node)

    def visit_Dict(self, node: ast.Dict) -> None:
        if any(isinstance(key, ast.Name) and key.id in self.names for key in node.keys):
            for key in node.keys:
                self._flag(key, "literal beside names of giant.tracking.names")
        self.generic_visit(node)

    def _mixed(self, node: ast.Tuple | ast.List | ast.Set) -> None:
        """A collection of names (not a row of a table: `((MAX_STEPS_TAG, "max_steps"), ...)`)."""
        rows = [element for element in node.elts if isinstance(element, ast.Tuple)]
        self.rows.update(id(row) for row in rows)
        named = any(isinstance(element, ast.Name) and element.id in self.names for element in node.elts)
        if named and id(node) not in self.rows:
            for element in node.elts:
                self._flag(element, "literal beside names of giant.tracking.names")
        self.generic_visit(node)

    visit_Tuple = visit_List = visit_Set = _mixed

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and id(node) not in self.prose and FILTER.search(node.value):
            self._flag(node, "search filter naming a tag or metric")

    # loops: the literals a loop variable takes, while its body (or comprehension) is visited
    def _bind(self, target: ast.AST, iterable: ast.AST) -> dict[str, list[ast.Constant]]:
        if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Attribute):
            dictionary, method = iterable.func.value, iterable.func.attr
            if isinstance(dictionary, ast.Dict) and method in ("items", "keys"):
                pairs = [
                    (k, v) for k, v in zip(dictionary.keys, dictionary.values, strict=True) if k is not None
                ]
                rows: list[ast.expr] = [k if method == "keys" else ast.Tuple(elts=[k, v]) for k, v in pairs]
                return self._bind_rows(target, rows)
            return {}
        if isinstance(iterable, ast.Dict):
            return self._bind_rows(target, [key for key in iterable.keys if key is not None])
        if isinstance(iterable, ast.Tuple | ast.List | ast.Set):
            return self._bind_rows(target, list(iterable.elts))
        return {}

    @staticmethod
    def _bind_rows(target: ast.AST, rows: list[ast.expr]) -> dict[str, list[ast.Constant]]:
        """Loop variable -> the string literals it takes from `rows` (a row per iteration)."""
        bound: dict[str, list[ast.Constant]] = {}
        slots: list[tuple[ast.Name, int | None]] = [(target, None)] if isinstance(target, ast.Name) else []
        if isinstance(target, ast.Tuple):
            slots = [(element, i) for i, element in enumerate(target.elts) if isinstance(element, ast.Name)]
        for slot, index in slots:
            for row in rows:
                value = row if index is None else row.elts[index] if isinstance(row, ast.Tuple) else None
                if isinstance(value, ast.Constant) and _is_str(value):
                    bound.setdefault(slot.id, []).append(value)
        return bound

    def _with_loop(self, bound: dict[str, list[ast.Constant]], nodes: list[ast.AST]) -> None:
        saved = dict(self.loop_literals)
        self.loop_literals.update(bound)
        for child in nodes:
            self.visit(child)
        self.loop_literals = saved

    def visit_For(self, node: ast.For) -> None:
        self.visit(node.iter)
        self._with_loop(self._bind(node.target, node.iter), [*node.body, *node.orelse])

    def _comprehension(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp) -> None:
        bound: dict[str, list[ast.Constant]] = {}
        for generator in node.generators:
            self.visit(generator.iter)
            bound.update(self._bind(generator.target, generator.iter))
        parts: list[ast.AST] = [condition for g in node.generators for condition in g.ifs]
        parts += [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
        self._with_loop(bound, parts)

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _comprehension


def name_literals(path: Path) -> list[str]:
    """Every literal in `path` used as an MLflow tag or metric name, as 'path:line: why: literal'."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    finder = _Finder(tree)
    finder.visit(tree)
    return [f"{path}:{line}: {why}" for line, why in sorted(finder.found.values())]


def _sources() -> Iterator[Path]:
    for folder in ("giant", "scripts"):
        yield from (path for path in sorted((ROOT / folder).rglob("*.py")) if path not in NAMES)


def test_no_tag_literal_outside_the_names_module() -> None:
    found = [hit for path in _sources() for hit in tag_literals(path)]
    assert found == [], "import the tag from giant.tracking.names:\n" + "\n".join(found)


def test_no_tag_or_metric_name_literal_outside_the_names_module() -> None:
    found = [hit for path in _sources() for hit in name_literals(path)]
    assert found == [], "spell the name in giant.tracking.names and import it:\n" + "\n".join(found)


def test_the_check_finds_a_literal(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text('ROLE = "giant.role"\nFILTER = f"tags.`giant.role` = \'{1}\'"\nLOG = "giant.eval"\n')
    assert [hit.split(": ", 1)[1] for hit in tag_literals(planted)] == [
        '"giant.role"',
        "f\"tags.`giant.role` = '{1}'\"",
    ]


PLANTED = '''"""A docstring may say tags.model = 'gpt-5'."""
from giant.tracking.names import DATASET_TAG, MODEL_TAG, STATUS_TAG

SCORE_METRICS = (*("metric", MODEL_TAG), "accuracy")
RUN_ONLY_TAGS = frozenset({"output_dir"})


def job_tags(settings):
    return {DATASET_TAG: settings.dataset, "model": settings.model}


def write(client, run_id, run, summary):
    client.set_tag(run_id, "status", "running")
    client.log_metric(run_id, "n_jobs", 2)
    client.log_batch(run_id, metrics=[Metric("run_metric", 0.5, 0, 0)], tags=[RunTag("T", "5")])
    client.create_run("1", tags={"provider": "random"})
    metrics = {"metric": summary.point}
    metrics["n_slides_missing"] = 0
    for key, value in {"n_failed": 1}.items():
        client.log_metric(run_id, key, value)
    row = {key: run.data.tags.get(key) for key in (DATASET_TAG, "agent_mode")}
    tags = run.data.tags
    if "runs_per_item" in tags and tags["S"] and run.data.metrics.get("cost_usd"):
        return client.search_runs(["1"], f"tags.dataset = '{summary.task}'")
    for tag, name in (("git_commit", "commit"), (STATUS_TAG, "status")):
        print(tags.get(tag), name, "sweep_dir")


def clean(client, run_id, run, summary):
    client.set_tag(run_id, STATUS_TAG, "running")
    tags = {STATUS_TAG: "complete", MODEL_TAG: summary.model}
    print(run.data.tags.get(MODEL_TAG), f"tags.{MODEL_TAG} = 'gpt-5'", summary.tags, "status")
    return {"key": "value"}, {1: "metric"}
'''


def test_the_ast_check_finds_every_kind_of_literal_name(tmp_path: Path) -> None:
    """Each planted offence is found on its line; the clean function (constants, values, prose) is not."""
    planted = tmp_path / "planted.py"
    planted.write_text(PLANTED, encoding="utf-8")
    hits = [hit.split(":", 2)[1:] for hit in name_literals(planted)]
    found = {(int(line), why.rsplit(": ", 1)[1]) for line, why in hits}
    assert found == {
        (4, "'metric'"),
        (4, "'accuracy'"),
        (5, "'output_dir'"),
        (9, "'model'"),
        (13, "'status'"),
        (14, "'n_jobs'"),
        (15, "'run_metric'"),
        (15, "'T'"),
        (16, "'provider'"),
        (17, "'metric'"),
        (18, "'n_slides_missing'"),
        (19, "'n_failed'"),
        (21, "'agent_mode'"),
        (23, "'runs_per_item'"),
        (23, "'S'"),
        (23, "'cost_usd'"),
        (24, '"tags.dataset = \'"'),
        (25, "'git_commit'"),
    }, hits
