"""Export throughput of `rmqctl spark export` (Parquet, partitioned by topic) on local[1] and local[2], next to
single-process `rmqctl dump commitlog --format jsonl` over the same files, measured in the same run: seconds,
MB/s of commitlog records, the CPU seconds each run used (the JVM and every Python process of a Spark session,
the dump's process) and peak RSS (the dump's; the largest Python worker's and the JVM's of a session).

The store is generated first: several full commitlog files in the broker's layout (records built with
rmqctl.record.encode_record, every file full size and ending in a BLANK record), on
tmpfs when there is one so the page cache is not what is measured. Bodies are half text, half random bytes,
of about 1.27 KiB on average (RocketMQ's own decode baseline in the fixtures README uses that size).

    python benchmarks/bench_spark_export.py [--files 8] [--file-mb 32] [--repeat 5]

Each Spark master runs in its own long-lived session (a child process, warmed up once); the contenders take
turns in rounds and each figure is the fastest of its runs, since other load on the machine only ever makes a
run slower. The CPU seconds are that run's; on a loaded machine they are the steadier comparison.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rmqctl import schema as S
from rmqctl.javacompat import crc31, encode_properties
from rmqctl.record import Message, encode_record
from rmqctl.store import offset_to_name

TOPICS = ["OrderTopic", "PaymentTopic", "AuditTopic", "BenchTopic-7"]
QUEUES = 4
PRODUCERS = 64


def make_message(rng: random.Random, i: int, offset: int, queue_offsets: dict) -> Message:
    topic = TOPICS[i % len(TOPICS)]
    qid = rng.randrange(QUEUES)
    size = rng.randint(200, 1950)
    body = (b"order %d " % i * (size // 10 + 1))[:size] if i % 2 else rng.randbytes(size)
    props = [
        ("WAIT", "true"),
        ("CLUSTER", "BenchCluster"),
        ("TAGS", f"Tag{'ABCDE'[i % 5]}"),
        ("KEYS", f"ORDER-{i:08d} USER-{i % 97:02d}"),
        ("UNIQ_KEY", f"{0xC0000202:08X}{os.getpid():04X}{i:020X}"),
    ]
    m = Message()
    m.magicCode, m.bodyCRC, m.queueId, m.flag = S.MAGIC_V1, crc31(body), qid, 0
    m.queueOffset = queue_offsets[topic, qid]
    queue_offsets[topic, qid] += 1
    m.physicalOffset, m.sysFlag, m.bornTimestamp = offset, 0, 1_700_000_000_000 + i
    producer = rng.randrange(PRODUCERS)  # a producer sends many messages over one connection
    m.bornIp, m.bornPort = bytes([10, 0, producer // 8, producer]), 40000 + producer
    m.storeTimestamp, m.storeIp, m.storePort = 1_700_000_000_100 + i, bytes([192, 168, 0, 10]), 10911
    m.reconsumeTimes, m.preparedTransactionOffset = 0, 0
    m.body, m.bodyLength = body, len(body)
    m.topicBytes = topic.encode()
    m.propertiesBytes = encode_properties(props, trailing_separator=False).encode()
    return m


def generate_store(root: Path, files: int, file_size: int) -> tuple[int, int]:
    """`files` full commitlog files; returns (messages, message bytes)."""
    commitlog = root / "commitlog"
    commitlog.mkdir(parents=True)
    rng = random.Random(20240601)
    queue_offsets = {(t, q): 0 for t in TOPICS for q in range(QUEUES)}
    count = total = i = 0
    for n in range(files):
        start = n * file_size
        chunks, pos = [], 0
        while True:
            record = encode_record(make_message(rng, i, start + pos, queue_offsets))
            if pos + len(record) + S.END_FILE_MIN_BLANK_LENGTH > file_size:
                break  # CommitLog: a message never starts unless it leaves room for the BLANK record
            chunks.append(record)
            pos += len(record)
            count, total, i = count + 1, total + len(record), i + 1
        chunks.append(S.BLANK.pack(file_size - pos, S.MAGIC_BLANK))
        data = b"".join(chunks)
        (commitlog / offset_to_name(start)).write_bytes(data + bytes(file_size - len(data)))
    return count, total


class Dump:
    """`rmqctl dump commitlog --format jsonl` of the store, one process a run."""

    def __init__(self, store: Path):
        self.store = store
        self.peak = 0

    def failed(self, what: str):
        self.log.seek(0)
        raise SystemExit(f"{what}: {self.log.read()[-2000:].decode(errors='replace')}")

    def run(self) -> tuple[float, float]:
        """(seconds, CPU seconds) of one dump."""
        t = time.perf_counter()
        with open(os.devnull, "wb") as sink:
            proc = subprocess.Popen(
                [sys.executable, "-m", "rmqctl", "dump", "commitlog", "--store", str(self.store), "--format", "jsonl"],
                stdout=sink,
            )
            _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - t
        if os.waitstatus_to_exitcode(status):
            raise SystemExit(f"dump exited {os.waitstatus_to_exitcode(status)}")
        self.peak = max(self.peak, usage.ru_maxrss >> 10)
        return seconds, usage.ru_utime + usage.ru_stime

    def peaks(self) -> str:
        return f"{self.peak}"


def process_tree(pid: int) -> list[int]:
    """pid and every process under it."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for thread in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{thread}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except OSError:  # gone meanwhile
            pass
    return out


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pids: list[int]) -> float:
    """User and system CPU seconds the processes used so far (those gone meanwhile count nothing)."""
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / CLOCK_TICKS


def peak_rss_mib(pid: int) -> int:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    return next((int(line.split()[1]) >> 10 for line in status.splitlines() if line.startswith("VmHWM:")), 0)


def is_java(pid: int) -> bool:
    try:
        return os.path.basename(os.readlink(f"/proc/{pid}/exe")).startswith("java")
    except OSError:
        return False


def serve(master: str, store: str, out: str):
    """Child process: one Spark session on `master`; a warm-up export (Python workers, JIT), then one timed
    export per line read from stdin, its seconds written to stdout."""
    from rmqctl.spark import session
    from rmqctl.spark.export import export
    from rmqctl.spark.inputs import StoreSelection

    spark = session(master, app_name=f"bench-{master}", conf={"spark.ui.enabled": "false"})
    spark.sparkContext.setLogLevel("ERROR")
    selection = StoreSelection([store])
    export(spark, selection, out, overwrite=True)
    print("ready", flush=True)
    for _ in sys.stdin:
        t = time.perf_counter()
        export(spark, selection, out, overwrite=True)
        print(time.perf_counter() - t, flush=True)


class SparkWorker:
    def __init__(self, master: str, store: Path, out: Path):
        self.log = tempfile.TemporaryFile()  # Spark's own logging, shown only if the session fails
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--serve", master, str(store), str(out)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
        )
        if self.proc.stdout.readline().strip() != "ready":
            self.failed(f"the {master} session did not start")
        self.worker_peak = self.jvm_peak = 0

    def run(self) -> tuple[float, float]:
        """(seconds, CPU seconds of the session's processes) of one export."""
        before = cpu_seconds(process_tree(self.proc.pid))
        self.proc.stdin.write("run\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line.strip():
            self.failed("the export failed")
        seconds = float(line)
        tree = process_tree(self.proc.pid)
        for p in tree[1:]:  # (the first is the driver's own Python process, which runs no task)
            if is_java(p):
                self.jvm_peak = max(self.jvm_peak, peak_rss_mib(p))
            else:
                self.worker_peak = max(self.worker_peak, peak_rss_mib(p))
        return seconds, cpu_seconds(tree) - before

    def peaks(self) -> str:
        """Peak RSS in MiB of the session's largest Python worker and of its JVM, over its runs."""
        return f"{self.worker_peak} / {self.jvm_peak}"

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=8, help="commitlog files to generate")
    ap.add_argument("--file-mb", type=int, default=32, help="size of each commitlog file, MiB")
    ap.add_argument("--repeat", type=int, default=5, help="rounds; each figure is the fastest of its runs")
    ap.add_argument("--serve", nargs=3, metavar=("MASTER", "STORE", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        return serve(*args.serve)
    base = Path(tempfile.mkdtemp(prefix="rmq-bench-spark-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
    workers = []
    try:
        store = base / "store"
        t = time.perf_counter()
        count, total = generate_store(store, args.files, args.file_mb << 20)
        print(
            f"store: {args.files} commitlog files x {args.file_mb} MiB, {count} messages, {total / 1e6:.1f} MB of "
            f"records, avg {total / count:.0f} B; generated in {time.perf_counter() - t:.1f} s ({base})"
        )
        runs = {"dump --format jsonl (1 process)": Dump(store)}
        for master in ("local[1]", "local[2]"):
            workers.append(SparkWorker(master, store, base / f"out-{master[6]}"))
            runs[f"spark export parquet {master}"] = workers[-1]
        print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} before the runs")
        times = {name: [] for name in runs}
        for _ in range(args.repeat):  # rounds, so that load from elsewhere hits every contender alike
            for name, contender in runs.items():
                times[name].append(contender.run())
        best = {name: min(ts) for name, ts in times.items()}
        print(
            f"{'run':36} {'seconds':>8} {'rows/s':>10} {'MB/s':>8} {'CPU s':>6} {'MB/CPU-s':>8}  peak RSS MiB "
            f"(dump; a session's Python worker / JVM)   (fastest of {args.repeat})"
        )
        for name, (seconds, cpu) in best.items():
            print(
                f"{name:36} {seconds:8.2f} {count / seconds:10.0f} {total / 1e6 / seconds:8.1f} {cpu:6.2f} "
                f"{total / 1e6 / cpu:8.1f}  {runs[name].peaks()}"
            )
        print(f"load average {os.getloadavg()[0]:.1f} after the runs")
        dump, one, two = (seconds for seconds, _ in best.values())
        print(f"local[2] / local[1] speed-up: {one / two:.2f}x (target >= 1.6x)")
        print(
            f"per core: local[1] at {dump / one:.2f}x and local[2] at {dump / (2 * two):.2f}x the rows/s of the "
            f"single-process dump (target >= 0.5x)"
        )
    finally:
        for w in workers:
            w.close()
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
