"""rmqctl on Apache Spark (the optional extra `pip install 'rmqctl[spark]'`): RocketMQ stores as DataFrames.

    from rmqctl.spark import session
    spark = session()                       # local[*] unless a master is given or spark-submit set one
    df = spark.read.format("rocketmq").option("brokerConfig", "broker.conf").load(["/data/a/store", "/data/b/store"])

Importing this package does not import pyspark; `session()` and `register()` do, and say how to install it
when it is missing.
"""

from __future__ import annotations

import importlib
import os
import sys

from ..errors import UsageError

INSTALL_HINT = "pip install 'rmqctl[spark]'"
MASTER_ENV = "RMQCTL_SPARK_MASTER"
DAEMON_MODULE = (
    "spark.python.daemon.module"  # a local master's: rmqctl.spark.daemon (a Ctrl-C reaches the driver alone)
)
LOG4J2_CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "log4j2.properties")


def console_conf(log_level: str) -> dict[str, str]:
    """Settings for a driver started from a command line: Spark's log at `log_level` from the first line on
    (this package's log4j2 config instead of Spark's default WARN profile and its start-up banner), and stage
    bars only when stderr is a terminal."""
    return {
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{LOG4J2_CONFIG} "
        f"-Drmqctl.spark.logLevel={log_level.lower()}",
        "spark.ui.showConsoleProgress": "true" if sys.stderr.isatty() else "false",
    }


def require():
    """Fail with the install line (a UsageError: one line, exit 2) when PySpark or PyArrow is missing."""
    missing = []
    for name in ("pyspark", "pyarrow"):
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    if missing:
        raise UsageError(f"this needs {' and '.join(missing)}, which is not installed: {INSTALL_HINT}")


def register(spark):
    """Register the `rocketmq`, `rocketmq-consumequeue`, `rocketmq-batchconsumequeue`, `rocketmq-index`,
    `rocketmq-timerlog` and `metaq` data sources on a session and let them take pushed-down filters (Spark
    refuses a reader with pushFilters while that is switched off)."""
    require()
    from .sources import PUSHDOWN, SOURCES  # imports pyspark, the optional extra

    if PUSHDOWN:
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    for source in SOURCES:
        spark.dataSource.register(source)
    return spark


def session(
    master: str | None = None,
    app_name: str = "rmqctl",
    conf: dict[str, str] | None = None,
    remote: str | None = None,
    log_level: str = "error",
):
    """The active SparkSession (or a new one) with the data sources registered.

    Master: the one given, else $RMQCTL_SPARK_MASTER, else the one spark-submit configured, else local[*].
    A local master binds to 127.0.0.1 unless SPARK_LOCAL_IP says otherwise (hosts without DNS), and runs its
    Python workers with this interpreter, so they import this rmqctl.

    `remote` ("sc://host:15002") connects to a Spark Connect server instead (pip install 'pyspark[connect]'
    here): the data sources are registered from here and run in the server's Python workers, which must
    import rmqctl and its dependencies (the server's PYTHONPATH or environment, spark.pyspark.python).

    A session it starts is quiet: Spark's log at `log_level` (error: no banner, no WARN lines; "warn" or
    "info" to see them) and stage bars only on a terminal, unless `conf` sets the driver's Java options."""
    require()
    from pyspark.sql import SparkSession  # the optional extra

    if remote is not None:
        builder = SparkSession.builder.remote(remote)
        for key, value in (conf or {}).items():
            builder = builder.config(key, value)
        return register(builder.getOrCreate())
    master = master or os.environ.get(MASTER_ENV)
    under_submit = "PYSPARK_GATEWAY_PORT" in os.environ  # spark-submit started the JVM with its own master
    if master is None and not under_submit:
        master = "local[*]"
    if master is not None and master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    local = {DAEMON_MODULE: "rmqctl.spark.daemon"} if master is not None and master.startswith("local") else {}
    for key, value in {**console_conf(log_level), **local, **(conf or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(log_level.upper())  # a JVM started before (spark-submit, a notebook) too
    return register(spark)
