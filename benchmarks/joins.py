"""Join pushdown benchmarks: TPC-H Q17, the lineitem scan for Q17's keys, a join-selectivity
sweep, and key-filter probe throughput and build time.

- ``q17``: the whole query. Spark ``local[2]`` with its default plan over ``spark.read.parquet``
  against Spark with lazyscan's semi-join pushdown (``lazyscan.spark.read(...,
  semi_join=(part, "p_partkey", "l_partkey"))`` for both lineitem scans: the key filter is
  built by a Spark job inside the timed region); DuckDB, Polars, DataFusion; lazyscan
  in-process (the filtered part scan, the key filter, the lineitem scan, then pyarrow for the
  aggregate and the join). Every engine's answer must be the same number.
- ``semi``: only the lineitem side: rows of lineitem whose ``l_partkey`` is a key of the
  filtered part (lazyscan: ``col("l_partkey").isin_keys(keys)``; the peers: ``IN (subquery)``
  or a semi join), each engine starting from the two files.
- ``sweep``: keys drawn from part so that 0.01 %-50 % of lineitem rows join; the key column
  dictionary-encoded (tpchgen-cli's file) and plain (a copy), 1 and 15 payload columns;
  lazyscan with the adaptive key filter against lazyscan's plain read of the same columns
  then Arrow's ``is_in`` on the keys (the no-pushdown baseline: the join filters after the
  read) and DuckDB's semi join.
- ``probe``: values probed per second per thread for each filter kind, and build time.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from benchmarks import THREADS
from benchmarks.engines import (
    Engine,
    EngineUnavailable,
    Query,
    _timed,
    datafusion_context,
    duckdb_connection,
    get_spark,
    settle_spark,
)

Q17_BRAND, Q17_CONTAINER = "Brand#23", "MED BOX"
PART_FILTER = f"p_brand = '{Q17_BRAND}' AND p_container = '{Q17_CONTAINER}'"
Q17_COLUMNS = ("l_partkey", "l_quantity", "l_extendedprice")
Q17_SQL = f"""
select sum(l_extendedprice) / 7.0 as avg_yearly
from lineitem, part
where p_partkey = l_partkey and p_brand = '{Q17_BRAND}' and p_container = '{Q17_CONTAINER}'
  and l_quantity < (select 0.2 * avg(l_quantity) from lineitem where l_partkey = p_partkey)
"""
SEMI_SQL = (
    "select l_partkey, l_quantity, l_extendedprice from {lineitem} "
    "where l_partkey in (select p_partkey from {part} where " + PART_FILTER + ")"
)


def _quote(path: str) -> str:
    return "'" + path.replace("'", "''") + "'"


def q17_queries(lineitem: Path, part: Path) -> list[Query]:
    paths = (str(lineitem), str(part))
    return [
        Query("Q17", paths, Q17_COLUMNS, PART_FILTER, group="q17", label="TPC-H Q17"),
        Query("Q17 lineitem semi join", paths, Q17_COLUMNS, PART_FILTER, group="semi",
              label="lineitem rows joining the filtered part"),
    ]


class JoinEngine(Engine):
    """Runs the ``q17`` (answer: one number, kept in :attr:`answers`) and ``semi`` queries."""

    def __init__(self) -> None:
        super().__init__()
        self.answers: dict[str, float] = {}

    def _run(self, query: Query) -> tuple[int, float]:
        lineitem, part = query.paths
        if query.group == "q17":
            value, seconds = _timed(lambda: self.q17(lineitem, part))
            self.answers[query.name] = round(float(value), 2)
            return 1, seconds
        rows, seconds = _timed(lambda: self.semi(lineitem, part))
        return rows, seconds

    def q17(self, lineitem: str, part: str) -> float:
        raise EngineUnavailable(f"{self.label} does not run Q17 here")

    def semi(self, lineitem: str, part: str) -> int:
        raise EngineUnavailable(f"{self.label} does not run the semi join here")


class DuckDBJoins(JoinEngine):
    name, label = "duckdb", "DuckDB"

    def setup(self) -> None:
        self.con: Any = duckdb_connection()

    def q17(self, lineitem: str, part: str) -> float:
        sql = Q17_SQL.replace("from lineitem, part", f"from read_parquet({_quote(lineitem)}) lineitem, "
                              f"read_parquet({_quote(part)}) part")
        sql = sql.replace("from lineitem where", f"from read_parquet({_quote(lineitem)}) where")
        rows = self.con.sql(sql).fetchall()
        return float((rows[0][0] if rows else None) or 0.0)

    def semi(self, lineitem: str, part: str) -> int:
        sql = SEMI_SQL.format(lineitem=f"read_parquet({_quote(lineitem)})", part=f"read_parquet({_quote(part)})")
        return int(self.con.sql(sql).to_arrow_table().num_rows)


class DataFusionJoins(JoinEngine):
    name, label = "datafusion", "DataFusion"

    def setup(self) -> None:
        self.ctx = datafusion_context(pushdown=True)
        self.registered: set[tuple[str, str]] = set()

    def _register(self, lineitem: str, part: str) -> None:
        if (lineitem, part) not in self.registered:
            for name in ("lineitem", "part"):
                self.ctx.deregister_table(name)
            self.ctx.register_parquet("lineitem", lineitem)
            self.ctx.register_parquet("part", part)
            self.registered = {(lineitem, part)}

    def q17(self, lineitem: str, part: str) -> float:
        self._register(lineitem, part)
        return float(self.ctx.sql(Q17_SQL).to_arrow_table().column(0)[0].as_py() or 0.0)

    def semi(self, lineitem: str, part: str) -> int:
        self._register(lineitem, part)
        return int(self.ctx.sql(SEMI_SQL.format(lineitem="lineitem", part="part")).to_arrow_table().num_rows)


class PolarsJoins(JoinEngine):
    name, label = "polars", "Polars"

    def setup(self) -> None:
        import polars as pl

        self.pl = pl

    def _frames(self, lineitem: str, part: str) -> tuple[Any, Any]:
        pl = self.pl
        keys = (pl.scan_parquet(part).filter((pl.col("p_brand") == Q17_BRAND) & (pl.col("p_container") == Q17_CONTAINER))
                .select("p_partkey"))
        li = pl.scan_parquet(lineitem).select(list(Q17_COLUMNS))
        return li, keys

    def q17(self, lineitem: str, part: str) -> float:
        pl = self.pl
        li, keys = self._frames(lineitem, part)
        joined = li.join(keys, left_on="l_partkey", right_on="p_partkey")
        avg = pl.scan_parquet(lineitem).group_by("l_partkey").agg((0.2 * pl.col("l_quantity").mean()).alias("lim"))
        out = (joined.join(avg, on="l_partkey").filter(pl.col("l_quantity") < pl.col("lim"))
               .select((pl.col("l_extendedprice").sum() / 7.0).alias("avg_yearly")).collect())
        return float(out[0, 0] or 0.0)

    def semi(self, lineitem: str, part: str) -> int:
        li, keys = self._frames(lineitem, part)
        return int(li.join(keys, left_on="l_partkey", right_on="p_partkey", how="semi").collect().height)


def _profile_entry(profile: Any) -> dict[str, Any]:
    """A lazyscan profile in a measurement: its summary line and counters."""
    return {"summary": profile.summary(), **dict(profile.counters)}


def lazyscan_keys(part: str) -> Any:
    import lazyscan

    table = lazyscan.scan(part, columns=["p_partkey"], where=PART_FILTER).to_table()
    return lazyscan.key_filter(table["p_partkey"])


def lazyscan_semi_table(lineitem: str, part: str) -> tuple[pa.Table, Any]:
    import lazyscan

    keys = lazyscan_keys(part)
    s = lazyscan.scan(lineitem, columns=list(Q17_COLUMNS), where=lazyscan.col("l_partkey").isin_keys(keys, adaptive=True),
                      threads=THREADS)
    return s.to_table(), s


def q17_from_semi(li: pa.Table) -> float:
    """Q17 over the lineitem rows of the filtered part's keys (all a part's rows are there)."""
    avg = li.group_by("l_partkey").aggregate([("l_quantity", "mean")])
    joined = li.join(avg, "l_partkey")
    quantity = joined["l_quantity"].cast(pa.float64())
    keep = pc.less(quantity, pc.multiply(joined["l_quantity_mean"], 0.2))
    total = pc.sum(joined.filter(keep)["l_extendedprice"].cast(pa.float64())).as_py() or 0.0
    return float(total) / 7.0


class LazyscanJoins(JoinEngine):
    name, label = "lazyscan", "lazyscan"

    def q17(self, lineitem: str, part: str) -> float:
        li, s = lazyscan_semi_table(lineitem, part)
        self.last_profile = _profile_entry(s.profile)
        return q17_from_semi(li)

    def semi(self, lineitem: str, part: str) -> int:
        li, s = lazyscan_semi_table(lineitem, part)
        self.last_profile = _profile_entry(s.profile)
        return li.num_rows


class SparkJoins(JoinEngine):
    """Q17 in Spark SQL over views: ``spark.read.parquet`` (Spark's default plan), or lineitem
    through ``lazyscan.spark.read`` with the semi join pushed (filter built in the timed run)."""

    def __init__(self, lazy: bool) -> None:
        super().__init__()
        self.lazy = lazy
        self.name = "spark-lazyscan" if lazy else "spark-parquet"
        self.label = "Spark + lazyscan semi join" if lazy else "Spark default"

    def setup(self) -> None:
        self.spark = get_spark()
        import lazyscan.spark

        lazyscan.spark.register(self.spark)

    def settle(self) -> None:
        settle_spark(getattr(self, "spark", None))

    def _views(self, lineitem: str, part: str) -> None:
        import lazyscan.spark

        spark = self.spark
        part_df = spark.read.parquet(part)
        part_df.createOrReplaceTempView("part")
        if self.lazy:
            dim = part_df.where(PART_FILTER)
            li = lazyscan.spark.read(spark, lineitem, list(Q17_COLUMNS), semi_join=(dim, "p_partkey", "l_partkey"))
        else:
            li = spark.read.parquet(lineitem)
        li.createOrReplaceTempView("lineitem")

    def q17(self, lineitem: str, part: str) -> float:
        self._views(lineitem, part)
        value = self.spark.sql(Q17_SQL).collect()[0][0] or 0.0
        if self.lazy:
            import lazyscan.spark

            self.last_profile = _profile_entry(lazyscan.spark.last_profile())
        return float(value)

    def semi(self, lineitem: str, part: str) -> int:
        self._views(lineitem, part)
        sql = SEMI_SQL.format(lineitem="lineitem", part="part")
        return len(self.spark.sql(sql).collect())


def join_engines(spark: bool) -> list[JoinEngine]:
    engines: list[JoinEngine] = [LazyscanJoins(), DuckDBJoins(), PolarsJoins(), DataFusionJoins()]
    if spark:
        engines += [SparkJoins(False), SparkJoins(True)]
    return engines


# ---- the sweep --------------------------------------------------------------------------

SWEEP_FRACTIONS = (0.0001, 0.001, 0.01, 0.1, 0.2, 0.5)
SWEEP_QUICK_FRACTIONS = (0.001, 0.5)


def sweep_keys(part: str, fraction: float) -> np.ndarray:
    """Part keys picked by a fixed hash so that about ``fraction`` of them (and of lineitem's
    rows, which spread evenly over parts) join."""
    keys = pq.read_table(part, columns=["p_partkey"])["p_partkey"].to_numpy()
    h = (keys.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(40)
    return np.sort(keys[h < np.uint64(int(fraction * (1 << 24)))])


def plain_key_copy(lineitem: Path) -> Path:
    """lineitem with ``l_partkey`` PLAIN-encoded (other columns as tpchgen-cli writes them),
    written once beside the original."""
    out = lineitem.with_name(lineitem.stem + "-plain-partkey.parquet")
    if out.exists():
        return out
    pf = pq.ParquetFile(lineitem)
    names = pf.schema_arrow.names
    dictionary = [n for n in names if n != "l_partkey"]
    tmp = out.with_suffix(".tmp")
    with pq.ParquetWriter(tmp, pf.schema_arrow, compression="snappy", use_dictionary=dictionary) as w:
        for i in range(pf.num_row_groups):
            w.write_table(pf.read_row_group(i))
    tmp.rename(out)
    return out


class SweepEngine(Engine):
    """``query.where`` names the key set (``keys:<fraction>``); the engine reads it from
    :attr:`keys`."""

    def __init__(self, name: str, label: str, keys: dict[float, np.ndarray]) -> None:
        super().__init__()
        self.name, self.label, self.keys = name, label, keys

    def _run(self, query: Query) -> tuple[int, float]:
        fraction = float(query.x)
        return _timed_rows(lambda: self.read(query.paths[0], list(query.columns or ()), self.keys[fraction]))

    def read(self, path: str, columns: list[str], keys: np.ndarray) -> int:
        import lazyscan

        if self.name == "lazyscan-plain":
            table = lazyscan.scan(path, columns=columns, threads=THREADS).to_table()
            return int(pc.sum(pc.is_in(table["l_partkey"], value_set=pa.array(keys))).as_py() or 0)
        kf = lazyscan.key_filter(keys)
        s = lazyscan.scan(path, columns=columns, where=lazyscan.col("l_partkey").isin_keys(kf, adaptive=True),
                          threads=THREADS)
        table = s.to_table()
        # the join after the scan: rows an adaptive filter let through are removed here
        rows = int(pc.sum(pc.is_in(table["l_partkey"], value_set=pa.array(keys))).as_py() or 0)
        switched = [k for k, v in s.profile.decisions.items() if "switched_off" in str(v)]
        self.last_profile = {"switched_off": bool(switched), "key_probes_dictionary": s.profile["key_probes_dictionary"],
                             "key_probes_values": s.profile["key_probes_values"]}
        return rows


class DuckDBSweep(SweepEngine):
    def setup(self) -> None:
        self.con = duckdb_connection()

    def read(self, path: str, columns: list[str], keys: np.ndarray) -> int:
        key_table = pa.table({"k": keys})  # noqa: F841 - DuckDB reads it by name
        cols = ", ".join(columns)
        sql = f"select {cols} from read_parquet({_quote(path)}) where l_partkey in (select k from key_table)"
        return int(self.con.sql(sql).to_arrow_table().num_rows)


def _timed_rows(fn: Any) -> tuple[int, float]:
    rows, seconds = _timed(fn)
    return int(rows), seconds


# ---- probe throughput -----------------------------------------------------------------------


def probe_throughput(reps: int = 5, n: int = 4_000_000) -> dict[str, Any]:
    """Values probed per second on one thread, per filter kind, and build time per key count."""
    import lazyscan

    rng = np.random.default_rng(7)
    ints = pa.array(rng.integers(0, 1 << 40, n))
    strings = pa.array([f"k{v:012d}" for v in rng.integers(0, 10**12, n // 8)])
    cases: list[tuple[str, Any, pa.Array]] = []
    for count in (200, 20_000, 1_000_000):
        keys = rng.integers(0, 1 << 40, count)
        cases.append((f"int hash {count:,}" if count <= 100_000 else f"int bloom {count:,}", lazyscan.key_filter(keys), ints))
    dense = rng.integers(0, 1 << 20, 100_000)
    cases.append(("int bitmap 100,000 (dense)", lazyscan.key_filter(dense), pa.array(rng.integers(0, 1 << 20, n))))
    for count in (2_000, 1_000_000):
        keys = pa.array([f"k{v:012d}" for v in rng.integers(0, 10**12, count)])
        label = f"string hash {count:,}" if count <= 100_000 else f"string bloom {count:,}"
        cases.append((label, lazyscan.key_filter(keys), strings))
    out: dict[str, Any] = {"probe": {}, "build": {}}
    for label, kf, values in cases:
        kf.probe(values[:1000])
        times = []
        for _ in range(reps):
            t = time.perf_counter()
            kf.probe(values)
            times.append(time.perf_counter() - t)
        best = min(times)
        out["probe"][label] = {
            "kind": kf.kind, "bytes": kf.nbytes, "values": len(values),
            "values_per_s": len(values) / best, "ns_per_value": best / len(values) * 1e9,
            "spread": [round(min(times), 5), round(max(times), 5)],
        }
    for count in (1_000, 100_000, 1_000_000, 5_000_000):
        keys = pa.array(rng.integers(0, 1 << 40, count))
        lazyscan.key_filter(keys[:10])
        times = []
        for _ in range(max(1, reps // 2)):
            t = time.perf_counter()
            kf = lazyscan.key_filter(keys)
            times.append(time.perf_counter() - t)
        out["build"][f"{count:,} int keys"] = {
            "kind": kf.kind, "seconds": statistics.median(times), "bytes": len(kf.to_bytes()),
            "measured_fpp": kf.measured_fpp,
        }
    return out
