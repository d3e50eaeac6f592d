"""The RocksDB consume queue: `dump consumequeue` and `verify` of a RocksDB queue, and `rebuild consumequeue`
into RocksDB, each next to a yardstick measured in the same run.

1. Dump: a RocksDB consume queue of N units in one queue is written (rmqctl's own writer, the broker's
   options); `rmqctl dump consumequeue` of that queue (jsonl to /dev/null) is timed against `ldb scan` (Debian
   rocksdb-tools) of the same column family, and its peak RSS measured at each N of --units: the memory must
   not grow with the units.
2. Rebuild and verify: a commitlog of --file-mb MiB (benchmarks/bench_rebuild.py's ~1 KiB messages) is
   generated; `rebuild consumequeue` from nothing into file queues (storeType=default) and into RocksDB
   (storeType=defaultRocksDB) of the same commitlog are timed (target: RocksDB within 2x the file queues), then
   `verify` of each store (RocksDB units checked with the file units' rules).
3. Verify at scale: a commitlog of N small records (no body, no properties: numpy copies of one record
   made by rmqctl.record.encode_record, its queue, offsets and store time patched) in 8 queues, with its
   RocksDB queue written beside it; `rmqctl verify` (every unit checked against its record) is timed against
   `ldb scan` of the units' column family, its peak RSS measured at each N of --units.

Peak RSS is given whole and anonymous (RssAnon): the whole counts the commitlog pages a command maps (page
cache, or shared memory with --dir on tmpfs), which the kernel takes back; the anonymous part is the command's
own memory (heap, arrays, RocksDB's caches).

    python benchmarks/bench_rocksdb.py [--units 1000000,10000000] [--file-mb 1024] [--dir /dev/shm] [--parts dump,rebuild,verify]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_rebuild import generate  # noqa: E402  (the same generated commitlog as the rebuild benchmark)

from rmqctl import rocksdbcq as R  # noqa: E402
from rmqctl import schema as S  # noqa: E402
from rmqctl.config import BrokerConfig  # noqa: E402
from rmqctl.maintenance.rebuild import rebuild_consumequeue  # noqa: E402
from rmqctl.maintenance.rocksqueue import rebuild_rocks_queue  # noqa: E402
from rmqctl.record import Message, encode_record  # noqa: E402
from rmqctl.rocksdb import NewDB  # noqa: E402
from rmqctl.store import Store  # noqa: E402

TOPIC, BATCH = "BenchTopic", 1 << 16
QUEUES, STORE_TIME = 8, 1_700_000_000_000
# where encode_record puts the fields patched per record (the broker's record layout, spec §2)
QUEUE_ID, QUEUE_OFFSET, PHYSICAL_OFFSET, STORE_TIMESTAMP = (12, 4), (20, 8), (28, 8), (56, 8)


def synthetic_queue(directory: Path, units: int):
    """One queue of `units` units (offset, size, tagsCode, store time), its min/max and a checkpoint."""
    db = NewDB(directory, R.family_options())
    prefix = R.queue_prefix(TOPIC, 0)
    for lo in range(0, units, BATCH):
        qoffs = np.arange(lo, min(units, lo + BATCH), dtype=np.int64)
        values = np.zeros(len(qoffs), R.UNIT_VALUE)
        values["commitLogOffset"], values["size"] = qoffs * 1000, 1000
        values["tagsCode"], values["storeTimestamp"] = qoffs % 7, 1_700_000_000_000 + qoffs
        keys, raw = qoffs.astype(">i8").tobytes(), values.tobytes()
        db.put(R.UNIT_CF, ((prefix + keys[i * 8 : i * 8 + 8], raw[i * 28 : i * 28 + 28]) for i in range(len(qoffs))))
    db.put(
        R.OFFSET_CF,
        [
            (R.offset_key(TOPIC, R.MIN, 0), R.OFFSET_VALUE.pack(0, 0)),
            (R.offset_key(TOPIC, R.MAX, 0), R.OFFSET_VALUE.pack((units - 1) * 1000, units - 1)),
            (R.offset_key(R.CHECKPOINT_TOPIC, R.MAX, 0), R.INT64.pack(units * 1000)),
        ],
    )
    db.finish()


def small_record() -> bytes:
    """One record of TOPIC without body or properties: the smallest a broker writes (tagsCode 0)."""
    m = Message()
    m.magicCode, m.bodyCRC, m.queueId, m.flag, m.queueOffset, m.physicalOffset = S.MAGIC_V1, 0, 0, 0, 0, 0
    m.sysFlag, m.bornTimestamp, m.bornIp, m.bornPort = 0, STORE_TIME, bytes([10, 0, 0, 1]), 40000
    m.storeTimestamp, m.storeIp, m.storePort = STORE_TIME, bytes([192, 168, 0, 10]), 10911
    m.reconsumeTimes, m.preparedTransactionOffset, m.body, m.bodyLength = 0, 0, b"", 0
    m.topicBytes, m.propertiesBytes = TOPIC.encode(), b""
    return encode_record(m)


def patch(rows: np.ndarray, field: tuple[int, int], values: np.ndarray):
    at, width = field
    rows[:, at : at + width] = values.astype(f">i{width}").view(np.uint8).reshape(len(values), width)


def record_store(root: Path, units: int) -> int:
    """A commitlog of `units` small records in QUEUES queues (record i: queue i % QUEUES, queue offset
    i // QUEUES) and its RocksDB queue; returns the commitlog file size (one file)."""
    template = np.frombuffer(small_record(), np.uint8)
    size = len(template)
    file_size = units * size + S.END_FILE_MIN_BLANK_LENGTH
    (root / "commitlog").mkdir(parents=True)
    db = NewDB(root / "consumequeue", R.family_options())
    with open(root / "commitlog" / f"{0:020d}", "wb") as f:
        for lo in range(0, units, BATCH):
            i = np.arange(lo, min(units, lo + BATCH), dtype=np.int64)
            rows = np.tile(template, (len(i), 1))
            patch(rows, QUEUE_ID, i % QUEUES)
            patch(rows, QUEUE_OFFSET, i // QUEUES)
            patch(rows, PHYSICAL_OFFSET, i * size)
            patch(rows, STORE_TIMESTAMP, STORE_TIME + i)
            f.write(rows.tobytes())
            for q in range(QUEUES):
                mine = i[i % QUEUES == q]
                values = np.zeros(len(mine), R.UNIT_VALUE)
                values["commitLogOffset"], values["size"], values["storeTimestamp"] = (
                    mine * size,
                    size,
                    STORE_TIME + mine,
                )
                keys, raw, prefix = (mine // QUEUES).astype(">i8").tobytes(), values.tobytes(), R.queue_prefix(TOPIC, q)
                db.put(
                    R.UNIT_CF, ((prefix + keys[k * 8 : k * 8 + 8], raw[k * 28 : k * 28 + 28]) for k in range(len(mine)))
                )
        f.write(S.BLANK.pack(S.END_FILE_MIN_BLANK_LENGTH, S.MAGIC_BLANK))
    last = {
        q: max(i for i in range(max(0, units - QUEUES), units) if i % QUEUES == q) for q in range(min(QUEUES, units))
    }
    db.put(
        R.OFFSET_CF,
        [
            kv
            for q, i in last.items()
            for kv in (
                (R.offset_key(TOPIC, R.MIN, q), R.OFFSET_VALUE.pack(q * size, 0)),
                (R.offset_key(TOPIC, R.MAX, q), R.OFFSET_VALUE.pack(i * size, i // QUEUES)),
            )
        ],
    )
    # the dispatch went past the BLANK record to the next file's start
    db.put(R.OFFSET_CF, [(R.offset_key(R.CHECKPOINT_TOPIC, R.MAX, 0), R.INT64.pack(file_size))])
    db.finish()
    return file_size


def measured(args: list[str], env=None) -> tuple[float, float, float, float]:
    """Wall seconds, CPU seconds (user + system), peak RSS and peak anonymous RSS (MiB) of one command. The
    total counts the commitlog pages the command maps (file-backed, or shared memory on tmpfs: page cache the
    kernel takes back, not the command's heap); both sampled from /proc/<pid>/status every 10 ms, RssAnon being
    the command's own memory: the heap, numpy's arrays, RocksDB's caches. On a shared machine the CPU seconds are
    the steadier figure."""
    t = time.perf_counter()
    err = tempfile.TemporaryFile()  # (a pipe read only at the end would stall a command that says much)
    child = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err, env=env)
    peak, anon, done = 0, 0, (0, 0, None)
    while not done[0]:
        hwm, now = resident(child.pid, args)
        peak, anon = max(peak, hwm), max(anon, now)
        time.sleep(0.01)
        done = os.wait4(child.pid, os.WNOHANG)  # its own CPU time
    wall = time.perf_counter() - t
    code, usage = os.waitstatus_to_exitcode(done[1]), done[2]
    err.seek(0)
    said = err.read()
    # 1: verify's findings (the generated store has no checkpoint file), but a crash exits 1 too
    if code not in (0, 1) or b"Traceback" in said:
        raise RuntimeError(f"{args[3:5]} failed: {said[-500:].decode(errors='replace')}")
    return wall, usage.ru_utime + usage.ru_stime, peak / 1024, anon / 1024


def resident(pid: int, args: list[str]) -> tuple[int, int]:
    """A process's peak resident KiB so far (VmHWM: its own, where rusage's ru_maxrss of a child counts the
    parent's resident set at the fork) and its anonymous resident KiB now; (0, 0) before it runs `args` (until
    the exec its memory is this process's) and once it is gone."""
    try:
        if Path(f"/proc/{pid}/cmdline").read_bytes() != "".join(f"{a}\0" for a in args).encode():
            return 0, 0
        with open(f"/proc/{pid}/status") as f:
            fields = dict(line.split(":", 1) for line in f if line.startswith(("VmHWM:", "RssAnon:")))
        return int(fields["VmHWM"].split()[0]), int(fields["RssAnon"].split()[0])
    except (OSError, KeyError):
        return 0, 0


def dump_part(base: Path, sizes: list[int], env: dict):
    for n in sizes:
        root = base / f"store-{n}"
        (root / "commitlog").mkdir(parents=True)
        (root / "lock").touch()
        t = time.perf_counter()
        synthetic_queue(root / "consumequeue", n)
        print(f"wrote a RocksDB queue of {n} units in {time.perf_counter() - t:.1f} s")
        dump = [
            sys.executable,
            "-m",
            "rmqctl",
            "dump",
            "consumequeue",
            TOPIC,
            "0",
            "--store",
            str(root),
            "--format",
            "jsonl",
        ]
        dump_s, dump_cpu, rss, anon = measured(dump, env)
        copy = base / "ldb-copy"
        shutil.copytree(root / "consumequeue", copy)
        ldb_s, ldb_cpu, _, _ = measured(
            ["ldb", f"--db={copy}", "--ignore_unknown_options", "scan", "--key_hex", "--value_hex"]
        )
        shutil.rmtree(copy)
        print(
            f"  dump consumequeue {dump_s:7.2f} s wall {dump_cpu:7.2f} s CPU  {n / dump_cpu / 1e6:5.2f} M units/CPU-s  "
            f"peak RSS {rss:5.0f} MiB (anon {anon:5.0f}) | ldb scan {ldb_s:6.2f} s wall {ldb_cpu:6.2f} s CPU "
            f"({n / ldb_cpu / 1e6:5.2f} M units/CPU-s): dump takes {dump_cpu / ldb_cpu:4.2f}x ldb's CPU"
        )
        shutil.rmtree(root)


def rebuild_part(base: Path, file_mb: int, env: dict):
    root = base / "store"
    messages, _ = generate(root, file_mb << 20)
    (root / "lock").touch()
    print(f"generated {messages} messages in {file_mb} MiB of commitlog")
    files = BrokerConfig(mappedFileSizeCommitLog=file_mb << 20)
    rocks = BrokerConfig(mappedFileSizeCommitLog=file_mb << 20, storeType="defaultRocksDB")
    for what, config, fn in (("file queues", files, rebuild_consumequeue), ("RocksDB", rocks, rebuild_rocks_queue)):
        shutil.rmtree(root / "consumequeue", ignore_errors=True)
        (root / "consumequeue").mkdir()
        t, cpu = time.perf_counter(), time.process_time()
        result = fn(Store(root, config), keep_backup=False)
        secs, cpu = time.perf_counter() - t, time.process_time() - cpu
        print(
            f"  rebuild into {what:11s} {secs:7.2f} s wall {cpu:7.2f} s CPU  {messages / cpu / 1e6:5.2f} M msgs/CPU-s  "
            f"({result.entries} units)"
        )
        conf = base / f"{what[:4]}.conf"
        conf.write_text(f"mappedFileSizeCommitLog={file_mb << 20}\nstoreType={config.storeType or 'default'}\n")
        verify = [
            sys.executable,
            "-m",
            "rmqctl",
            "verify",
            "--store",
            str(root),
            "--broker-config",
            str(conf),
            "--format",
            "jsonl",
        ]
        secs, cpu, rss, anon = measured(verify, env)
        print(f"  verify of {what:14s} {secs:7.2f} s wall {cpu:7.2f} s CPU  peak RSS {rss:5.0f} MiB (anon {anon:5.0f})")


def verify_part(base: Path, sizes: list[int], env: dict):
    for n in sizes:
        root = base / f"verify-{n}"
        t = time.perf_counter()
        file_size = record_store(root, n)
        (root / "lock").touch()
        print(f"wrote {n} records and their RocksDB queue in {time.perf_counter() - t:.1f} s")
        conf = base / "verify.conf"
        conf.write_text(f"mappedFileSizeCommitLog={file_size}\nstoreType=defaultRocksDB\n")
        verify = [
            sys.executable,
            "-m",
            "rmqctl",
            "verify",
            "--store",
            str(root),
            "--broker-config",
            str(conf),
            "--format",
            "jsonl",
        ]
        secs, cpu, rss, anon = measured(verify, env)
        copy = base / "ldb-copy"
        shutil.copytree(root / "consumequeue", copy)
        ldb_s, ldb_cpu, _, _ = measured(
            ["ldb", f"--db={copy}", "--ignore_unknown_options", "scan", "--key_hex", "--value_hex"]
        )
        shutil.rmtree(copy)
        print(
            f"  verify {secs:7.2f} s wall {cpu:7.2f} s CPU  {n / cpu / 1e6:5.2f} M units/CPU-s  peak RSS {rss:5.0f} "
            f"MiB (anon {anon:5.0f}) | ldb scan {ldb_s:6.2f} s wall {ldb_cpu:6.2f} s CPU ({n / ldb_cpu / 1e6:5.2f} M units/CPU-s): "
            f"verify takes {cpu / ldb_cpu:4.2f}x ldb's CPU"
        )
        shutil.rmtree(root)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--units", default="1000000,10000000", help="unit counts to measure at, comma-separated")
    ap.add_argument("--file-mb", type=int, default=1024)
    ap.add_argument("--parts", default="dump,rebuild,verify")
    ap.add_argument("--dir", default="/dev/shm" if os.path.isdir("/dev/shm") else None)
    args = ap.parse_args()
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    base = Path(tempfile.mkdtemp(prefix="rmqctl-bench-rocksdb-", dir=args.dir))
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} (wall-clock times)")
    try:
        parts, sizes = args.parts.split(","), [int(n) for n in args.units.split(",")]
        if "dump" in parts:
            dump_part(base, sizes, env)
        if "rebuild" in parts:
            rebuild_part(base, args.file_mb, env)
        if "verify" in parts:
            verify_part(base, sizes, env)
    finally:
        shutil.rmtree(base)


if __name__ == "__main__":
    main()
