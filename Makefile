# lazyscan: `make demo` runs the main job, `make test` runs the tests.
# Both create (or reuse) the virtual environment .venv in this checkout.

PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
SF ?= 1
STAMP := $(VENV)/.installed
# more test environments: PySpark 3.5 and 3.4 (lazyscan runs there through mapInArrow only)
VENV35 := .venv-spark35
STAMP35 := $(VENV35)/.installed
VENV34 := .venv-spark34
STAMP34 := $(VENV34)/.installed
OLD_SPARK_TESTS := tests/test_spark_routes.py
# the transparent mode's suite on the older supported Spark 4 releases (the main suite has 4.3)
VENV41 := .venv-spark41
STAMP41 := $(VENV41)/.installed
VENV42 := .venv-spark42
STAMP42 := $(VENV42)/.installed
EXTENSION_TESTS := tests/test_spark_extension.py tests/test_spark_extension_choice.py \
	tests/test_spark_extension_joins.py tests/test_spark_extension_object_store.py \
	tests/test_spark_extension_queries.py
# pytest-xdist workers for the main suite: whole modules per worker, so each module-scoped
# server or cluster starts once
TEST_WORKERS ?= 2

# kernels compiled ahead into the package (lazyscan warmup --ship; it does nothing when they
# were built from the current sources): the demo's and the tests' processes load them instead
# of each compiling its own

.PHONY: demo test lint typecheck unit unit-spark35 unit-spark34 unit-spark41 unit-spark42 unit-old-spark unit-other-spark4 bench java jdk clean kernels

# constraints.txt: the versions the environment is made of (pip resolves at once, no backtracking)
$(STAMP): pyproject.toml constraints.txt
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "lazyscan needs $(PYTHON) (set PYTHON=...)"; exit 1; }
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e '.[spark,bench,dev]'
	@touch $(STAMP)

$(STAMP35): pyproject.toml
	@test -x $(VENV35)/bin/python || $(PYTHON) -m venv $(VENV35)
	$(VENV35)/bin/python -m pip install --quiet --upgrade pip
	$(VENV35)/bin/python -m pip install --quiet -e '.[spark35]'
	@touch $(STAMP35)

# the main environment's pins, with another PySpark 4
$(STAMP41): PYSPARK_4 := 4.1.4
$(STAMP42): PYSPARK_4 := 4.2.1
$(STAMP41) $(STAMP42): pyproject.toml constraints.txt
	@test -x $(@D)/bin/python || $(PYTHON) -m venv $(@D)
	$(@D)/bin/python -m pip install --quiet --upgrade pip
	grep -v '^pyspark==' constraints.txt > $(@D)/constraints.txt
	$(@D)/bin/python -m pip install --quiet -c $(@D)/constraints.txt -e '.[spark,bench,dev]' \
		'pyspark[connect]==$(PYSPARK_4)'
	@touch $@

$(STAMP34): pyproject.toml
	@test -x $(VENV34)/bin/python || $(PYTHON) -m venv $(VENV34)
	$(VENV34)/bin/python -m pip install --quiet --upgrade pip
	$(VENV34)/bin/python -m pip install --quiet -e '.[spark34]'
	@touch $(STAMP34)

java:
	@bash scripts/ensure-java.sh

# the tests also compile the Spark extension's Catalyst rule (javac)
jdk:
	@bash scripts/ensure-java.sh --jdk

kernels: $(STAMP)
	$(VENV)/bin/lazyscan warmup --ship

demo: $(STAMP) kernels java
	$(PY) -m benchmarks demo --sf $(SF)

lint: $(STAMP)
	$(VENV)/bin/ruff check lazyscan tests benchmarks

typecheck: $(STAMP)
	$(VENV)/bin/mypy

unit: $(STAMP) kernels jdk
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile

unit-spark35: $(STAMP35) kernels java
	@echo "== the Spark tests on PySpark 3.5"
	$(VENV35)/bin/python -m pytest -q -p no:cacheprovider $(OLD_SPARK_TESTS)

unit-spark34: $(STAMP34) kernels java
	@echo "== the Spark tests on PySpark 3.4"
	$(VENV34)/bin/python -m pytest -q -p no:cacheprovider $(OLD_SPARK_TESTS)

unit-spark41: $(STAMP41) kernels jdk
	@echo "== the transparent mode's tests on PySpark 4.1"
	$(VENV41)/bin/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile -p no:cacheprovider $(EXTENSION_TESTS)

unit-spark42: $(STAMP42) kernels jdk
	@echo "== the transparent mode's tests on PySpark 4.2"
	$(VENV42)/bin/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile -p no:cacheprovider $(EXTENSION_TESTS)

# the two older Spark suites run side by side, each one's output printed when it ends
unit-old-spark:
	$(MAKE) --no-print-directory -j2 --output-sync=target unit-spark35 unit-spark34

# the transparent mode's suite on PySpark 4.1 and 4.2, one after the other (each uses both cores)
unit-other-spark4: unit-spark41 unit-spark42

test: lint typecheck unit unit-old-spark unit-other-spark4

bench: $(STAMP) kernels java
	$(PY) -m benchmarks run all --sf $(SF)

clean:
	rm -rf $(VENV) $(VENV35) $(VENV34) .pytest_cache .mypy_cache .ruff_cache lazyscan/_kernels
