#!/usr/bin/env python3
"""Memory and time of every store-wide command on synthetic stores of growing size (1, 4 and 16 GiB by
default), to show that memory stays flat and time linear (the "stores of any size" issue).

    python benchmarks/bench_scale.py [--sizes-gib 1,4,16] [--file-mib 1024] [--dir /work/rmqctl-bench-scale] [--keep]
    python benchmarks/bench_scale.py --sizes-gib 1,4          # the quick run

The store is written once on disk (not tmpfs: it would count against RAM) with bench_verify's messages
(~1.1 KiB, 3 topics x 4 queues, TAGS, 2 KEYS and a UNIQ_KEY each) in commitlog files of --file-mib MiB
(the broker's default 1 GiB), and grown from one size to the next. Its consumequeues and index are made
by rmqctl's own `rebuild consumequeue` and `rebuild index` (those runs are the "rebuild ... (real)" rows).
Every command runs as `python -m rmqctl ...` in a fresh process; its /proc/PID/status is sampled every
20 ms: peak RssAnon (anonymous memory: heap, numpy arrays, thread stacks; what the budget bounds) and peak
RssFile (mapped file pages resident in the process: the page cache it pins). Throughput is commitlog bytes
over wall time, next to the yardstick measured in the same run: a zlib.crc32 pass over the same files (warm
cache, the faster of 16 MiB reads and a whole-file map, as bench_verify.py). The last table gives, per
command, the largest size's figures over the smallest's (targets: memory <= 1.15x, time <= 17x for 16/1).
The store is deleted at the end unless --keep.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

from bench_verify import bench_message, crc_mapped, crc_reads

from rmqctl import schema as S

SAMPLE_SECONDS = 0.02
GIB = 1 << 30


def extend_store(root: Path, file_size: int, files: int) -> dict:
    """Grow the store under `root` to `files` full commitlog files (each ending in its BLANK record),
    continuing the message sequence where the last run left it (state.json), and write its checkpoint.
    Files past `files` (a smaller size after a larger one, or what `append` added) are removed; the
    consumequeues and index are dropped, to be rebuilt by the bench."""
    store, state_path = root / "store", root / "state.json"
    conf = root / "broker.conf"
    state = json.loads(state_path.read_text()) if state_path.exists() else None
    if state is None or state["file_size"] != file_size or state["files"] > files:
        shutil.rmtree(root, ignore_errors=True)
        (store / "commitlog").mkdir(parents=True)
        conf.write_text(
            f"mappedFileSizeCommitLog={file_size}\nbrokerIP1=192.168.0.10\nlistenPort=10911\nfileReservedTime=87600\n"
        )
        state = {"file_size": file_size, "files": 0, "messages": 0, "queue_offsets": {}, "last_uniq": None}
    for name in ("consumequeue", "index"):
        shutil.rmtree(store / name, ignore_errors=True)
    for p in (store / "commitlog").iterdir():
        if int(p.name) >= state["files"] * file_size:
            p.unlink()
    queue_offsets = {tuple(json.loads(k)): v for k, v in state["queue_offsets"].items()}
    began = time.monotonic()
    n = state["messages"]
    while state["files"] < files:
        k = state["files"]
        rnd = random.Random(20240601 + k)
        buf = bytearray(file_size)
        pos = 0
        while True:
            m, record = bench_message(rnd, n, k * file_size + pos, queue_offsets)
            if pos + len(record) + S.END_FILE_MIN_BLANK_LENGTH > file_size:
                S.BLANK.pack_into(buf, pos, file_size - pos, S.MAGIC_BLANK)
                break
            buf[pos : pos + len(record)] = record
            queue_offsets[(m.topic, m.queueId)] = m.queueOffset + 1
            state["last_uniq"] = m.properties["UNIQ_KEY"]
            pos += len(record)
            n += 1
        (store / "commitlog" / f"{k * file_size:020d}").write_bytes(buf)
        state["files"], state["messages"] = k + 1, n
    last_ts = 1_700_000_000_000 + n - 1
    (store / "checkpoint").write_bytes(
        S.CHECKPOINT_HEAD.pack(last_ts, last_ts, 0, 0, 0).ljust(S.CHECKPOINT_FILE_SIZE, b"\0")
    )
    state["queue_offsets"] = {json.dumps(list(k)): v for k, v in queue_offsets.items()}
    state_path.write_text(json.dumps(state))
    if time.monotonic() - began > 1:
        print(f"  generated up to {files} file(s), {n} messages, in {time.monotonic() - began:.0f} s", flush=True)
    return state


def crc_pass(files: list[Path]) -> float:
    """The yardstick: the faster of a 16 MiB-read and a whole-file-map zlib.crc32 pass (warm cache)."""
    times = []
    for fn in (crc_reads, crc_mapped, crc_reads, crc_mapped):
        t = time.perf_counter()
        fn(files)
        times.append(time.perf_counter() - t)
    return min(times)


def _kib(status: str, field: str) -> int:
    for line in status.splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def measured(args: list[str], stdin: bytes | None = None, ok=(0,)) -> dict:
    """Run `python -m rmqctl ARGS` in a fresh process, sampling its memory until it exits."""
    began = time.perf_counter()
    # cwd: `-m` puts it first on sys.path, where it must not shadow the rmqctl of PYTHONPATH
    proc = subprocess.Popen(
        [sys.executable, "-m", "rmqctl", *args],
        cwd="/",
        stdout=subprocess.DEVNULL,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    peak = {"RssAnon": 0, "RssFile": 0}
    err = []
    reader = threading.Thread(target=lambda: err.append(proc.stderr.read()))
    reader.start()
    if stdin is not None:
        proc.stdin.write(stdin)
        proc.stdin.close()
    status_path = f"/proc/{proc.pid}/status"
    while proc.poll() is None:
        try:
            with open(status_path) as fh:
                status = fh.read()
        except OSError:
            break
        for field in peak:
            peak[field] = max(peak[field], _kib(status, field))
        time.sleep(SAMPLE_SECONDS)
    proc.wait()
    reader.join()
    seconds = time.perf_counter() - began
    if proc.returncode not in ok:
        raise SystemExit(f"rmqctl {' '.join(args)}: exit {proc.returncode}: {err[0].decode()[-2000:]}")
    return {"seconds": seconds, "anon_mib": peak["RssAnon"] / 1024, "file_mib": peak["RssFile"] / 1024}


def append_batch(state: dict, count: int) -> bytes:
    lines = [
        json.dumps(
            {
                "topic": "AppendTopic",
                "queueId": i % 4,
                "body": f"appended {i} " * 60,
                "properties": {"KEYS": f"APPEND-{i}", "TAGS": "TagA"},
            }
        )
        for i in range(count)
    ]
    return ("\n".join(lines) + "\n").encode()


def commands(store_args: list[str], state: dict, memory: list[str]) -> list[tuple[str, list[str], dict]]:
    """(label, arguments, options) of every command measured on a store that has its consumequeues and index."""
    uniq = state["last_uniq"]
    return [
        ("verify --jobs 2", ["verify", *store_args, "--jobs", "2", "--quiet", *memory], {}),
        ("verify --deep", ["verify", *store_args, "--deep", "--quiet", *memory], {}),
        ("rebuild consumequeue --dry-run", ["rebuild", "consumequeue", *store_args, "--dry-run"], {}),
        ("rebuild index --dry-run", ["rebuild", "index", *store_args, "--dry-run"], {}),
        ("repair --dry-run", ["repair", *store_args, "--dry-run"], {}),
        ("clean --check", ["clean", *store_args, "--check"], {"ok": (0, 1)}),
        ("query key", ["query", "key", "TopicTest", "USER-03", *store_args, "--max", "64"], {}),
        ("msgid lookup (UNIQ_KEY)", ["msgid", "lookup", uniq, *store_args], {}),
        ("dump commitlog > /dev/null", ["dump", "commitlog", *store_args], {}),
        ("append (1000 messages)", ["append", *store_args, "--jsonl", "-"], {"stdin": append_batch(state, 1000)}),
    ]


def warm_up(root: Path, memory: list[str]):
    """Every command once on a one-file 32 MiB store, unmeasured: numba compiles the kernels (or loads its
    cache) there, not in the first measured run."""
    state = extend_store(root, 32 << 20, 1)
    store_args = ["--store", str(root / "store"), "--broker-config", str(root / "broker.conf")]
    try:
        for label, cmd, opts in [
            ("", ["rebuild", "consumequeue", *store_args, "--no-backup"], {}),
            ("", ["rebuild", "index", *store_args, "--no-backup"], {}),
            *commands(store_args, state, memory),
        ]:
            measured(cmd, stdin=opts.get("stdin"), ok=opts.get("ok", (0,)))
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes-gib", default="1,4,16", help="store sizes, in GiB of commitlog, smallest first")
    ap.add_argument("--file-mib", type=int, default=1024, help="commitlog file size (mappedFileSizeCommitLog)")
    ap.add_argument("--dir", default="/work/rmqctl-bench-scale", help="where the store is written (a disk, not tmpfs)")
    ap.add_argument("--memory", default=None, help="pass --memory SIZE to the commands that take it")
    ap.add_argument("--keep", action="store_true", help="keep the store afterwards (later runs reuse and grow it)")
    args = ap.parse_args()
    sizes = sorted(float(s) for s in args.sizes_gib.split(","))
    file_size = args.file_mib << 20
    root = Path(args.dir)
    memory = ["--memory", args.memory] if args.memory else []
    rows: dict[str, dict[float, dict]] = {}
    yardstick: dict[float, float] = {}
    print(
        f"{os.cpu_count()} CPUs; store under {root}; commitlog files of {args.file_mib} MiB; "
        f"memory sampled from /proc/PID/status every {SAMPLE_SECONDS * 1000:.0f} ms",
        flush=True,
    )
    try:
        warm_up(root.with_name(root.name + "-warm-up"), memory)
        for gib in sizes:
            files = max(1, round(gib * GIB / file_size))
            state = extend_store(root, file_size, files)
            conf, store = root / "broker.conf", root / "store"
            store_args = ["--store", str(store), "--broker-config", str(conf)]
            logs = sorted((store / "commitlog").iterdir())
            total = sum(p.stat().st_size for p in logs)
            yardstick[gib] = crc_pass(logs)
            print(
                f"{gib:g} GiB: {len(logs)} file(s), {state['messages']} messages; crc32 pass "
                f"{yardstick[gib]:.2f} s ({total / yardstick[gib] / 1e6:.0f} MB/s)",
                flush=True,
            )
            runs = [
                ("rebuild consumequeue (real)", ["rebuild", "consumequeue", *store_args, "--no-backup"], {}),
                ("rebuild index (real)", ["rebuild", "index", *store_args, "--no-backup"], {}),
            ]
            runs += commands(store_args, state, memory)
            for label, cmd, opts in runs:
                r = measured(cmd, stdin=opts.get("stdin"), ok=opts.get("ok", (0,)))
                r["mbs"] = total / r["seconds"] / 1e6
                r["of_crc"] = yardstick[gib] / r["seconds"]
                rows.setdefault(label, {})[gib] = r
                print(
                    f"  {label:32s} {r['seconds']:8.2f} s {r['mbs']:7.0f} MB/s {r['of_crc']:6.1%} of crc32  "
                    f"anon {r['anon_mib']:7.0f} MiB  file {r['file_mib']:7.0f} MiB",
                    flush=True,
                )
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    head = "| command | " + " | ".join(f"{g:g} GiB: anon / file MiB, s, % of crc32" for g in sizes)
    print("\n" + head + f" | {sizes[-1]:g}/{sizes[0]:g} anon | {sizes[-1]:g}/{sizes[0]:g} time |")
    print("|---" * (len(sizes) + 3) + "|")
    for label, by_size in rows.items():
        cells = [
            f"{r['anon_mib']:.0f} / {r['file_mib']:.0f}, {r['seconds']:.1f}, {r['of_crc']:.0%}"
            for r in (by_size[g] for g in sizes)
        ]
        lo, hi = by_size[sizes[0]], by_size[sizes[-1]]
        print(
            f"| {label} | " + " | ".join(cells) + f" | {hi['anon_mib'] / lo['anon_mib']:.2f} | "
            f"{hi['seconds'] / lo['seconds']:.1f} |"
        )
    print("yardstick (crc32 pass): " + ", ".join(f"{g:g} GiB {s:.2f} s" for g, s in yardstick.items()))


if __name__ == "__main__":
    main()
