"""Throughput of `rebuild consumequeue` and `rebuild index` from nothing (library calls: build into the
store's staging directory, read back and check, swap in), next to a plain header walk over the same
commitlog, measured in the same run.

The store is generated first: one commitlog of `--file-mb` MiB in the broker's layout (records built with
rmqctl.record.encode_record, ending in a BLANK record), ~1 KiB messages with TAGS, UNIQ_KEY and 1-2 KEYS
words (2-3 index keys per message), on tmpfs (/dev/shm) when there is one. The header walk reads only each
record's TOTALSIZE and magic to step to the next one: the floor any rebuild has to pay. The compiled
dispatch alone (entries and key hashes computed, nothing written) is timed too; each rebuild adds writing
the files, `verify`'s checks of the staged result, and the swap. Each figure is the best of --runs runs,
so the compilation of the kernels (or their loading from numba's cache) in the first run is not counted.
Peak RSS includes the mapped commitlog (page cache).

    python benchmarks/bench_rebuild.py [--file-mb 1024] [--dir /dev/shm]
"""

from __future__ import annotations

import argparse
import mmap
import os
import random
import resource
import shutil
import struct
import tempfile
import time
from pathlib import Path

from rmqctl import schema as S
from rmqctl.maintenance.batchdispatch import dispatch_file
from rmqctl.config import BrokerConfig
from rmqctl.javacompat import crc31, encode_properties
from rmqctl.maintenance.rebuild import rebuild_consumequeue, rebuild_index
from rmqctl.record import Message, encode_record
from rmqctl.store import Store, offset_to_name

TOPICS = ["OrderTopic", "PaymentTopic", "AuditTopic", "BenchTopic-7"]
QUEUES = 8


def make_message(rng: random.Random, i: int, offset: int, queue_offsets: dict) -> Message:
    topic = TOPICS[i % len(TOPICS)]
    qid = rng.randrange(QUEUES)
    size = rng.randint(600, 1200)
    body = (b"payment %d " % i * (size // 10 + 1))[:size] if i % 2 else rng.randbytes(size)
    keys = f"ORDER-{i:09d}" + (f" USER-{i % 9973:05d}" if i % 2 else "")
    props = [
        ("WAIT", "true"),
        ("CLUSTER", "BenchCluster"),
        ("TAGS", f"Tag{'ABCDE'[i % 5]}"),
        ("KEYS", keys),
        ("UNIQ_KEY", f"C0A8000A{os.getpid() & 0xFFFF:04X}1A2B3C4D{i:016X}"),
    ]
    m = Message()
    m.magicCode, m.bodyCRC, m.queueId, m.flag = S.MAGIC_V1, crc31(body), qid, 0
    m.queueOffset = queue_offsets[topic, qid]
    queue_offsets[topic, qid] += 1
    m.physicalOffset, m.sysFlag, m.bornTimestamp = offset, 0, 1_700_000_000_000 + i
    m.bornIp, m.bornPort = bytes([10, 0, i % 256, (i // 256) % 256]), 40000 + i % 20000
    m.storeTimestamp, m.storeIp, m.storePort = 1_700_000_000_100 + i // 8, bytes([192, 168, 0, 10]), 10911
    m.reconsumeTimes, m.preparedTransactionOffset = 0, 0
    m.body, m.bodyLength = body, len(body)
    m.topicBytes = topic.encode()
    m.propertiesBytes = encode_properties(props, trailing_separator=False).encode()
    return m


def generate(root: Path, file_size: int) -> tuple[int, int]:
    """One full commitlog file; returns (messages, index keys)."""
    (root / "commitlog").mkdir(parents=True)
    rng = random.Random(20240601)
    queue_offsets = {(t, q): 0 for t in TOPICS for q in range(QUEUES)}
    path = root / "commitlog" / offset_to_name(0)
    pos = i = keys = 0
    with open(path, "wb") as f:
        while True:
            record = encode_record(make_message(rng, i, pos, queue_offsets))
            if pos + len(record) + S.END_FILE_MIN_BLANK_LENGTH > file_size:
                break
            f.write(record)
            pos += len(record)
            keys += 2 + i % 2
            i += 1
        f.write(S.BLANK.pack(file_size - pos, S.MAGIC_BLANK))
        f.truncate(file_size)
    return i, keys


def header_walk(path: Path) -> int:
    """Step from record to record by TOTALSIZE, checking the magic: no decoding."""
    head = struct.Struct(">ii")
    n = 0
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        pos, end = 0, len(buf)
        while pos + 8 <= end:
            size, magic = head.unpack_from(buf, pos)
            if magic != S.MAGIC_V1 and magic != S.MAGIC_V2:
                break
            n += 1
            pos += size
    return n


def best_of(runs: int, fn):
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file-mb", type=int, default=1024)
    ap.add_argument("--dir", default="/dev/shm" if os.path.isdir("/dev/shm") else None)
    ap.add_argument("--runs", type=int, default=2)
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="rmqctl-bench-rebuild-", dir=args.dir))
    try:
        root = base / "store"
        t = time.perf_counter()
        messages, keys = generate(root, args.file_mb << 20)
        mb = args.file_mb
        print(
            f"generated {messages} messages ({keys} index keys) in {mb} MiB in {time.perf_counter() - t:.1f} s; "
            f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} (wall-clock times below)"
        )
        config = BrokerConfig(mappedFileSizeCommitLog=args.file_mb << 20)
        walk_s, n = best_of(args.runs, lambda: header_walk(root / "commitlog" / offset_to_name(0)))
        assert n == messages
        print(
            f"header walk           {walk_s:7.2f} s  {messages / walk_s / 1e6:6.2f} M msgs/s  {mb / walk_s:7.0f} MiB/s"
        )
        with (
            open(root / "commitlog" / offset_to_name(0), "rb") as f,
            mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf,
        ):
            secs, out = best_of(args.runs, lambda: dispatch_file(buf, len(buf), config, True))
            del out
        print(
            f"  compiled dispatch   {secs:7.2f} s  {messages / secs / 1e6:6.2f} M msgs/s  {mb / secs:7.0f} MiB/s"
            f"  {secs / walk_s:5.1f}x the header walk  (entries and key hashes, nothing written)"
        )
        for what, fn in (("consumequeue", rebuild_consumequeue), ("index", rebuild_index)):

            def from_nothing():
                shutil.rmtree(root / what, ignore_errors=True)
                return fn(Store(root, config), keep_backup=False)

            secs, result = best_of(args.runs, from_nothing)
            assert result.records == messages
            print(
                f"rebuild {what:13s} {secs:7.2f} s  {messages / secs / 1e6:6.2f} M msgs/s  {mb / secs:7.0f} MiB/s"
                f"  {secs / walk_s:5.1f}x the header walk  ({result.entries} entries)"
            )
        print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    finally:
        shutil.rmtree(base)


if __name__ == "__main__":
    main()
