#!/usr/bin/env python3
"""The broker's recovery walk as rmqctl's writers run it: opening an existing store to append (recoverNormally
from its start file: checkMessageAndReturnSize with CRCs to the first failure) and `repair --dry-run`
(recoverAbnormally, and every earlier file checked), next to RocketMQ 4.9.7's own checkMessageAndReturnSize over
the same commitlog (java-oracle's bench.sh), measured in the same run.

    python benchmarks/bench_recovery.py [--size-mib 1024] [--dir /tmp/rmqctl-bench-verify] [--repeat 3]

The store is bench_verify.py's (one full commitlog file of ~1 KiB messages with its consumequeues and index;
generated once and reused). Rows:
- the walk alone (maintenance.append_point.append_point in a fresh interpreter, numba loaded first): the
  append point of the store, every record checked with its CRC, as the broker's start checks it;
- `rmqctl append` of 1000 messages into a copy of the store, the whole command (start-up included);
- the same into a copy without `consumequeue/`: the catch-up (the broker's reput at start) dispatches every
  record into consumequeue and index first;
- `rmqctl repair --dry-run`, the whole command.
Each is the best of --repeat; MB/s are commitlog bytes walked over seconds (MB = 10^6 bytes), the ratio is over
RocketMQ's checker MB/s on the same file.
"""

from __future__ import annotations

import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import javabench
from bench_verify import build_store, store_arguments

from rmqctl.config import load_config
from rmqctl.store import Store

APPENDED = 1000


def timed(cmd: list[str], stdin: bytes | None = None) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, input=stdin, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t


def walk_alone(store_dir: Path, conf: Path) -> float:
    """append_point's walk in a new interpreter, numba's start-up left out (as bench_verify times verify)."""
    code = (
        "import time; from rmqctl.config import load_config; from rmqctl.store import Store; "
        "from rmqctl.maintenance.append_point import append_point; from rmqctl.engine import kernels; "
        f"kernels.load_numba(); s = Store({str(store_dir)!r}, load_config({str(conf)!r})); "
        "t = time.perf_counter(); p = append_point(s, s.config, 4, 'default'); "
        "print(time.perf_counter() - t, p.end)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    return float(out[0])


def append_into_copy(store_dir: Path, conf: Path, scratch: Path, lost: tuple[str, ...] = ()) -> float:
    """`rmqctl append` into a copy of the store without the parts named in `lost`."""
    copy = scratch / "store"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(store_dir, copy, ignore=lambda d, names: [n for n in names if Path(d) == store_dir and n in lost])
    lines = b"".join(
        json.dumps({"topic": "AppendTopic", "queueId": i % 4, "body": f"appended {i} " * 60}).encode() + b"\n"
        for i in range(APPENDED)
    )
    cmd = [sys.executable, "-m", "rmqctl", "append", "--store", str(copy), "--broker-config", str(conf), "--jsonl", "-"]
    return timed(cmd, lines)


def main():
    args = store_arguments(__doc__, "/tmp/rmqctl-bench-verify")
    root = Path(args.dir)
    conf = build_store(root, args.size_mib << 20)
    store_dir = root / "store"
    store = Store(store_dir, load_config(conf))
    walked = sum(min(f.length, store.commitlog.file_size) for f in store.commitlog.files)
    records = sum(len(c) for c in store.scan().chunks())
    store.close()
    scratch = Path(tempfile.mkdtemp(prefix="rmqctl-bench-recovery-", dir=root.parent))
    try:
        repair = [sys.executable, "-m", "rmqctl", "repair", "--store", str(store_dir), "--broker-config", str(conf)]
        rows = [
            ("the append point's walk alone", min(walk_alone(store_dir, conf) for _ in range(args.repeat))),
            (
                f"rmqctl append of {APPENDED} messages (whole command)",
                min(append_into_copy(store_dir, conf, scratch) for _ in range(args.repeat)),
            ),
            (
                f"rmqctl append of {APPENDED}, consumequeue/ lost",
                min(append_into_copy(store_dir, conf, scratch, ("consumequeue",)) for _ in range(args.repeat)),
            ),
            ("rmqctl repair --dry-run (whole command)", min(timed(repair + ["--dry-run"]) for _ in range(args.repeat))),
        ]
    finally:
        shutil.rmtree(scratch)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # (before the JVM's)
    java = javabench.rocketmq_check(store_dir / "commitlog", args.size_mib << 20, records)
    print(f"commitlog: {walked / 2**20:.0f} MiB, {records} messages; best of {args.repeat}")
    print(javabench.describe(java))
    for label, secs in rows:
        print(
            f"{label:48s} {secs:6.2f} s {walked / secs / 1e6:7.0f} MB/s{javabench.ratio(java, walked / secs / 1e6, records / secs)}"
        )
    print(f"peak RSS of an rmqctl process {peak:.0f} MiB (the pages of the file it has mapped included)")


if __name__ == "__main__":
    main()
