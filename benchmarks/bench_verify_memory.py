#!/usr/bin/env python3
"""verify's peak memory and throughput against store size: each store verified in a fresh process whose
/proc/PID/status is sampled every 20 ms for its anonymous (RssAnon) and file-backed (RssFile) resident
memory; next to it, a whole-file zlib.crc32 pass over the same commitlog in the same run (the yardstick).

    python benchmarks/bench_verify_memory.py STORE_ROOT [STORE_ROOT ...] [--memory 256M] [--jobs 2] [--deep]

A STORE_ROOT is what benchmarks/bench_verify.py builds (a `store` directory and `broker.conf`), e.g. with
`python -c 'import bench_verify, pathlib; bench_verify.build_store(pathlib.Path("/dev/shm/v4"), 4 << 30)'`.
The issue's target: peak anonymous memory flat in the store's size (the largest store within 1.15x the
smallest) and at most 512 MiB at the default --memory.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
import zlib
from pathlib import Path


def sample(pid: int) -> tuple[int, int]:
    """(RssAnon, RssFile) of a process in bytes, (0, 0) once it is gone."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0, 0
    values = {}
    for line in text.splitlines():
        if line.startswith(("RssAnon:", "RssFile:")):
            name, kb = line.split()[:2]
            values[name] = int(kb) * 1024
    return values.get("RssAnon:", 0), values.get("RssFile:", 0)


def run_verify(root: Path, memory: str, jobs: int, deep: bool) -> dict:
    code = (
        "import sys, time; from rmqctl.config import load_config; from rmqctl.store import Store; "
        "from rmqctl.budget import parse_size; from rmqctl.checks.verify import verify; "
        f"s = Store({str(root / 'store')!r}, load_config({str(root / 'broker.conf')!r})); "
        "from rmqctl.engine import kernels; kernels.load_numba(); "  # start-up (numba loads with the first kernel)
        f"t = time.perf_counter(); r = verify(s, jobs={jobs}, deep={deep}, memory=parse_size({memory!r})); "
        "print(time.perf_counter() - t, r.exit_code, r.stats['records'], len(r.findings))"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    anon = file = 0
    while proc.poll() is None:
        a, f = sample(proc.pid)
        anon, file = max(anon, a), max(file, f)
        time.sleep(0.02)
    seconds, exit_code, records, findings = proc.stdout.read().split()
    return dict(
        seconds=float(seconds),
        exit_code=int(exit_code),
        records=int(records),
        findings=int(findings),
        anon=anon,
        file=file,
    )


def crc_pass(root: Path) -> float:
    began = time.perf_counter()
    for p in sorted((root / "store" / "commitlog").iterdir()):
        with open(p, "rb") as fh:
            crc = 0
            while chunk := fh.read(1 << 24):
                crc = zlib.crc32(chunk, crc)
    return time.perf_counter() - began


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("roots", nargs="+", type=Path)
    ap.add_argument("--memory", default="256M")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--deep", action="store_true")
    args = ap.parse_args()
    print(f"verify --memory {args.memory} --jobs {args.jobs}{' --deep' if args.deep else ''}")
    print(
        f"{'store':>10} {'records':>10} {'seconds':>8} {'GB/s':>6} {'x crc32':>8} {'peak anon':>10} "
        f"{'peak file':>10} {'exit':>4}"
    )
    first = None
    for root in args.roots:
        size = sum(p.stat().st_size for p in (root / "store" / "commitlog").iterdir())
        yardstick = crc_pass(root)
        r = run_verify(root, args.memory, args.jobs, args.deep)
        first = first or r["anon"]
        print(
            f"{size / (1 << 30):>8.1f}Gi {r['records']:>10} {r['seconds']:>8.2f} {size / r['seconds'] / 1e9:>6.2f} "
            f"{yardstick / r['seconds']:>8.2f} {r['anon'] / (1 << 20):>8.0f}Mi {r['file'] / (1 << 20):>8.0f}Mi "
            f"{r['exit_code']:>4}   (anon {r['anon'] / first:.2f}x the first store's)"
        )


if __name__ == "__main__":
    main()
