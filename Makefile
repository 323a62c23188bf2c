# The two commands a user needs: `make demo` and `make test`. Both create .venv on first use
# and re-install only when pyproject.toml changes (stamp files), so they are idempotent.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: demo test lint typecheck unit clean help

help:
	@echo "make demo   install trimtab into .venv and run it on the bundled sample fleet"
	@echo "make test   install trimtab with dev extras into .venv, then ruff, mypy and pytest"

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	@touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $@ $(VENV)/.installed

demo: $(VENV)/.installed
	$(BIN)/trimtab topology --inventory src/trimtab/data/sample_inventory.csv

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(VENV)/.installed-dev
	$(BIN)/mypy

unit: $(VENV)/.installed-dev
	$(BIN)/python -m pytest

test: lint typecheck unit

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis build src/*.egg-info
