"""Throughput of `rmqctl append` (the whole command, start-up included) next to RocketMQ 4.9.7's own write path,
java-oracle's append-bench.sh (DefaultMessageStore.putMessage of the same messages, one thread, waited until the
reput has dispatched them to consumequeue and index), in the same run, on the same filesystem.

The messages are the same for both: `--messages` of `--body` bytes ("abc...xyz" repeated), 4 topics x 4 queues,
a TAGS and two KEYS words each. rmqctl reads them as JSON Lines in the `dump commitlog --body base64` shape (the
migration path: `dump | append`) and, with --parquet, as the Parquet file Store.scan().table() of the JSON Lines
store writes. Each figure is one run into an empty store made with --create on the default geometry (1 GiB
commitlog files); it prints msgs/s, MB/s of records, the ratio to RocketMQ's dispatchedMsgsPerS, and the command's
peak RSS.

    python benchmarks/bench_append.py [--messages 100000] [--body 1024] [--dir /dev/shm] [--parquet] [--repeat 3]
"""

from __future__ import annotations

import argparse
import base64
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TOPICS = ["OrderTopic", "PaymentTopic", "AuditTopic", "BenchTopic-7"]
QUEUES = 4
ALPHABET = b"abcdefghijklmnopqrstuvwxyz"


def messages(n: int, body_len: int):
    """(topic, queueId, tags, keys, body) of each message, the same for Java and rmqctl."""
    body = (ALPHABET * (body_len // len(ALPHABET) + 1))[:body_len]
    for i in range(n):
        yield (
            TOPICS[i % len(TOPICS)],
            (i // len(TOPICS)) % QUEUES,
            f"Tag{'ABCDE'[i % 5]}",
            f"ORDER-{i:09d} USER-{i % 9973:05d}",
            body,
        )


def write_inputs(base: Path, n: int, body_len: int) -> tuple[Path, Path]:
    tsv, jsonl = base / "messages.tsv", base / "messages.jsonl"
    encoded = None
    with open(tsv, "w") as t, open(jsonl, "w") as j:
        for topic, qid, tags, keys, body in messages(n, body_len):
            t.write(f"{topic}\t{qid}\t{tags}\t{keys}\t{len(body)}\n")
            encoded = encoded or base64.b64encode(body).decode()
            j.write(
                json.dumps(
                    {
                        "topic": topic,
                        "queueId": qid,
                        "bornTimestamp": 1_700_000_000_000,
                        "bornHost": "10.0.0.1:40000",
                        "storeHost": "192.168.0.10:10911",
                        "properties": {"TAGS": tags, "KEYS": keys},
                        "bodyEncoding": "base64",
                        "body": encoded,
                    }
                )
                + "\n"
            )
    return tsv, jsonl


def measured(cmd: list[str], out) -> tuple[float, float, float, int]:
    """Wall seconds, CPU seconds (user + system), peak RSS (MiB) and exit status of one command, stdout to `out`."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE)
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    secs = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed (exit {proc.returncode}): {err.decode()[-1000:]}")
    return secs, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, proc.returncode


def java_append(base: Path, tsv: Path) -> dict | None:
    home = os.environ.get("RMQ_JAVA_ORACLE")
    if not home:
        print("RMQ_JAVA_ORACLE is not set: no ratio to RocketMQ's putMessage")
        return None
    with open(base / "java.out", "wb") as out:
        _, cpu, peak, _ = measured(
            [str(Path(home) / "append-bench.sh"), str(base / "java-store"), str(1 << 30), str(tsv)], out
        )
    shutil.rmtree(base / "java-store", ignore_errors=True)
    java = json.loads((base / "java.out").read_text().strip().splitlines()[-1])
    java.update(cpuSecs=cpu, peakMiB=peak)
    return java


def rmqctl_append(base: Path, name: str, args: list[str], n: int) -> tuple[float, float, float, int]:
    """Wall seconds, CPU seconds, peak RSS (MiB) and record bytes of one `rmqctl append` into a new store."""
    store = base / name
    with open(base / "acks.jsonl", "wb") as out:
        secs, cpu, peak, _ = measured(
            [sys.executable, "-m", "rmqctl", "append", "--store", str(store), "--create", *args], out
        )
    acks = (base / "acks.jsonl").read_bytes().count(b"\n")
    if acks != n:
        raise SystemExit(f"rmqctl acknowledged {acks} messages, not {n}")
    end = in_child(_commitlog_end, store)
    shutil.rmtree(store)
    return secs, cpu, peak, end


def in_child(fn, *args):
    """fn(*args) in a forked process: this one stays small. A child's ru_maxrss counts the resident set its
    parent had at the fork (Linux keeps the old memory's high-water mark across exec), so a parent that had
    read a store or a Parquet table would show as the peak of every command it measures after."""
    with multiprocessing.get_context("fork").Pool(1) as pool:
        return pool.apply(fn, args)


def _commitlog_end(store: Path) -> int:
    """The append point, from the store itself (every record written is counted once)."""
    from rmqctl.store import Store  # the benchmark's own reading of what rmqctl wrote

    s = Store(store)
    try:
        total = 0
        for b in s.scan().batches():
            total += int(b.column("storeSize").to_numpy().sum())
        return total
    finally:
        s.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--body", type=int, default=1024)
    ap.add_argument("--dir", default="/dev/shm" if os.path.isdir("/dev/shm") else None)
    ap.add_argument("--parquet", action="store_true", help="also time --parquet input")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each, the best kept (RocketMQ's and rmqctl's alike)")
    args = ap.parse_args()
    # the package as pip installs it, byte-compiled: without it (PYTHONDONTWRITEBYTECODE) every run compiles
    # rmqctl's sources again, about 0.2 s of start-up that no installation pays
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(Path(__file__).resolve().parents[1] / "rmqctl")],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    base = Path(tempfile.mkdtemp(prefix="rmqctl-bench-append-", dir=args.dir))
    try:
        tsv, jsonl = write_inputs(base, args.messages, args.body)
        print(
            f"{args.messages} messages of {args.body} B, {len(TOPICS)} topics x {QUEUES} queues; {os.cpu_count()} CPUs, "
            f"load average {os.getloadavg()[0]:.1f}; stores in {base}"
        )
        javas = [java_append(base, tsv) for _ in range(args.repeat)]
        java = max(javas, key=lambda j: j["dispatchedMsgsPerS"]) if javas[0] is not None else None
        if java is not None:
            print(
                f"RocketMQ 4.9.7 putMessage + dispatch (1 thread): {java['dispatchedMsgsPerS'] / 1e3:7.1f} k msgs/s "
                f"{java['dispatchedMBs']:6.0f} MB/s (put {java['putSecs']:.2f} s, dispatched {java['dispatchedSecs']:.2f} s, "
                f"with shutdown {java['withShutdownSecs']:.2f} s; the JVM's CPU {java['cpuSecs']:.2f} s, "
                f"peak RSS {java['peakMiB']:.0f} MiB)"
            )
        runs = [("jsonl", ["--jsonl", str(jsonl)])]
        if args.parquet:
            runs.append(("parquet", ["--parquet", str(in_child(export_parquet, base, jsonl))]))
        for name, cmd in runs:
            secs, cpu, peak, end = min(
                rmqctl_append(base, f"store-{name}", cmd, args.messages) for _ in range(args.repeat)
            )
            rate = args.messages / secs
            ratio = (
                f"  {rate / java['dispatchedMsgsPerS']:5.2f}x RocketMQ (CPU: {java['cpuSecs'] / cpu:4.2f}x the JVM's)"
                if java
                else ""
            )
            print(
                f"rmqctl append --{name:8s} {secs:6.2f} s {rate / 1e3:7.1f} k msgs/s {end / secs / 1e6:6.0f} MB/s"
                f"{ratio}  CPU {cpu:.2f} s, peak RSS {peak:.0f} MiB (whole command, start-up included)"
            )
        print(f"load average {os.getloadavg()[0]:.1f} at the end")
    finally:
        shutil.rmtree(base)


def export_parquet(base: Path, jsonl: Path) -> Path:
    """The Parquet file Store.scan().table() writes for a store holding the messages."""
    import pyarrow.parquet as pq  # only for --parquet

    from rmqctl.store import Store

    store = base / "parquet-source"
    subprocess.run(
        [sys.executable, "-m", "rmqctl", "append", "--store", str(store), "--create", "--jsonl", str(jsonl)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    s = Store(store)
    try:
        path = base / "messages.parquet"
        pq.write_table(s.scan().table(), path)
    finally:
        s.close()
    shutil.rmtree(store)
    return path


if __name__ == "__main__":
    main()
