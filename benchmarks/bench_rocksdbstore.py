#!/usr/bin/env python3
"""verify of a store with the 5.4 RocksDB message store (rocksdbstore/: index, timer and transaction records)
against the same store without it, in one run: the bench store of bench_verify.py (one commitlog file of
--size-mib, ~1 KiB messages with 2 KEYS, TAGS and a UNIQ_KEY) and a hard-linked copy of it with the database
its records make, by IndexRocksDBStore's rules (2 key records, 1 tag record, 1 uniq-key record per message), a
timer record for every bench timer message and a transaction record for every message with a transaction's
properties (1 in 1000 each: bench_verify.bench_message), so that verify finds nothing in either store. Target
(issue 32): verify with the database within 1.2x of verify without it.

    python benchmarks/bench_rocksdbstore.py [--size-mib 1024] [--dir /tmp/rmqctl-bench-rocksdbstore] [--repeat 3]

Each figure is the best of --repeat runs (the two stores' runs in turn), each verify in a fresh interpreter, with --jobs 1 and with verify's
default, the page cache warm for both; msgs/s is commitlog records per second of the whole verify. CPU is
the process's and its children's (none today: verify reads the database in a thread), the least of the runs:
on a shared machine it says what the work costs when the wall time says how busy the machine was.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import statistics
import struct
import subprocess
import sys
from pathlib import Path

import rocksdict
from bench_verify import TIMER_DELAY_MS, build_store, store_arguments

from rmqctl.config import load_config
from rmqctl.rocksdb import NewDB, compression
from rmqctl.store import Store

HOUR = 3600 * 1000
VERIFY = (
    "import resource, time; from rmqctl.config import load_config; from rmqctl.store import Store; "
    "from rmqctl.checks.verify import verify; from rmqctl.engine import kernels; kernels.load_numba(); "
    "cpu = lambda: sum(getattr(resource.getrusage(w), f) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN) "
    "for f in ('ru_utime', 'ru_stime')); "
    "s = Store({store!r}, load_config({conf!r})); c = cpu(); t = time.perf_counter(); r = verify(s, jobs={jobs}); "
    "print(time.perf_counter() - t, cpu() - c, r.stats['records'], r.stats['findings']['total'], "
    "resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
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
            if n % 1000 == 0:  # TIMER_OUT_MS
                timer[q(t + TIMER_DELAY_MS) + uniq.encode()] = struct.pack(">iq", size, off)
            if n % 1000 == 500:  # REAL_TOPIC, __transactionId__
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
    """A hard-linked copy of `plain` (verify writes nothing) with the RocksDB message store of its records, made
    again whenever `plain` was (its marker names the size it was built for)."""
    db = dest / "rocksdbstore"
    built_for = (plain.parent / "complete").read_text()
    marker = dest.parent / "complete"
    if not db.is_dir() or not marker.exists() or marker.read_text() != built_for:
        shutil.rmtree(dest, ignore_errors=True)
        dest.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["cp", "-al", str(plain), str(dest)], check=True)
        store = Store(plain, load_config(conf))
        families = records_of(store)
        store.close()
        write_db(db, families)
        marker.write_text(built_for)
    store = Store(dest, load_config(conf))
    counts = store.message_rocksdb.counts()
    store.close()
    return dest, counts


@dataclasses.dataclass(frozen=True)
class Run:
    wall: float
    cpu: float  # this process's and its children's CPU seconds
    records: int
    findings: int
    rss_kib: int
    child_rss_kib: int


def _run(store: Path, conf: Path, jobs: int | None) -> Run:
    out = subprocess.run(
        [sys.executable, "-c", VERIFY.format(store=str(store), conf=str(conf), jobs=jobs)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return Run(float(out[0]), float(out[1]), *map(int, out[2:]))


def best(stores: list[Path], conf: Path, repeat: int, jobs: int | None) -> tuple[list[Run], float]:
    """Each store's fastest of `repeat` runs (its CPU time the least of its runs), the stores' runs taken in
    turn, so that a machine whose speed drifts weighs on each alike; and the median of the turns' own ratios
    (the second store's wall time over the first's, taken a second apart: what a drift moves least). Every
    other turn runs the stores the other way round, so that what the first run leaves the second (a warmer
    cache, a busier core) weighs on each alike too."""
    runs = []
    for turn in range(repeat):
        order = stores if turn % 2 == 0 else stores[::-1]
        ran = {store: _run(store, conf, jobs) for store in order}
        runs.append([ran[store] for store in stores])
    fastest = [dataclasses.replace(min(own, key=lambda r: r.wall), cpu=min(r.cpu for r in own)) for own in zip(*runs)]
    return fastest, statistics.median(turn[1].wall / turn[0].wall for turn in runs)


def main():
    args = store_arguments(__doc__, "/tmp/rmqctl-bench-rocksdbstore")
    root = Path(args.dir)
    conf = build_store(root / "plain", args.size_mib << 20)
    with_db, counts = with_database(root / "plain" / "store", conf, root / "with" / "store")
    keys = sum(counts.values())
    print(
        f"verify of {args.size_mib} MiB commitlog, with rocksdbstore/ ({counts['index']} index, {counts['timer']} "
        f"timer, {counts['trans']} trans records) and without, best of {args.repeat}, {os.cpu_count()} cores:"
    )
    for jobs in (1, None):  # None: verify's default, a thread per core
        (plain, db), paired = best([root / "plain" / "store", with_db], conf, args.repeat, jobs)
        load = os.getloadavg()[0]
        print(f"  --jobs {jobs or 'default'}, {plain.records} records, load average {load:.1f} after them:")
        for name, r in (("without", plain), ("with", db)):
            print(
                f"    {name}: {r.wall:.2f} s ({r.records / r.wall:,.0f} msgs/s), CPU {r.cpu:.2f} s, peak RSS "
                f"{r.rss_kib // 1024} MiB{f' (reading process {r.child_rss_kib // 1024} MiB)' * bool(r.child_rss_kib)}, "
                f"{r.findings} findings"
            )
        print(
            f"    ratio {db.wall / plain.wall:.2f}x (target <= 1.2x; the median of the {args.repeat} turns' own "
            f"{paired:.2f}x), CPU {db.cpu / plain.cpu:.2f}x; "
            f"{keys / max(db.cpu - plain.cpu, 1e-9):,.0f} RocksDB records per CPU second over the difference"
        )


if __name__ == "__main__":
    main()
