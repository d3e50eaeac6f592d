"""Throughput and peak memory of reading a commitlog: `rmqctl dump commitlog --format jsonl --body none` and
`--body base64` (to /dev/null; with one writer thread, -j 1, and with one per core), the library's reference scan (Store.scan().records(): a Message per record),
the engine's Arrow batches (Store.scan().batches(), on one thread and with jobs=2) and a header walk (TOTALSIZE and magic only), next to a
plain zlib.crc32 pass over the same file (the yardstick, "of crc32"), all in the same run.

The commitlog is generated first (benchmarks/bench_rebuild.generate: records built with
rmqctl.record.encode_record, ~1 KiB messages with TAGS/KEYS/UNIQ_KEY, one file of --size bytes ending in a
BLANK), on tmpfs (/dev/shm) when there is one, so the figures are CPU figures, not disk figures. Each mode
runs in its own process, so its peak RSS (wait4's ru_maxrss) is its own; a mode that maps the file counts
the file pages it touches (they are page cache, shared and reclaimable). MB = 10^6 bytes.

    python benchmarks/bench_dump.py [--size 1G] [--runs 1] [--dir /dev/shm]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

import javabench
from bench_rebuild import generate, header_walk  # the same generator and walk as the rebuild benchmark

from rmqctl.engine import kernels as native
from rmqctl.config import BrokerConfig
from rmqctl.store import Store, offset_to_name

READ_CHUNK = 8 << 20
# the command of the interpreter running the bench (its virtual environment's), else the one on PATH
RMQCTL = (
    str(Path(sys.executable).with_name("rmqctl"))
    if Path(sys.executable).with_name("rmqctl").exists()
    else shutil.which("rmqctl") or "rmqctl"
)
UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def crc_pass(path: Path) -> int:
    """The floor: read every byte once and CRC it (buffered reads, no mapping)."""
    crc = 0
    with open(path, "rb", buffering=0) as f:
        buf = bytearray(READ_CHUNK)
        view = memoryview(buf)
        while n := f.readinto(buf):
            crc = zlib.crc32(view[:n], crc)
    return crc


def library_scan(root: Path, file_size: int) -> int:
    store = Store(root, BrokerConfig(mappedFileSizeCommitLog=file_size))
    n = sum(1 for _ in store.scan().records())
    store.close()
    return n


def engine_batches(root: Path, file_size: int, jobs: int = 1) -> int:
    """The library's Arrow path: every record as columns (Store.scan().batches(jobs=jobs))."""
    store = Store(root, BrokerConfig(mappedFileSizeCommitLog=file_size))
    n = sum(batch.num_rows for batch in store.scan().batches(jobs=jobs))
    store.close()
    return n


STEADY_PASSES = 3  # the batches' passes after the first, as RocketMQ's checker times its passes after its warm-up


def measure(mode: str, root: Path, file_size: int) -> dict:
    """Runs in the child: one mode, timed without the interpreter's start-up (numba's load included: it comes
    with the first kernel a process calls). The batches, a library call a notebook or a Spark worker makes again
    and again in one process, are timed as RocketMQ's checker is (javabench.py): the median of the passes after
    the first, which loads the kernels ("first": its time)."""
    path = root / "commitlog" / offset_to_name(0)
    if mode != "crc32":
        native.load_numba()
    t = time.perf_counter()
    if mode == "crc32":
        crc_pass(path)
        n = None
    elif mode == "walk":
        n = header_walk(path)
    elif mode.startswith("batches"):
        jobs = int(mode.removeprefix("batches") or 1)
        n = engine_batches(root, file_size, jobs)
        first, passes, cpus = time.perf_counter() - t, [], []
        for _ in range(STEADY_PASSES):
            t, c = time.perf_counter(), time.process_time()
            engine_batches(root, file_size, jobs)
            passes.append(time.perf_counter() - t)
            cpus.append(time.process_time() - c)
        return {"seconds": statistics.median(passes), "messages": n, "first": first, "cpu": statistics.median(cpus)}
    else:
        n = library_scan(root, file_size)
    return {"seconds": time.perf_counter() - t, "messages": n}


def run_child(args: list[str], stdout=subprocess.PIPE) -> tuple[float, str, int, float]:
    """(wall seconds, stdout, peak RSS in bytes, CPU seconds) of a child process, reaped with wait4 for its own
    rusage (on a machine other jobs load, CPU seconds say what the work costs where wall time cannot)."""
    t = time.perf_counter()
    # as a user runs it: Python may cache compiled modules (a development shell often forbids it, which
    # would add the compilation of every module to each start-up)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    proc = subprocess.Popen(args, stdout=stdout, stderr=subprocess.PIPE, env=env)
    out = proc.stdout.read() if proc.stdout else b""
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed: {err.decode(errors='replace')[-500:]}")
    return wall, out.decode(), usage.ru_maxrss * 1024, usage.ru_utime + usage.ru_stime


def parse_size(text: str) -> int:
    text = text.strip().upper().rstrip("B").rstrip("I")
    unit = UNITS.get(text[-1:], 1)
    return int(float(text.rstrip("KMG")) * unit)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="1G", help="commitlog size: 1G (default), 256M, ...")
    ap.add_argument("--runs", type=int, default=1, help="runs per mode; the median is printed")
    ap.add_argument("--dir", default="/dev/shm" if os.path.isdir("/dev/shm") else None)
    ap.add_argument("--only", help="the modes whose names hold this text (the crc32 pass is always run)")
    ap.add_argument("--measure", help=argparse.SUPPRESS)
    ap.add_argument("--root", help=argparse.SUPPRESS)
    args = ap.parse_args()
    size = parse_size(args.size)
    if args.measure:
        print(json.dumps(measure(args.measure, Path(args.root), size)))
        return

    base = Path(tempfile.mkdtemp(prefix="rmqctl-bench-dump-", dir=args.dir))
    try:
        root = base / "store"
        t = time.perf_counter()
        messages, _ = generate(root, size)
        conf = base / "broker.conf"
        conf.write_text(f"mappedFileSizeCommitLog={size}\nbrokerIP1=192.168.0.10\n")
        print(
            f"generated {messages} messages of {size / messages:.0f} bytes on average, {size / 1e6:.0f} MB, "
            f"in {time.perf_counter() - t:.1f} s under {base}"
        )
        crc_pass(root / "commitlog" / offset_to_name(0))  # warm the page cache for every mode alike
        me = [sys.executable, str(Path(__file__).resolve()), "--size", str(size), "--root", str(root), "--measure"]
        modes = [
            ("zlib.crc32 pass", lambda: run_child(me + ["crc32"])),
            ("header walk", lambda: run_child(me + ["walk"])),
            ("library scan (Store.scan)", lambda: run_child(me + ["scan"])),
            ("engine batches (Arrow)", lambda: run_child(me + ["batches"])),
            ("engine batches, jobs 2", lambda: run_child(me + ["batches2"])),
        ] + [
            (
                f"rmqctl dump --body {body} -j {jobs}",
                lambda body=body, jobs=jobs: run_child(
                    [
                        RMQCTL,
                        "dump",
                        "commitlog",
                        "--store",
                        str(root),
                        "--broker-config",
                        str(conf),
                        "--format",
                        "jsonl",
                        "--body",
                        body,
                        "--jobs",
                        str(jobs),
                    ],
                    stdout=subprocess.DEVNULL,
                ),
            )
            for body in ("none", "base64")
            for jobs in (1, native.available_cores())
        ]
        # unmeasured: a first dump of the installation builds its compiled entries (rmqctl/engine/aot.py)
        run_child([RMQCTL, "dump", "commitlog", "--store", str(root), "--broker-config", str(conf), "--limit", "1"])
        java = javabench.rocketmq_check(root / "commitlog", size, messages)
        print(javabench.describe(java))
        print(
            f"{'mode':28s} {'seconds':>8s} {'MB/s':>8s} {'msgs/s':>11s} {'peak RSS':>10s} {'of crc32':>9s} "
            f"{'CPU s':>7s} {'msgs/CPU s':>11s}"
        )
        crc_secs, firsts = None, []
        modes = [mode for k, mode in enumerate(modes) if k == 0 or args.only is None or args.only in mode[0]]
        for name, fn in modes:
            runs = []
            for _ in range(args.runs):
                wall, out, rss, cpu = fn()
                result = json.loads(out) if out.strip() else {"seconds": wall, "messages": messages}
                if result["messages"] not in (None, messages):
                    raise SystemExit(f"{name}: {result['messages']} messages, generated {messages}")
                runs.append((result["seconds"], rss, result["messages"], result.get("cpu", cpu)))
                if "first" in result:
                    firsts.append(f"{name}: {result['first']:.2f} s")
            secs = statistics.median(r[0] for r in runs)
            rss = max(r[1] for r in runs)
            rate = f"{messages / secs / 1e6:9.2f} M" if runs[0][2] else f"{'-':>11s}"
            crc_secs = crc_secs or secs  # the first mode, the zlib.crc32 pass, is the yardstick
            cpu = statistics.median(r[3] for r in runs)
            versus = javabench.ratio(java, size / secs / 1e6, messages / secs) if runs[0][2] else ""
            print(
                f"{name:28s} {secs:8.2f} {size / secs / 1e6:8.0f} {rate} {rss / (1 << 20):7.0f} MiB {crc_secs / secs:8.0%} "
                f"{cpu:7.2f} {messages / cpu / 1e6:9.2f} M{versus}"
            )
        print(
            "(rmqctl dump: wall time of the whole command, start-up included, -j: writer threads; the batches: the "
            f"median of {STEADY_PASSES} passes after a first in the same process, as RocketMQ's checker is timed; the "
            "others: the work alone. CPU s: the batches' of a pass, the others' of the whole child process, start-up "
            "included)"
        )
        if firsts:
            print("first pass of a process (its kernels loading): " + "; ".join(firsts))
    finally:
        shutil.rmtree(base)


if __name__ == "__main__":
    main()
