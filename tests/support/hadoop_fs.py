"""A Hadoop file system for object-store URIs in Spark tests: ``LocalBucketFileSystem``
(``tests/support/jvm``) serves ``s3a://bucket/key`` (or another scheme) from the local file
``<folder>/bucket/key``, so Spark's driver lists and infers what the tests also upload to their
S3 server. PySpark ships no S3 connector; this stands in for it on the driver only."""

from __future__ import annotations

import contextlib
import hashlib
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lazyscan.spark.extension import _pyspark, compile_jar

SOURCE = Path(__file__).parent / "jvm" / "LocalBucketFileSystem.java"
CLASS = "lazyscan.tests.LocalBucketFileSystem"
FOLDER_SETTING = "lazyscan.test.bucketFolder"


def build_jar() -> Path:
    """The file system's jar, compiled against the installed PySpark's jars (cached by content)."""
    version, _ = _pyspark()
    digest = hashlib.sha256(version.encode() + SOURCE.read_bytes()).hexdigest()[:12]
    jar = Path(tempfile.gettempdir()) / f"lazyscan-test-fs-{digest}.jar"
    if not jar.exists():
        compile_jar([SOURCE], jar, "the tests' Hadoop file system")
    return jar


@contextlib.contextmanager
def bucket_folders(spark: Any, folder: Path, schemes: tuple[str, ...] = ("s3a",)) -> Iterator[None]:
    """While open, Spark reads ``<scheme>://bucket/key`` as ``folder/bucket/key``: settings of
    the context's Hadoop configuration and of the catalog's (the session's shared state keeps a
    copy), restored on exit; the jar stays added to the context, for the tasks that read
    footers while Spark infers a schema."""
    jvm = spark.sparkContext._jvm
    jar = str(build_jar())
    spark.sparkContext._jsc.addJar(jar)
    confs = [spark.sparkContext._jsc.hadoopConfiguration(), spark._jsparkSession.sharedState().hadoopConf()]
    urls = spark.sparkContext._gateway.new_array(jvm.java.net.URL, 1)
    urls[0] = jvm.java.io.File(jar).toURI().toURL()
    loader = jvm.java.net.URLClassLoader(urls, confs[0].getClassLoader())
    settings = {FOLDER_SETTING: str(folder)}
    for scheme in schemes:
        settings[f"fs.{scheme}.impl"] = CLASS
        settings[f"fs.{scheme}.impl.disable.cache"] = "true"
    saved = [(conf, conf.getClassLoader(), {k: conf.get(k) for k in settings}) for conf in confs]
    for conf in confs:
        conf.setClassLoader(loader)
        for k, v in settings.items():
            conf.set(k, v)
    try:
        yield
    finally:
        for conf, old_loader, before in saved:
            conf.setClassLoader(old_loader)
            for k, v in before.items():
                if v is None:
                    conf.unset(k)
                else:
                    conf.set(k, v)
