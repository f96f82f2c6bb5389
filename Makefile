# Every target that needs Python installs the venv first, so `make test` and `make demo` work on a fresh clone.
PY := .venv/bin/python
VENV_STAMP := .venv/.installed

.PHONY: help install install-serve test test-fast lint docs docs-serve pictures bench demo ui tables compare clean

help: ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

$(VENV_STAMP): pyproject.toml
	python3 -m venv .venv
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(VENV_STAMP)

install: $(VENV_STAMP) ## create .venv and install giant with dev extras
# PyTorch pinned before the extra, so pip never picks a build by itself. For a CPU-only build from
# PyPI's index add TORCH_INDEX="--index-url https://download.pytorch.org/whl/cpu".
TORCH_SPEC ?= torch==2.13.0
TORCH_INDEX ?=
install-conch: $(VENV_STAMP) ## add the CONCH tool: pinned PyTorch, then the conch extra (tokenizers)
	$(PY) -m pip install -q $(TORCH_INDEX) "$(TORCH_SPEC)"
	$(PY) -m pip install -q -e '.[dev,conch]'
install-serve: $(VENV_STAMP) ## add transformers serve (server=transformers, tests/realserver): pinned PyTorch, then the serve extra
	$(PY) -m pip install -q $(TORCH_INDEX) "$(TORCH_SPEC)"
	$(PY) -m pip install -q -e '.[dev,serve]'

# Two pytest-xdist workers: most tests wait on subprocesses and servers, so two cores run the suite in
# about two thirds of the serial time; the SLURM tests share one worker and one private cluster.
TEST_WORKERS ?= 2
# --durations: the 25 slowest tests at the end of the output (CI's log shows where the time goes).
test: $(VENV_STAMP) ## run the whole offline test suite (slow tests included)
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadgroup --durations=25

test-fast: $(VENV_STAMP) ## run the tests not marked slow
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadgroup -m "not slow" --durations=25

lint: $(VENV_STAMP) ## ruff + mypy
	$(PY) -m ruff check giant scripts tests benchmarks
	$(PY) -m ruff format --check giant scripts tests benchmarks
	$(PY) -m mypy

docs: $(VENV_STAMP) ## build the documentation site into site/ (strict: a broken link or missing page fails)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --site-dir site

docs-serve: $(VENV_STAMP) ## serve the documentation site on http://127.0.0.1:8000 while you edit it
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs serve --dev-addr 127.0.0.1:$${DOCS_PORT:-8000}

pictures: $(VENV_STAMP) ## retake the docs' screenshots (docs/images/) with the tests' headless Chromium
	GIANT_PICTURES=$(CURDIR)/docs/images $(PY) -m pytest -q tests/docs/test_pictures.py \
		tests/tracking/test_sweep_view_browser.py tests/tracking/test_review_browser.py

bench: $(VENV_STAMP) ## performance measurements (print numbers, assert nothing)
	$(PY) benchmarks/crop_latency.py
	$(PY) benchmarks/runner_overhead.py
	$(PY) benchmarks/bootstrap_speed.py
	$(PY) benchmarks/fetch_throughput.py
	$(PY) benchmarks/storage.py
	$(PY) benchmarks/cache_billing.py
	$(PY) benchmarks/cost_tiers.py
	$(PY) benchmarks/batch_scale.py
	$(PY) benchmarks/conch_latency.py
	$(PY) benchmarks/report_memory.py

demo: $(VENV_STAMP) ## synthetic slides, random provider, a real sweep into MLflow; it ends with its table and plot
	@dir=multirun/demo/$$(date +%Y-%m-%d_%H-%M-%S); \
	$(PY) scripts/run_eval.py -m provider=random dataset=demo dataset.benchmark=demo_shapes,demo_count agent=giant,paper agent.max_steps=1,5 \
		hydra.sweep.dir=$$dir && \
	sweep=$$($(PY) -c "import json,sys; print(json.load(open(sys.argv[1]))['parent_run_id'])" $$dir/mlflow_sweep.json) && \
	echo "" && echo "Outputs: $$dir   MLflow sweep run: $$sweep" && \
	echo "Open the MLflow UI with: make ui   (it prints the address of the sweep's view once the UI answers)"

ui: $(VENV_STAMP) ## MLflow UI on 127.0.0.1 against the default store; prints its addresses once it answers
	@$(PY) -m giant.tracking.ui $${MLFLOW_TRACKING_URI:-sqlite:///$(CURDIR)/mlruns/mlflow.db} \
		$(CURDIR)/mlruns/artifacts 127.0.0.1 $${MLFLOW_PORT:-5000}

tables: $(VENV_STAMP) ## rebuild the paper's tables and plots from logged runs (TABLES_ARGS="--published ...")
	$(PY) scripts/make_tables.py $(TABLES_ARGS)

compare: $(VENV_STAMP) ## paired comparison of runs: make compare A=<job folder|run id> B=<...> [COMPARE_ARGS="C --out DIR"]
	@test -n "$(A)" -a -n "$(B)" || { echo "compare: pass A=<job folder or MLflow run id> B=<...>" >&2; exit 2; }
	$(PY) scripts/compare.py "$(A)" "$(B)" $(COMPARE_ARGS)

clean: ## remove caches and outputs (keeps .venv and mlruns)
	rm -rf outputs multirun site .pytest_cache .mypy_cache .ruff_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
