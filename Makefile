# lazyscan: `make demo` runs the main job, `make test` runs the tests.
# Both create (or reuse) the virtual environment .venv in this checkout.

PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
SF ?= 1
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck unit bench java clean

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "lazyscan needs $(PYTHON) (set PYTHON=...)"; exit 1; }
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[spark,bench,dev]'
	@touch $(STAMP)

java:
	@bash scripts/ensure-java.sh

demo: $(STAMP) java
	$(PY) -m benchmarks demo --sf $(SF)

lint: $(STAMP)
	$(VENV)/bin/ruff check lazyscan tests benchmarks

typecheck: $(STAMP)
	$(VENV)/bin/mypy

unit: $(STAMP) java
	$(PY) -m pytest -q

test: lint typecheck unit

bench: $(STAMP) java
	$(PY) -m benchmarks run all --sf $(SF)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
