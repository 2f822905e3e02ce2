"""Benchmark suite and demo driver for lazyscan.

Parts:

- `benchmarks.data`: TPC-H data from tpchgen-cli and seeded synthetic Parquet files, cached under
  `data/`; the query value of the seed question.
- `benchmarks.engines`: one runner per engine (Spark's own reader, the lazyscan Spark source,
  lazyscan, DuckDB, Polars, DataFusion with and without filter pushdown, pyarrow) and the
  measurement loop (warm-up, median of repetitions, row-count agreement).
- `benchmarks.scenarios`: the scenarios (seed, selectivity, width, encodings, skipping, reader; by
  name only: orc, s3, checksums, coldstart, tables, extension);
- `benchmarks.coldstart`: a new process's import, first and second query with an empty numba cache,
  with one present, with shipped kernels, two processes on one cache, and a new Spark application
  (issue 36's targets).
- `benchmarks.tables_bench`: TPC-H lineitem as a Delta and an Iceberg table with 1 % of rows
  deleted, against Polars, deltalake, pyiceberg and Spark; planning 1,000 files.
- `benchmarks.extension_bench`: Spark's transparent mode on and off, run by run: the 22 TPC-H
  queries and the seed pair through plain `spark.read.parquet(...).where(...)`.
- `benchmarks.tpch_queries`: the 22 TPC-H query texts (validation parameters, Q11 per scale
  factor) and their Parquet tables written by tpchgen-cli, shared with the Spark tests.
- `benchmarks.report`: JSON, markdown and PNG reports; the README headline table.
- `benchmarks.demo`: the product demo.

Run as `python -m benchmarks demo` or `python -m benchmarks run all`.
"""

from __future__ import annotations

import os

THREADS = 2
"""Threads given to every engine."""

os.environ.setdefault("POLARS_MAX_THREADS", str(THREADS))
