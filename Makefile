# Every target creates or refreshes the virtualenv it needs, so a fresh clone needs only `make`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip
PIP_FLAGS := --quiet --disable-pip-version-check

.PHONY: run test lint unit stress bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Stamps: reinstall when pyproject.toml changes.
$(VENV)/.core-installed: pyproject.toml | $(BIN)/python
	$(PIP) install $(PIP_FLAGS) -e .
	touch $@

$(VENV)/.test-installed: pyproject.toml | $(BIN)/python
	$(PIP) install $(PIP_FLAGS) -e '.[test]'
	touch $@ $(VENV)/.core-installed

run: $(VENV)/.core-installed
	$(BIN)/rmq standalone

lint: $(VENV)/.test-installed
	$(BIN)/ruff check rmq tests bench
	$(BIN)/ruff format --check rmq tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports

unit: $(VENV)/.test-installed
	$(BIN)/python -m pytest -q -m "not stress"

test: lint unit

stress: $(VENV)/.test-installed
	RMQ_STRESS=1 $(BIN)/python -m pytest -q -m stress

bench: $(VENV)/.core-installed
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
