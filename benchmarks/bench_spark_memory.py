#!/usr/bin/env python3
"""Peak memory of the Spark `rocketmq` source's tasks against store size: `rmqctl spark export` (local[1]) of
synthetic stores of 1 and 4 GiB in 1 GiB commitlog files (a task is a file), with the peak RssAnon of every
Python process under the command (Spark's Python workers, which run the tasks) sampled from /proc every
20 ms. The JVM is Spark's own and not counted. The target of the stores-of-any-size issue: flat in the
store's size (the largest store within 1.15x the smallest) and at most 512 MiB.

    python benchmarks/bench_spark_memory.py [--sizes-gib 1,4] [--dir /dev/shm]

The stores are bench_scale.py's (written to --dir, tmpfs by default, and deleted afterwards).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import time
from pathlib import Path

from bench_scale import GIB, SAMPLE_SECONDS, extend_store


def descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            for thread in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{thread}/children") as f:
                    children = [int(c) for c in f.read().split()]
                out += children
                todo += children
        except OSError:  # gone meanwhile
            pass
    return out


def python_anon_mib(pid: int) -> int | None:
    """RssAnon of a Python process, None for any other (the JVM, shells) or one that is gone."""
    try:
        exe = os.path.basename(os.readlink(f"/proc/{pid}/exe"))
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    if not exe.startswith("python"):
        return None
    return next(int(line.split()[1]) // 1024 for line in status.splitlines() if line.startswith("RssAnon:"))


def export_peak(root: Path, out: Path) -> tuple[float, int]:
    """(seconds, peak RssAnon of the Python workers) of one export."""
    began = time.perf_counter()
    proc = subprocess.Popen(
        [
            "rmqctl",
            "spark",
            "export",
            "--store",
            str(root / "store"),
            "--broker-config",
            str(root / "broker.conf"),
            "--out",
            str(out),
            "--master",
            "local[1]",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    peak = 0
    while proc.poll() is None:
        for p in descendants(proc.pid):  # (the command itself, the Spark driver's side, is not a task)
            peak = max(peak, python_anon_mib(p) or 0)
        time.sleep(SAMPLE_SECONDS)
    if proc.returncode != 0:
        raise SystemExit(f"spark export of {root}: exit {proc.returncode}: {proc.stderr.read().decode()[-2000:]}")
    return time.perf_counter() - began, peak


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes-gib", default="1,4", help="store sizes, in GiB of commitlog, smallest first")
    ap.add_argument("--dir", default="/dev/shm" if os.path.isdir("/dev/shm") else "/tmp")
    args = ap.parse_args()
    rows = []
    for gib in (int(x) for x in args.sizes_gib.split(",")):
        root, out = (
            Path(args.dir) / f"rmqctl-bench-spark-memory-{gib}",
            Path(args.dir) / f"rmqctl-bench-spark-out-{gib}",
        )
        try:
            extend_store(root, GIB, gib)
            seconds, peak = export_peak(root, out)
        finally:
            shutil.rmtree(root, ignore_errors=True)
            shutil.rmtree(out, ignore_errors=True)
        rows.append((gib, seconds, peak))
        print(
            f"{gib:3d} GiB: spark export local[1] {seconds:6.1f} s (whole command, Spark's start-up included), "
            f"peak RssAnon of a Python worker {peak} MiB",
            flush=True,
        )
    print(f"largest / smallest store: peak {rows[-1][2] / rows[0][2]:.2f}x, time {rows[-1][1] / rows[0][1]:.1f}x")


if __name__ == "__main__":
    main()
