"""Transparent mode (Spark 4.1+): plain ``spark.read.parquet(...).where(...)`` read by lazyscan.

A small Catalyst rule (Java, in ``lazyscan/spark/jvm/``) replaces a filtered scan of Spark's
Parquet file source by the ``lazyscan`` Python data source over the same files, with the
filter's translatable conjuncts as its ``where`` option and only the needed columns. Spark keeps
its own filter above the scan, so the rows never depend on lazyscan filtering exactly.

Usage::

    from pyspark.sql import SparkSession
    import lazyscan.spark

    spark = lazyscan.spark.configure(SparkSession.builder).getOrCreate()
    lazyscan.spark.enable(spark)        # registers the data source the rule reads through
    spark.read.parquet(path).where("l_comment = 'carefully'").select("l_orderkey").collect()

    spark.conf.set("spark.lazyscan.enabled", "false")   # Spark's own reader again (any query)

How the parts meet:

- :func:`configure` compiles the rule with ``javac`` against the installed PySpark's jars, once
  per PySpark version and rule source, into a user cache folder (``LAZYSCAN_CACHE_DIR``, else
  ``$XDG_CACHE_HOME/lazyscan``, else ``~/.cache/lazyscan``; a file lock keeps concurrent first
  calls from compiling twice), and appends the jar to ``spark.jars`` and the extension class to
  ``spark.sql.extensions``. Only the driver needs ``javac``, and only the first time; the
  executors never load the rule. Both settings are static: they act only on a session that
  ``getOrCreate`` starts after them.
- :func:`enable` registers the Python data source with the session (a JVM rule cannot register
  Python code itself), and checks that the extension is active. Without it the rule keeps
  Spark's reader and logs a warning on the driver.
- ``spark.lazyscan.enabled`` (default ``true``) is read each time a query is optimized: set it
  to ``false`` for the session or around one query.
- Which reader is faster for a scan the rule can take is decided by the cost model of
  :func:`lazyscan.spark.read` (:mod:`.choose`), which :func:`enable` registers with the session:
  the JVM calls it back in the driver's Python process, or on Spark Connect asks it through a
  planning call of the Python data source ``lazyscanChoice`` (see :mod:`.decision`); the
  decision is kept per session, files and filter. ``spark.lazyscan.choice=lazyscan`` takes
  every scan the rule can take without asking.
- Opting out: ``spark.lazyscan.enabled=false`` for the session (or around one query),
  ``spark.read.option("lazyscan", "false")`` for one read, and the table property
  ``TBLPROPERTIES ('lazyscan.enabled'='false')`` (or the table option ``OPTIONS (lazyscan
  'false')``) for a catalog table.
- A scan of a query that reads one relation is planned by the driver's Python process as
  ``mapInArrow`` tasks (:mod:`.rule_tasks`), which :func:`enable` registers on a classic
  session; joins, Spark Connect and ``spark.lazyscan.scanRoute=source`` keep the data source.
- :func:`decisions` lists the rule's latest decision per scan with its reason: what it read with
  lazyscan, or why Spark's reader was kept (also logged at INFO on the driver). ``explain()``
  shows the same per scan of its plan, in a ``lazyscan`` section (``LazyScanExplain``, named in
  ``spark.sql.extendedExplainProviders`` by :func:`configure` and :func:`enable`).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lazyscan.errors import LazyScanError, OptionError, UnsupportedFeatureError
from lazyscan.spark.choose import CostModel
from lazyscan.spark.compat import conf_value, is_connect, spark_version, spark_version_text

#: the value of ``spark.sql.extensions`` that injects the rule
EXTENSION_CLASS = "lazyscan.spark.jvm.LazyScanExtension"
#: the class that adds the ``lazyscan`` section to ``explain()`` (Spark's setting below)
EXPLAIN_CLASS = "lazyscan.spark.jvm.LazyScanExplain"
EXPLAIN_CONF = "spark.sql.extendedExplainProviders"
#: the session setting that turns the rule off for the queries optimized while it is ``false``
ENABLED_CONF = "spark.lazyscan.enabled"
#: the Java sources of the rule, shipped in the package
JVM_SOURCES = Path(__file__).with_name("jvm")
#: the first Spark release whose Python data sources the rule can read through
MIN_SPARK = (4, 1)


class JarBuildError(LazyScanError):
    """The rule's jar could not be compiled (no ``javac``, or ``javac`` failed)."""


def _pyspark() -> tuple[str, Path]:
    import pyspark

    return pyspark.__version__, Path(pyspark.__file__).parent / "jars"


def cache_dir() -> Path:
    """Where compiled jars are kept."""
    base = os.environ.get("LAZYSCAN_CACHE_DIR")
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "lazyscan"


def _sources() -> list[Path]:
    return sorted(JVM_SOURCES.glob("*.java"))


def jar_path(folder: Path | None = None) -> Path:
    """The jar for the installed PySpark and these rule sources (it may not exist yet)."""
    version, _ = _pyspark()
    digest = hashlib.sha256(version.encode())
    for source in _sources():
        digest.update(source.name.encode())
        digest.update(source.read_bytes())
    return (folder or cache_dir()) / f"lazyscan-spark-{version}-{digest.hexdigest()[:12]}.jar"


def _javac() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "javac").exists():
        return str(Path(home) / "bin" / "javac")
    found = shutil.which("javac")
    if found is None:
        raise JarBuildError(
            "lazyscan's Spark extension is compiled once with javac (a JDK 17 or newer) on the "
            "driver, and none was found (JAVA_HOME, PATH); install a JDK, e.g. "
            "apt-get install openjdk-17-jdk-headless"
        )
    return found


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def build_jar(folder: Path | None = None) -> Path:
    """The rule's jar, compiled first if this PySpark and these sources have none yet."""
    jar = jar_path(folder)
    if jar.exists():
        return jar
    with _locked(jar):
        if jar.exists():  # compiled by another process while this one waited
            return jar
        if not _sources():
            raise JarBuildError(f"no Java sources of lazyscan's Spark extension in {JVM_SOURCES}: "
                                "this lazyscan was installed without them")
        compile_jar(_sources(), jar, "lazyscan's Spark extension")
    return jar


def compile_jar(sources: list[Path], jar: Path, what: str) -> None:
    """Compile ``sources`` with ``javac`` against the installed PySpark's jars into ``jar``
    (written whole or not at all); :class:`JarBuildError` names ``what`` when javac fails."""
    _, spark_jars = _pyspark()
    with tempfile.TemporaryDirectory(prefix="lazyscan-javac-") as tmp:
        classes = Path(tmp) / "classes"
        classes.mkdir()
        command = [
            _javac(), "--release", "17", "-nowarn", "-d", str(classes),
            "-cp", str(spark_jars / "*"), *map(str, sources),
        ]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise JarBuildError(f"javac failed on {what}:\n{done.stderr.strip()}")
        partial = Path(tmp) / jar.name
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\n\r\n")
            for f in sorted(classes.rglob("*.class")):
                z.write(f, f.relative_to(classes).as_posix())
        shutil.move(str(partial), str(jar.with_name(jar.name + ".part")))
        os.replace(jar.with_name(jar.name + ".part"), jar)


def _items(setting: str | None) -> list[str]:
    """The entries of a comma-separated setting (``spark.jars``, ``spark.sql.extensions``, ...)."""
    return [v.strip() for v in (setting or "").split(",") if v.strip()]


def _appended(current: str | None, value: str) -> str:
    items = _items(current)
    return ",".join(items if value in items else [*items, value])


def _check_spark() -> None:
    if spark_version() < MIN_SPARK:
        raise UnsupportedFeatureError(
            f"lazyscan's transparent mode needs Spark 4.1 or later (its Python data source); this "
            f"is Spark {spark_version_text()}: use lazyscan.spark.read"
        )


def configure(builder: Any) -> Any:
    """``builder`` (a ``SparkSession.builder``) with the rule's jar appended to ``spark.jars``
    and its extension to ``spark.sql.extensions``; returns it.

    Call before ``getOrCreate()`` starts the session, then :func:`enable` on the session.
    Raises :class:`~lazyscan.errors.UnsupportedFeatureError` before Spark 4.1 and
    :class:`JarBuildError` when the jar cannot be compiled.
    """
    _check_spark()
    jar = str(build_jar())
    options = getattr(builder, "_options", {})  # settings given to this builder so far
    builder.config("spark.jars", _appended(options.get("spark.jars"), jar))
    builder.config("spark.sql.extensions", _appended(options.get("spark.sql.extensions"), EXTENSION_CLASS))
    builder.config(EXPLAIN_CONF, _appended(options.get(EXPLAIN_CONF), EXPLAIN_CLASS))
    return builder


def _add_explain_section(spark: Any) -> None:
    """Name :data:`EXPLAIN_CLASS` in ``spark``'s ``spark.sql.extendedExplainProviders`` (a
    session setting) when the session's class loader finds it: Spark fails ``explain()`` on a
    provider it cannot load. On Spark Connect the server's loader is not reachable: its
    ``spark.jars`` hold the class when the extension is active."""
    current = conf_value(spark, EXPLAIN_CONF)
    if EXPLAIN_CLASS in _items(current):
        return
    if not is_connect(spark):
        jvm = spark.sparkContext._jvm
        try:
            loader = jvm.org.apache.spark.util.Utils.getContextOrSparkClassLoader()
            jvm.java.lang.Class.forName(EXPLAIN_CLASS, False, loader)
        except Exception:
            return  # the rule's jar is not on the session's class path (loaded some other way)
    spark.conf.set(EXPLAIN_CONF, _appended(current, EXPLAIN_CLASS))


def enable(spark: Any, push_filters: bool | str = "auto", costs: CostModel | None = None) -> None:
    """Register the ``lazyscan`` data source with ``spark`` for the rule to read through, and
    the cost model the rule asks which reader is faster (``costs``, default
    :class:`~lazyscan.spark.choose.CostModel`; see :mod:`.decision`).

    Raises :class:`~lazyscan.errors.OptionError` when the session was started without
    :func:`configure` (the extension is a static setting of the session).
    """
    _check_spark()
    if EXTENSION_CLASS not in _items(conf_value(spark, "spark.sql.extensions")):
        raise OptionError(
            f"the session runs without lazyscan's extension ({EXTENSION_CLASS} is not in "
            "spark.sql.extensions): start it with lazyscan.spark.configure(SparkSession.builder)"
            ".getOrCreate(); an existing session keeps its static settings"
        )
    from lazyscan.spark import register
    from lazyscan.spark.decision import enable_choice
    from lazyscan.spark.rule_tasks import enable_tasks

    source_class = register(spark, push_filters)
    enable_choice(spark, costs)
    enable_tasks(spark, source_class)
    _add_explain_section(spark)


def decisions(spark: Any) -> list[str]:
    """The transparent mode's latest decisions in ``spark`` (a classic session), oldest first,
    one per scan: ``<scan>: lazyscan(where: ..., columns: ...)`` or ``<scan>: Spark's reader:
    <reason>``, a scan being ``table <name>`` or its paths. On Spark Connect the server's driver
    log has them (INFO)."""
    _check_spark()
    rule = spark.sparkContext._jvm.lazyscan.spark.jvm.LazyScanRule
    return [str(d) for d in rule.decisions(spark._jsparkSession)]
