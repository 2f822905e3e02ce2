"""The extension benchmark (benchmarks/extension_bench.py): its ratios and the targets of issue 38
on made-up results, the row digest and the plan's readers, the Python workers' peak memory on a
process tree of this test, and the scenario end to end at TPC-H SF 0.01 (TPC-H Q6 and
the seed pair, generated in a temporary folder) with the rows agreeing on and off."""

from __future__ import annotations

import decimal
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from benchmarks import __main__ as cli
from benchmarks import extension_bench as eb
from benchmarks.engines import Measurement, Query, QueryResult

REPO = Path(__file__).resolve().parents[1]


def _result(name: str, on: list[float] | None, off: list[float] | None, read: list[float] | None = None,
            agree: bool = True) -> QueryResult:
    ms = []
    for mode, times in (("on", on), ("off", off), ("read", read)):
        if times is None:
            continue
        ms.append(Measurement(engine=f"extension-{mode}", label=mode, status="ok" if times else "error: failed",
                              times=times, seconds=sorted(times)[len(times) // 2] if times else None))
    return QueryResult(Query(name, ("lineitem",)), ms, agree=agree)


def test_ratio_range_is_median_ratio_with_extremes() -> None:
    r = eb.ratio_range([1.0, 2.0, 3.0], [2.0, 4.0])
    assert r == pytest.approx({"median": 2.0 / 3.0, "low": 1.0 / 4.0, "high": 3.0 / 2.0})
    assert eb.ratio_range([], [1.0]) is None


def test_targets_met() -> None:
    results = [_result("Q1", [1.0, 1.04, 1.02], [1.0, 1.0, 1.0])]
    results += [_result(f"Q{n}", [0.5, 0.6, 0.55], [1.0, 1.1, 0.9]) for n in eb.SELECTIVE]
    readers = {f"Q{n}": {"lazyscan": 1, "parquet": 0} for n in eb.SELECTIVE} | {"Q1": {"lazyscan": 0, "parquet": 1}}
    s = eb.tpch_summary(results, readers, {r.query.name: {"lazyscan": 0, "parquet": 1} for r in results})
    t = s["targets"]
    assert t["each_at_most"]["met"] and t["total_no_slower"]["met"] and t["selective_faster"]["met"]
    assert s["queries"]["Q1"]["reader"] == "spark" and s["queries"]["Q6"]["reader"] == "lazyscan"
    assert s["queries"]["Q6"]["off_lazyscan_scans"] == 0
    assert s["total_on_s"] == pytest.approx(1.02 + 7 * 0.55)
    assert s["total_off_s"] == pytest.approx(8.0)
    assert s["lazyscan_queries"] == [f"Q{n}" for n in eb.SELECTIVE]


def test_targets_missed_name_the_queries() -> None:
    results = [
        _result("Q1", [1.2, 1.1, 1.3], [1.0, 1.0, 1.0]),  # 1.2x: over 1.05
        _result("Q6", [1.0, 1.0, 1.0], [1.0, 1.0, 1.0]),  # selective, not faster
        _result("Q12", [0.2, 0.2, 0.2], [1.0, 1.0, 1.0]),
    ]
    s = eb.tpch_summary(results, {})
    t = s["targets"]
    assert not t["each_at_most"]["met"] and t["each_at_most"]["over"] == ["Q1"]
    assert not t["selective_faster"]["met"] and t["selective_faster"]["not_faster"] == ["Q6"]
    assert t["selective_faster"]["queries"] == ["Q6", "Q12"]
    # 1.2 + 1.0 + 0.2 on against 3.0 off: the total is no slower
    assert t["total_no_slower"]["met"] and s["total_ratio"] == pytest.approx(2.4 / 3.0)
    assert s["queries"]["Q1"]["ratio"] == pytest.approx({"median": 1.2, "low": 1.1, "high": 1.3})


def test_queries_that_keep_spark_hold_to_the_plan_and_the_planning_slack() -> None:
    """A query that keeps Spark's reader must run the plan of off and plan at most
    ``PLANNING_SLACK_S`` longer, whatever the machine's spread does to its run time."""
    results = [_result(q, [1.2, 1.0, 1.1], [1.0, 1.0, 1.0]) for q in ("Q2", "Q9", "Q22", "Q6")]
    readers = {q: {"lazyscan": 0, "parquet": 1} for q in ("Q2", "Q9", "Q22")} | {"Q6": {"lazyscan": 1}}
    plans = ({"Q2": "p2", "Q9": "p9", "Q22": "other", "Q6": "l6"}, {"Q2": "p2", "Q9": "p9", "Q22": "p22", "Q6": "p6"})
    planning = {"Q2": {"on": [0.07, 0.08, 0.06], "off": [0.05, 0.05, 0.06]},
                "Q9": {"on": [1.1, 1.0, 1.2], "off": [0.05, 0.06, 0.05]},
                "Q22": {"on": [0.04], "off": [0.04]},
                "Q6": {"on": [0.5], "off": [0.05]}}  # lazyscan's scan: its planning is part of its gain
    s = eb.tpch_summary(results, readers, None, plans, planning)
    assert s["queries"]["Q2"]["planning_delta_s"] == pytest.approx(0.02)
    kept = s["targets"]["kept_as_off"]
    assert kept["queries"] == ["Q2", "Q9", "Q22"]
    assert kept["over"] == ["Q9", "Q22"] and kept["met"] is False  # Q9: planning; Q22: another plan
    text = eb.extension_markdown({"derived": {"tpch": s}})
    assert "| 0.070 / 0.050 |" in text
    assert "the 3 queries that keep Spark's reader" in text and "**not met**: not so for Q9, Q22" in text
    planning["Q9"]["on"] = [0.06]
    plans[0]["Q22"] = "p22"
    assert eb.tpch_summary(results, readers, None, plans, planning)["targets"]["kept_as_off"]["met"] is True
    # no planning measured: the target is not met (not known)
    assert eb.tpch_summary(results, readers, None, plans)["targets"]["kept_as_off"]["met"] is False


def test_plan_digest_leaves_ids_out_and_keeps_operators() -> None:
    """Of an adaptive plan the initial plan counts: its final plan changes from run to run."""
    plan = ("*(2) HashAggregate(keys=[a#12L], functions=[sum(b#13)])\n"
            "+- Exchange hashpartitioning(a#12L, 2), ENSURE_REQUIREMENTS, [plan_id=41]\n")
    renumbered = plan.replace("#12L", "#99L").replace("#13", "#7").replace("plan_id=41", "plan_id=5").replace("(2)", "(7)")
    assert eb.plan_digest(plan) == eb.plan_digest(renumbered)
    assert eb.plan_digest(plan) != eb.plan_digest(plan.replace("sum(b#13)", "max(b#13)"))
    adaptive = "AdaptiveSparkPlan isFinalPlan=true\n+- ResultQueryStage 13\n== Initial Plan ==\n" + plan
    assert eb.plan_digest(adaptive) == eb.plan_digest(adaptive.replace("Stage 13", "Stage 14")) == eb.plan_digest(plan)


def test_queries_over_the_limit_with_the_plan_of_off_are_named_apart() -> None:
    results = [_result("Q2", [1.2, 1.2, 1.2], [1.0, 1.0, 1.0]), _result("Q6", [1.2, 1.2, 1.2], [1.0, 1.0, 1.0]),
               _result("Q9", [1.0, 1.0, 1.0], [1.0, 1.0, 1.0])]
    plans = ({"Q2": "p2", "Q6": "lazyscan p6"}, {"Q2": "p2", "Q6": "p6", "Q9": "p9"})
    s = eb.tpch_summary(results, {}, None, plans)
    assert [s["queries"][q]["plan_as_off"] for q in ("Q2", "Q6", "Q9")] == [True, False, None]
    over = s["targets"]["each_at_most"]
    assert over["over"] == ["Q2", "Q6"] and over["over_with_plan_as_off"] == ["Q2"]
    text = eb.extension_markdown({"derived": {"tpch": s}})
    assert "over it Q2, Q6 (Q2: the same executed plan as off" in text


def test_a_failed_query_fails_every_target() -> None:
    results = [_result("Q6", [], [1.0]), _result("Q1", [0.5], [1.0])]
    s = eb.tpch_summary(results, {})
    assert s["queries"]["Q6"]["ratio"] is None
    # no run with the extension on finished: neither the reader nor the rows are known
    assert s["queries"]["Q6"]["reader"] is None and s["queries"]["Q6"]["rows_agree"] is None
    assert s["rows_agree"]
    assert not any(t["met"] for t in s["targets"].values())
    assert s["targets"]["selective_faster"]["not_faster"] == ["Q6"]


def test_seed_factors_and_memory() -> None:
    results = [_result("Q-A", [1.0, 1.2, 0.8], [10.0, 9.0, 11.0], [2.0, 2.0, 2.0], agree=False)]
    memory = {"Q-A": {"extension-on": {"max_worker_peak_rss_bytes": 300_000_000, "max_worker_growth_bytes": 5},
                      "extension-read": {"max_worker_peak_rss_bytes": 400_000_000, "max_worker_growth_bytes": 7}}}
    s = eb.seed_summary(results, memory)["Q-A"]
    assert s["factor_on"] == pytest.approx({"median": 10.0, "low": 9.0 / 1.2, "high": 11.0 / 0.8})
    assert s["factor_read"]["median"] == pytest.approx(5.0)
    assert s["reaches_read"] is True
    assert s["max_worker_peak_rss_bytes"] == {"extension-on": 300_000_000, "extension-read": 400_000_000}
    assert s["max_worker_growth_bytes"]["extension-read"] == 7
    assert s["rows_agree"] is False
    assert s["floor_s"] is None and s["factor_floor"] is None  # no build times given
    slower = eb.seed_summary([_result("Q-B", [4.0], [8.0], [2.0])], {})["Q-B"]
    assert slower["reaches_read"] is False


def test_seed_floor_adds_spark_read_parquet_to_read() -> None:
    """The extension pays ``spark.read.parquet``'s build on top of ``read``'s work: the floor."""
    results = [_result("Q-A", [1.0, 1.2, 0.8], [10.0, 9.0, 11.0], [0.7, 0.8, 0.9])]
    built = {"extension-on": {"Q-A": [0.1, 0.3, 0.2]}, "extension-read": {"Q-A": [0.5, 0.5, 0.5]}}
    s = eb.seed_summary(results, {}, built)["Q-A"]
    assert s["built_on_s"] == pytest.approx(0.2)
    assert s["floor_s"] == pytest.approx(0.8 + 0.2)
    assert s["factor_floor"] == pytest.approx(10.0 / 1.0)
    text = eb.extension_markdown({"derived": {"seed": {"Q-A": s}}})
    assert "| 1.00 (0.200) | 10.00x |" in text


def test_rows_digest_ignores_order_and_summation_noise() -> None:
    a = [(1, "x", 0.1 + 0.2, decimal.Decimal("1.50")), (2, None, 1.0, decimal.Decimal("2"))]
    b = [(2, None, 1.0, decimal.Decimal("2.00")), (1, "x", 0.3, decimal.Decimal("1.5"))]
    assert eb.rows_digest(a) == eb.rows_digest(b)
    assert eb.rows_digest(a) != eb.rows_digest(a[:1])
    assert eb.rows_digest([(1, "x")]) != eb.rows_digest([(1, "y")])
    assert eb.rows_digest([(1.0,)]) != eb.rows_digest([(1.001,)])


def test_check_rows_marks_different_digests() -> None:
    on, off = eb.ExtensionEngine("on"), eb.ExtensionEngine("off")
    same, differ = _result("Q1", [1.0], [1.0]), _result("Q2", [1.0], [1.0])
    on.digests, off.digests = {"Q1": "a", "Q2": "b"}, {"Q1": "a", "Q2": "c"}
    eb.check_rows([same, differ], [on, off])
    assert same.agree and not differ.agree and "ROWS DIFFER" in differ.verdict


def test_readers_in_plan_counts_the_final_plan() -> None:
    plan = textwrap.dedent(
        """\
        AdaptiveSparkPlan isFinalPlan=true
        +- == Final Plan ==
           HashAggregate
           +- BroadcastHashJoin
              :- BatchScan lazyscan(where: `l_shipdate` >= 1994-01-01, columns: l_partkey)[l_partkey#1]
              +- FileScan parquet [p_partkey#2,p_type#3] Batched: true
        +- == Initial Plan ==
           BatchScan lazyscan(where: `l_shipdate` >= 1994-01-01, columns: l_partkey)[l_partkey#1]
           +- FileScan parquet [p_partkey#2,p_type#3]
        """
    )
    assert eb.readers_in_plan(plan) == {"lazyscan": 1, "parquet": 1}
    assert eb.readers_in_plan("*(1) Scan parquet default.t [a#1]") == {"lazyscan": 0, "parquet": 1}


def test_tables_each_query_reads() -> None:
    queries = {q.name: q for q in eb.tpch_queries(1, (6, 14, 9))}
    assert queries["Q6"].paths == ("lineitem",)
    assert set(queries["Q14"].paths) == {"part", "lineitem"}
    assert set(queries["Q9"].paths) == {"lineitem", "orders", "part", "partsupp", "supplier", "nation"}
    assert len(eb.tpch_queries(1)) == 22
    assert eb.tpch_queries(1, []) == []


def test_report_names_missed_targets(tmp_path: Path) -> None:
    results = [_result("Q6", [1.2, 1.2, 1.2], [1.0, 1.0, 1.0])]
    seed = [_result("Q-A", [1.0], [10.0], [2.0])]
    scenario = {
        "name": "extension", "title": "t", "description": "", "status": "ok", "seconds": 12.0,
        "queries": [r.to_dict() for r in [*results, *seed]],
        "derived": {"tpch": eb.tpch_summary(results, {"Q6": {"lazyscan": 2, "parquet": 0}}),
                    "seed": eb.seed_summary(seed, {}), "part_seconds": {"tpch": 8.0, "seed": 4.0}},
    }
    text = eb.extension_markdown(scenario)
    assert "| Q6 | lazyscan (2 / 0) | n/a | 1.20 | 1.00 | 1.20 (1.20–1.20) | n/a | yes |" in text
    assert "**not met**: over it Q6" in text and "not faster Q6" in text
    assert "| Q-A | 10.0 | 1.00 | 2.00 | 10.00x (10.00–10.00) | 5.00x (5.00–5.00) | yes | n/a | n/a |" in text
    doc = {"date": "2026-11-27T09:00:00+00:00", "scenarios": {"extension": scenario}}
    paths = eb.write_reports(doc, tmp_path, 1.0)
    assert paths["json"].name == "extension-sf1-20261127T090000Z.json"
    assert paths["markdown"].name == "extension-sf1-20261127T090000Z.md"
    assert "### TPC-H" in paths["markdown"].read_text()
    seed_only = {**scenario, "derived": {**scenario["derived"], "tpch": eb.tpch_summary([], {})}}
    text = eb.extension_markdown(seed_only)
    assert "### TPC-H" not in text and "total no slower" not in text and "| Q-A | 10.0 |" in text


def test_the_command_line_knows_the_scenario() -> None:
    args = cli.build_parser().parse_args(["run", "extension", "--sf", "1", "--reps", "3", "--queries", "6,seed"])
    assert args.scenario == "extension" and args.sf == 1 and args.reps == 3 and args.queries == "6,seed"


def test_query_selection() -> None:
    assert eb.select_queries(None) == (None, True)
    assert eb.select_queries("6, Q12-14,seed") == ([6, 12, 13, 14], True)
    assert eb.select_queries("seed") == ([], True)
    assert eb.select_queries("1-3,2") == ([1, 2, 3], False)
    for bad in ("23", "0-2", "5-3", "six"):
        with pytest.raises(ValueError, match="--queries"):
            eb.select_queries(bad)


CHILD = """
import sys, time
from pathlib import Path
go, done = Path(sys.argv[1]), Path(sys.argv[2])
while not go.exists():
    time.sleep(0.01)
block = b"x" * (64 << 20)
time.sleep(0.5)
del block
done.write_text("done")
time.sleep(30)
"""


def ours(parent: int) -> dict[int, str]:
    """The Python workers found whose parent is ``parent``."""
    return {pid: role for pid, role in eb.python_workers().items() if (eb._proc_stat(pid) or (0,))[0] == parent}


def test_worker_memory_finds_python_under_the_jvm(tmp_path: Path) -> None:
    """A Python process under a process called ``java`` counts as a worker; its peak while the
    block runs is seen after it freed the memory again, with the growth over its start."""
    java = tmp_path / "java"
    java.symlink_to(os.path.realpath(sys.executable))
    go, done = tmp_path / "go", tmp_path / "done"
    jvm = subprocess.Popen([str(java), "-c", "import subprocess, sys; subprocess.run(sys.argv[1:])",
                            os.path.realpath(sys.executable), "-c", CHILD, str(go), str(done)])
    try:
        deadline = time.monotonic() + 30
        while not (workers := ours(jvm.pid)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert list(workers.values()) == ["python"], workers
        with eb.WorkerMemory() as memory:
            go.write_text("go")
            while not done.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
        summary = memory.summary()
        assert done.exists()
    finally:
        jvm.kill()
        jvm.wait()
    (worker,) = [w for w in summary["workers"] if w["pid"] in workers]
    assert worker["role"] == "python"
    assert worker["growth_bytes"] >= 60 << 20
    assert worker["peak_rss_bytes"] >= worker["start_rss_bytes"] + (60 << 20)
    assert summary["max_worker_peak_rss_bytes"] >= worker["peak_rss_bytes"]


END_TO_END = """
import json, sys
from pathlib import Path
from benchmarks import extension_bench as eb
from benchmarks.engines import close_engines
from benchmarks.report import build_document
from benchmarks.scenarios import QUICK, RunContext

folder = Path(sys.argv[1])
ctx = RunContext([], sizes=QUICK, reps=1, quick=True, data_dir=folder / "data")
# at SF 0.01 the cost model keeps Spark's reader; the test is about lazyscan's rows on and off
eb.extension_spark().conf.set("spark.lazyscan.choice", "lazyscan")
try:
    result = eb.scenario(ctx, numbers=(6,))
finally:
    close_engines([])
doc = build_document([result], args={"scenarios": ["extension"], "sf": 0.01})
paths = eb.write_reports(doc, folder / "reports", 0.01)
print("REPORT", json.dumps({k: str(p) for k, p in paths.items()}))
"""


@pytest.mark.spark
def test_scenario_end_to_end_rows_agree(tmp_path: Path) -> None:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    done = subprocess.run([sys.executable, "-c", END_TO_END, str(tmp_path)], capture_output=True, text=True,
                          cwd=REPO, env=env, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("REPORT "))
    paths = json.loads(line.removeprefix("REPORT "))
    doc = json.loads(Path(paths["json"]).read_text())
    scenario = doc["scenarios"]["extension"]
    assert scenario["status"] == "ok", scenario["status"]
    derived = scenario["derived"]
    assert derived["rows_agree"]
    for q in scenario["queries"]:
        assert q["agree"], q["verdict"]
        assert [m["status"] for m in q["measurements"]] == ["ok"] * len(q["measurements"])
        assert all(len(m["times"]) == 1 for m in q["measurements"])
    tpch = derived["tpch"]["queries"]
    assert list(tpch) == ["Q6"]
    for entry in tpch.values():
        # the rule reads lineitem's filtered scan through lazyscan with the extension on (its choice
        # forced above), never off
        assert entry["reader"] == "lazyscan" and entry["off_lazyscan_scans"] == 0, entry
    seed_rows = {q["query"]["name"]: {m["rows"] for m in q["measurements"]} for q in scenario["queries"]}
    assert seed_rows["Q-A"] == seed_rows["Q-B"] == {scenario["params"]["value_rows"]}
    seed = derived["seed"]
    assert set(seed) == {"Q-A", "Q-B"}
    for name in ("Q-A", "Q-B"):
        # lazyscan's readers run in Python workers; their memory was seen
        peaks = seed[name]["max_worker_peak_rss_bytes"]
        assert peaks["extension-on"] > 0 and peaks["extension-read"] > 0, peaks
    text = Path(paths["markdown"]).read_text()
    assert "### TPC-H: extension on / off" in text and "| Q6 | lazyscan" in text
