"""The data sources through Spark Connect for real: the pip package's `start-connect-server.sh` (its
spark-connect jar ships in pyspark/jars) on 127.0.0.1, with rmqctl on the server's PYTHONPATH (Python data
sources run in the server's Python workers), and a client session from `session(remote=...)`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import broker_conf, fixture_dir, jsonl, run, truth

pyspark = pytest.importorskip("pyspark")
pytest.importorskip("grpc", reason="the Spark Connect client needs pip install 'pyspark[connect]'")
pytest.importorskip("pandas", reason="the Spark Connect client needs pip install 'pyspark[connect]'")
from test_spark_cluster import free_port, wait_for  # noqa: E402  (after the skips: it imports pyspark)

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[1]
SPARK_HOME = Path(pyspark.__file__).parent


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """docs/spark.md's start-connect-server.sh line, in the foreground of its own process group."""
    base = tmp_path_factory.mktemp("connect")
    port = free_port()
    env = {
        **os.environ,
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_NO_DAEMONIZE": "1",
        "SPARK_LOG_DIR": str(base),
        "SPARK_PID_DIR": str(base),
        "PYTHONPATH": str(REPO),
        "PYSPARK_PYTHON": sys.executable,
    }
    log = base / "server.log"
    proc = subprocess.Popen(
        [
            str(SPARK_HOME / "sbin" / "start-connect-server.sh"),
            "--master",
            "local[2]",
            "--conf",
            "spark.connect.grpc.binding.address=127.0.0.1",
            "--conf",
            f"spark.connect.grpc.binding.port={port}",
            "--conf",
            "spark.ui.enabled=false",
        ],
        env=env,
        stdout=open(log, "w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        wait_for(
            "the Spark Connect server",
            lambda: "Spark Connect server started" in log.read_text() or proc.poll() is not None,
        )
        assert proc.poll() is None, log.read_text()[-2000:]
        yield f"sc://127.0.0.1:{port}"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=600)  # a last guard for a server that ignores SIGTERM, far above its stop
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            pytest.fail("too slow: the Spark Connect server did not stop in 600 s after SIGTERM")


CLIENT = """
import json, sys
from rmqctl.spark import session

url, store, conf, lo, hi = sys.argv[1:]
spark = session(remote=url)
df = spark.read.format("rocketmq").option("brokerConfig", conf).load(store)
picked = df.where(f"topic = 'TopicTest' and storeTimestampMs between {lo} and {hi}")
units = spark.read.format("rocketmq-consumequeue").option("brokerConfig", conf).load(store)
print(json.dumps({"offsets": sorted(r.commitLogOffset for r in picked.select("commitLogOffset").collect()),
                  "plan": picked._explain_string(mode="formatted"),  # what explain("formatted") prints
                  "units": units.count(), "connect": type(spark).__module__}))
spark.stop()
"""


def test_data_sources_through_spark_connect(server):
    """A client process (a regular session in this one would refuse a remote one) through the server: the
    `rocketmq` source's rows, with its filters pushed (explain), equal the dump's, and the consumequeue source
    reads every unit of the truth file."""
    name = "a-basic"
    store = fixture_dir(name) / "store"
    dumped = jsonl(
        run(
            "dump",
            "commitlog",
            "--store",
            store,
            "--broker-config",
            broker_conf(name),
            "--body",
            "none",
            "--format",
            "jsonl",
        ).stdout
    )
    stamps = sorted(d["storeTimestamp"] for d in dumped)
    lo, hi = stamps[500], stamps[700]
    p = subprocess.run(
        [sys.executable, "-c", CLIENT, server, str(store), str(broker_conf(name)), str(lo), str(hi)],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    got = json.loads(p.stdout.splitlines()[-1])
    assert got["connect"].startswith("pyspark.sql.connect")
    assert got["offsets"] == [
        d["commitLogOffset"] for d in dumped if d["topic"] == "TopicTest" and lo <= d["storeTimestamp"] <= hi
    ]
    assert "PushedFilters: [EqualTo(topic,TopicTest), GreaterThanOrEqual(storeTimestampMs," in got["plan"]
    assert got["units"] == len(truth(name, "truth-consumequeue.jsonl"))
