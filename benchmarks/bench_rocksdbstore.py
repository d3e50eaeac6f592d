#!/usr/bin/env python3
"""verify of a store with the 5.4 RocksDB message store (rocksdbstore/: index, timer and transaction records)
against the same store without it, in one run: the bench store of bench_verify.py (one commitlog file of
--size-mib, ~1 KiB messages with 2 KEYS, TAGS and a UNIQ_KEY) and a hard-linked copy of it with the database
its records make, by IndexRocksDBStore's rules (2 key records, 1 tag record, 1 uniq-key record per message), and
a timer and a transaction record for every 1000th message (the bench messages carry no TIMER_OUT_MS, REAL_TOPIC
or __transactionId__, so those records are checked by the reference: their mismatch findings are counted, not a
failure). Target (issue 32): verify with the database within 1.2x of verify without it.

    python benchmarks/bench_rocksdbstore.py [--size-mib 1024] [--dir /tmp/rmqctl-bench-rocksdbstore] [--repeat 3]

Each figure is the best of --repeat runs, each verify in a fresh interpreter (--jobs 1), the page cache warm
for both; msgs/s is commitlog records per second of the whole verify.
"""

from __future__ import annotations

import argparse
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import rocksdict
from bench_verify import build_store

from rmqctl.config import load_config
from rmqctl.rocksdb import NewDB, compression
from rmqctl.store import Store

HOUR = 3600 * 1000
VERIFY = (
    "import resource, time; from rmqctl.config import load_config; from rmqctl.store import Store; "
    "from rmqctl.checks.verify import verify; from rmqctl.engine import kernels; kernels.load_numba(); "
    "s = Store({store!r}, load_config({conf!r})); t = time.perf_counter(); r = verify(s, jobs=1); "
    "print(time.perf_counter() - t, r.stats['records'], r.stats['findings']['total'], "
    "resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
)


def q(v: int) -> bytes:
    return struct.pack(">q", v)


def records_of(store: Store) -> dict[str, dict[bytes, bytes]]:
    """The database's keys and values for every record of the store (the layouts of formats/rocksdbstore.md)."""
    index, timer, trans, n = {}, {}, {}, 0
    for batch in store.scan().batches():
        cols = batch.select(["topic", "uniqKey", "tags", "keys", "storeTimestamp", "commitLogOffset", "storeSize"])
        for topic, uniq, tag, keys, t, off, size in zip(*(c.to_pylist() for c in cols.columns)):
            hour = q(t // HOUR * HOUR)
            middles = [f"@{topic}@K@{k}@{uniq}@" for k in sorted(set(keys))] + [
                f"@{topic}@T@{tag}@{uniq}@",
                f"@{topic}@U@{uniq}@",
            ]
            for m in middles:
                index[hour + m.encode() + q(off)] = q(t)
            if n % 1000 == 0:
                timer[q(t + 10_000) + uniq.encode()] = struct.pack(">iq", size, off)
            if n % 1000 == 0:
                trans[q(off) + f"@{topic}@{uniq}".encode()] = struct.pack(">ii", 0, size)
            index[b"lastOffsetPy"], index[b"lastStoreTimeStamp"], trans[b"lastOffsetPy"] = q(off), q(t), q(off)
            n += 1
    return {"default": index, "timer": timer, "trans": trans}


def write_db(path: Path, families: dict[str, dict[bytes, bytes]]):
    """As MessageRocksDBStorage keeps it: one database, the column families named, LZ4 (rmqctl's own maker of new
    databases)."""

    def options():
        o = rocksdict.Options(raw_mode=True)
        o.set_compression_type(compression("lz4"))
        return o

    db = NewDB(path, {cf: options() for cf in families})
    for cf, items in families.items():
        db.put(cf, items.items())
    db.finish()


def with_database(plain: Path, conf: Path, dest: Path) -> tuple[Path, dict[str, int]]:
    """A hard-linked copy of `plain` (verify writes nothing) with the RocksDB message store of its records."""
    db = dest / "rocksdbstore"
    if not db.is_dir():
        shutil.rmtree(dest, ignore_errors=True)
        dest.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["cp", "-al", str(plain), str(dest)], check=True)
        store = Store(plain, load_config(conf))
        families = records_of(store)
        store.close()
        write_db(db, families)
    store = Store(dest, load_config(conf))
    counts = store.message_rocksdb.counts()
    store.close()
    return dest, counts


def best(store: Path, conf: Path, repeat: int) -> tuple[float, int, int, int]:
    runs = []
    for _ in range(repeat):
        out = subprocess.run(
            [sys.executable, "-c", VERIFY.format(store=str(store), conf=str(conf))],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        runs.append((float(out[0]), int(out[1]), int(out[2]), int(out[3])))
    return min(runs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--dir", default="/tmp/rmqctl-bench-rocksdbstore")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    root = Path(args.dir)
    conf = build_store(root / "plain", args.size_mib << 20)
    with_db, counts = with_database(root / "plain" / "store", conf, root / "with" / "store")
    without_s, records, without_findings, without_kib = best(root / "plain" / "store", conf, args.repeat)
    with_s, _, with_findings, with_kib = best(with_db, conf, args.repeat)
    keys = sum(counts.values())
    print(
        f"verify --jobs 1, {records} records ({args.size_mib} MiB commitlog), best of {args.repeat}, "
        f"{os.cpu_count()} cores:"
    )
    print(
        f"  without rocksdbstore/: {without_s:.2f} s, {records / without_s:,.0f} msgs/s, "
        f"peak RSS {without_kib // 1024} MiB, {without_findings} findings"
    )
    print(
        f"  with rocksdbstore/ ({counts['index']} index, {counts['timer']} timer, {counts['trans']} trans records): "
        f"{with_s:.2f} s, {records / with_s:,.0f} msgs/s, {keys / max(with_s - without_s, 1e-9):,.0f} RocksDB "
        f"records/s over the difference, peak RSS {with_kib // 1024} MiB, {with_findings} findings"
    )
    print(f"  ratio {with_s / without_s:.2f}x (target <= 1.2x); load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
