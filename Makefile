# Two commands on a fresh machine with Python 3.11: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test bench lint format clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Reinstall when the dependency list changes.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $@ $(VENV)/.installed

demo: $(VENV)/.installed
	$(BIN)/python examples/quickstart.py

# The memory store tests run against a real PostgreSQL server that they start themselves,
# and the dashboard's tests drive the system Chromium (Debian's package) through Playwright.
test: $(VENV)/.installed-dev
	./scripts/ensure-postgres
	./scripts/ensure-chromium
	$(BIN)/python -m pytest --cov=toolctx --cov=toolctx_langchain --cov=toolctx_openai_agents --cov=toolctx_pytest --cov-report=term --cov-fail-under=90

$(VENV)/.installed-bench: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[dev,bench]"
	touch $@ $(VENV)/.installed

# Recorded agent sessions for bench/replay.py (a JSONL file; see docs/benchmarks.md).
TRACES ?= ../shared/traces/dev.jsonl

# Figures for docs/benchmarks.md: per-call cost, stage breakdown, memory, selection,
# adapters, and the tiered memory on SQLite and a PostgreSQL server it starts.
bench: $(VENV)/.installed-bench
	./scripts/ensure-postgres
	$(BIN)/python bench/core.py
	$(BIN)/python bench/breakdown.py
	$(BIN)/python bench/redaction.py
	$(BIN)/python bench/redaction_false_positives.py
	$(BIN)/python bench/memory.py
	$(BIN)/python bench/selection_eval.py
	$(BIN)/python bench/selection_speed.py
	$(BIN)/python bench/adapters.py
	if [ -f "$(TRACES)" ]; then $(BIN)/python bench/replay.py --traces "$(TRACES)" \
		&& $(BIN)/python bench/cold_cache.py --traces "$(TRACES)" \
		&& $(BIN)/python bench/hook_parts.py --traces "$(TRACES)" \
		&& $(BIN)/python bench/multiturn.py --traces "$(TRACES)" \
		&& $(BIN)/python bench/multiturn.py --traces "$(TRACES)" --stress \
		&& $(BIN)/python bench/fresh_eval.py "$(TRACES)" \
		&& $(BIN)/python bench/fresh_eval.py "$(TRACES)" --timing; \
	else echo "bench/replay.py skipped: no recorded sessions at TRACES=$(TRACES)"; fi
	$(BIN)/python bench/tiered.py

$(VENV)/.installed-docs: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[docs,langchain,openai-agents,server]"
	touch $@ $(VENV)/.installed

# The documentation site, into docs/_build/html: the API reference from the docstrings, and every
# cross-reference that does not resolve is an error (tests/test_docs.py builds it the same way).
.PHONY: docs
docs: $(VENV)/.installed-docs
	$(BIN)/python -m sphinx -b html -n -W --keep-going -E docs docs/_build/html

lint: $(VENV)/.installed-dev
	$(BIN)/python -m ruff check .
	$(BIN)/python -m ruff format --check .
	$(BIN)/python -m mypy

format: $(VENV)/.installed-dev
	$(BIN)/python -m ruff format .
	$(BIN)/python -m ruff check --fix .

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis .coverage htmlcov
