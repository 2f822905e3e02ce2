# lazyscan: `make demo` runs the main job, `make test` runs the tests.
# Both create (or reuse) the virtual environment .venv in this checkout.

PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
SF ?= 1
STAMP := $(VENV)/.installed
# the second test environment: PySpark 3.5 (lazyscan runs there through mapInArrow only)
VENV35 := .venv-spark35
STAMP35 := $(VENV35)/.installed
SPARK35_TESTS := tests/test_spark_routes.py

.PHONY: demo test lint typecheck unit unit-spark35 bench java clean

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "lazyscan needs $(PYTHON) (set PYTHON=...)"; exit 1; }
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[spark,bench,dev]'
	@touch $(STAMP)

$(STAMP35): pyproject.toml
	@test -x $(VENV35)/bin/python || $(PYTHON) -m venv $(VENV35)
	$(VENV35)/bin/python -m pip install --quiet --upgrade pip
	$(VENV35)/bin/python -m pip install --quiet -e '.[spark35]'
	@touch $(STAMP35)

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

unit-spark35: $(STAMP35) java
	$(VENV35)/bin/python -m pytest -q -p no:cacheprovider $(SPARK35_TESTS)

test: lint typecheck unit unit-spark35

bench: $(STAMP) java
	$(PY) -m benchmarks run all --sf $(SF)

clean:
	rm -rf $(VENV) $(VENV35) .pytest_cache .mypy_cache .ruff_cache
