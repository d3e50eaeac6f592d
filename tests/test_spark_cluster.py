"""The cluster path for real: a Spark standalone master and two workers (1 core each) on 127.0.0.1, started with
`spark-class` from the pip-installed PySpark, then docs/spark.md's `spark-submit` recipe and the Python API against
them. The workers run in their own mount namespace where one directory is an empty tmpfs, so a store the driver
sees can be missing on every executor, as on a cluster without the shared filesystem."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import FIXTURES, broker_conf, jsonl, run, truth

pyspark = pytest.importorskip("pyspark")
pytestmark = [pytest.mark.spark, pytest.mark.tmpfs]

REPO = Path(__file__).resolve().parents[1]
SPARK_HOME = Path(pyspark.__file__).parent
STORES = ["a-basic", "b-mixed"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what, predicate, seconds=600):
    """Until predicate() holds; `seconds` is a last guard far above a start on a busy machine, said as too slow."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.5)
    pytest.fail(f"too slow: {what} not up after {seconds} s")


class Cluster:
    def __init__(self, base: Path):
        self.base = base
        self.port = free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.hidden = base / "hidden"  # an empty tmpfs inside the workers' mount namespace
        self.hidden.mkdir()
        self.env = {
            **os.environ,
            "SPARK_HOME": str(SPARK_HOME),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_NO_DAEMONIZE": "1",
        }
        self.procs: list[subprocess.Popen] = []
        self.work_dirs: list[Path] = []

    def start(self):
        cls = str(SPARK_HOME / "bin" / "spark-class")
        self.master_log = self.base / "master.log"
        self.procs.append(
            subprocess.Popen(
                [
                    cls,
                    "org.apache.spark.deploy.master.Master",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(self.port),
                    "--webui-port",
                    str(free_port()),
                ],
                env=self.env,
                stdout=open(self.master_log, "w"),
                stderr=subprocess.STDOUT,
            )
        )
        wait_for(
            "the master",
            lambda: (
                "Starting Spark master" in self.master_log.read_text()
                and "I have been elected leader" in self.master_log.read_text()
            ),
        )
        for n in range(2):
            work = self.base / f"worker{n}"
            work.mkdir()
            self.work_dirs.append(work)
            worker = (
                f"mount -t tmpfs tmpfs {self.hidden} && exec {cls} org.apache.spark.deploy.worker.Worker "
                f"{self.url} --host 127.0.0.1 --cores 1 --memory 1g --webui-port {free_port()} --work-dir {work}"
            )
            self.procs.append(
                subprocess.Popen(
                    ["unshare", "-m", "--propagation", "private", "sh", "-c", worker],
                    env=self.env,
                    stdout=open(self.base / f"worker{n}.log", "w"),
                    stderr=subprocess.STDOUT,
                )
            )
        wait_for("two workers", lambda: self.master_log.read_text().count("Registering worker") >= 2)

    def executor_logs(self) -> list[str]:
        """The stderr of every executor each worker ran, per worker."""
        return ["".join(p.read_text(errors="replace") for p in w.glob("app-*/*/stderr")) for w in self.work_dirs]

    def stop(self):
        for p in reversed(self.procs):
            p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("the workers' private mount namespace needs root and unshare")
    c = Cluster(tmp_path_factory.mktemp("cluster"))
    try:
        c.start()
        yield c
    finally:
        c.stop()


@pytest.fixture(scope="module")
def shipped(tmp_path_factory) -> Path:
    """docs/spark.md's `zip -qr rmqctl.zip rmqctl -x '*__pycache__*'`, from the checkout."""
    out = tmp_path_factory.mktemp("ship") / "rmqctl.zip"
    subprocess.run(["zip", "-qr", str(out), "rmqctl", "-x", "*__pycache__*"], cwd=REPO, check=True)
    return out


def submit(cluster: Cluster, shipped: Path, *args) -> subprocess.CompletedProcess:
    """docs/spark.md's recipe: spark-submit with the zip, the executors' interpreter, and submit.py."""
    cmd = [
        str(SPARK_HOME / "bin" / "spark-submit"),
        "--master",
        cluster.url,
        "--py-files",
        str(shipped),
        "--conf",
        f"spark.pyspark.python={sys.executable}",
        str(REPO / "rmqctl" / "spark" / "submit.py"),
        *map(str, args),
    ]
    return subprocess.run(
        cmd, env={**cluster.env, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=300
    )


def test_submit_export_runs_on_both_workers_and_equals_dump(cluster, shipped, tmp_path):
    import pyarrow.parquet as pq

    out = tmp_path / "export"
    args = ["spark", "export", "--out", out]
    for name in STORES:
        args += ["--store", FIXTURES / name / "store", "--broker-config", broker_conf(name)]
    p = submit(cluster, shipped, *args)
    assert p.returncode == 0, p.stdout[-1000:] + p.stderr[-2000:]
    table = pq.read_table(out)
    rows = table.select(["store", "commitLogOffset", "msgId", "topic", "queueOffset"]).to_pylist()
    for name in STORES:
        mine = {
            (r["commitLogOffset"], r["msgId"], r["topic"], r["queueOffset"])
            for r in rows
            if r["store"].endswith(f"{name}/store")
        }
        dumped = jsonl(
            run(
                "dump",
                "commitlog",
                "--store",
                FIXTURES / name / "store",
                "--broker-config",
                broker_conf(name),
                "--body",
                "none",
                "--format",
                "jsonl",
            ).stdout
        )
        assert mine == {(d["commitLogOffset"], d["msgId"], d["topic"], d["queueOffset"]) for d in dumped}
        assert len(mine) == len(truth(name, "truth-messages.jsonl"))
    logs = cluster.executor_logs()
    assert all("Finished task" in log for log in logs), "a worker ran no task"


API_CLIENT = """
import json, sys
from rmqctl.spark import session

url, python, shipped, *stores = sys.argv[1:]
spark = session(url, conf={"spark.pyspark.python": python, "spark.submit.pyFiles": shipped})
df = spark.read.format("rocketmq").load(stores)
print(json.dumps({"master": spark.sparkContext.master,
                  "counts": {r["topic"]: r["count"] for r in df.groupBy("topic").count().collect()}}))
spark.stop()
"""


def test_python_api_on_the_cluster(cluster, shipped):
    """`session("spark://...")` in a process of its own (in this one, the suite's local session would be the
    one getOrCreate returns): the rows of both stores, read on the cluster."""
    p = subprocess.run(
        [
            sys.executable,
            "-c",
            API_CLIENT,
            cluster.url,
            sys.executable,
            str(shipped),
            *(str(FIXTURES / n / "store") for n in STORES),
        ],
        env={**cluster.env, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    got = json.loads(p.stdout.splitlines()[-1])
    want: dict = {}
    for n in STORES:
        for m in truth(n, "truth-messages.jsonl"):
            want[m["topic"]] = want.get(m["topic"], 0) + 1
    assert got == {"master": cluster.url, "counts": want}


def test_a_store_missing_on_the_executors_is_one_line_and_exit_2(cluster, shipped, tmp_path):
    hidden = cluster.hidden / "store"
    shutil.copytree(FIXTURES / "a-basic" / "store", hidden)  # the driver sees it; the executors' tmpfs hides it
    out = tmp_path / "export"  # holding a previous export, which the failed --overwrite run must leave as it was
    out.mkdir()
    (out / "_SUCCESS").touch()
    (out / "previous.parquet").write_bytes(b"PAR1")
    p = submit(
        cluster,
        shipped,
        "spark",
        "export",
        "--store",
        hidden,
        "--broker-config",
        broker_conf("a-basic"),
        "--out",
        out,
        "--overwrite",
    )
    assert p.returncode == 2, p.stderr[-2000:]
    # spark-submit's PythonRunner merges the Python driver's stderr into its stdout
    said = p.stdout + p.stderr
    ours = [line for line in said.splitlines() if line.startswith("rmqctl: ")]
    assert len(ours) == 1 and str(hidden) in ours[0], said[-2000:]
    assert "Traceback" not in said and "\tat org.apache" not in said
    assert sorted(p.name for p in out.iterdir()) == ["_SUCCESS", "previous.parquet"]
