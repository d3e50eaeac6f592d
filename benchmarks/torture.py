"""Reliability as figures: one table of what rmqctl survives, measured on copies of the real RocketMQ fixture
stores (../shared/fixtures, or RMQCTL_FIXTURES).

* fuzz: mutated copies of every fixture (bit flips, cuts, zeroed runs, hostile length fields such as
  0x7FFFFFFF and negative values, swapped files, wrong sizes, stray names, index chains with loops, units past
  the end, non-UTF-8 topics, properties without separators, cut config/*.json, symlinks out of the store,
  MetaQ segments, RocksDB queues without CURRENT/MANIFEST/an SST, with column families not RocketMQ's or
  a torn WAL, RocksDB config databases without CURRENT/MANIFEST/an SST, with a value that is not JSON or a column
  family RocketMQ never creates); every read command runs on each copy, in one long-lived worker process as an operator's
  notebook would run them. A crash is an exit code outside 0/1/2, a traceback or an internal error, or more than
  1 GiB RSS (each command's own peak: VmHWM reset before it). A command past 600 s of CPU or 600 s blocked (a
  spinning loop, a wait that never ends; a command here takes well under a second of either) is counted as too
  slow, apart from the crashes: the guard sits far above the work, so the machine's load never decides it.
  Damage `verify` must see (a cut file, a bad length, a flipped body, a loop, ...) and that it did not
  report (no new finding, exit 0) is counted as missed. The worker's RSS growth over the run is reported.
* hypothesis: every file kind's decoder at the library level (records, properties, msgIds, decompression,
  commitlog and DLedger walks on both engines, consumequeue, index chains, checkpoint, config JSON, timerlog,
  MetaQ segments) on generated and mutated input: anything but a clean refusal is a failure.
* crash trials: SIGKILL at random moments and at every filesystem step (rename, exchange, unlink, fsync,
  write, ...) of append, rebuild consumequeue, rebuild index, repair, clean --apply, config restore and
  restore BACKUP. A killed run is followed by the recovery every writing command starts with; the store must
  then be exactly the old or the new one (file hashes; for clean, which deletes file by file as the broker
  does, a prefix of its plan; for append, the old records plus a prefix of the input). Acknowledged appends
  must all be there. Then the next writing command runs, and verify.
* read-only proof: sha256, names and mtimes of every file (lock included) before and after every read
  command, plan and --dry-run on every fixture.
* disk full: every writer on a real tmpfs with little room: a one-line error and exit 2 (or success), the
  store old or new, no acknowledged message lost, verify as sound as before; then with room again the same
  command succeeds.

    python benchmarks/torture.py [--quick] [--stores N] [--kills N] [--seed S] [--parts fuzz,hypothesis,...]
                                 [--state DIR] [--from I]

`--quick` (CI, tests/test_reliability.py): 300 fuzzed stores, 100 examples per decoder, 3 random kills and 6
sampled filesystem steps per writer, two disk-full sizes; the long mode: 10000 fuzzed stores, 2000 examples per
decoder, 30 random kills per writer and a kill at every filesystem step, seven disk-full sizes. `--state DIR`
saves each finished unit (100 fuzzed stores, one writer's trials) and reuses it when run again, so a killed long
run resumes, and N processes started with the same arguments share one run (each unit is claimed by one
of them); once they are done, one more prints the whole table. Every fuzzed store has its own generator (seed, number): `--from I --stores 1` replays
store I. Exit 1 if any figure that must be 0 is not. Needs root (tmpfs).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import random
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rmqctl import schema as S  # noqa: E402  (after the path: the checkout's rmqctl)
from rmqctl.schema import MAGIC_AT, SYSFLAG_AT  # noqa: E402

INDEX_COUNT_AT = S.INDEX_HEADER_SIZE - 4  # the header's last two ints: hashSlotCount, indexCount
SLOT_COUNT_AT = S.INDEX_HEADER_SIZE - 8
PREV_INDEX_AT = S.INDEX_ENTRY_SIZE - 4  # an index entry ends with its prevIndex
FIXTURES = Path(os.environ.get("RMQCTL_FIXTURES", REPO.parent / "shared" / "fixtures"))
SCRATCH_ROOM = 2 << 30  # a run's copies take tens of MiB: tmpfs only with far more than that free, in it and in memory


def scratch() -> Path:
    """Where a run copies stores: /dev/shm (fsyncs cost nothing there) while it and the memory behind it have
    SCRATCH_ROOM free, else the temporary directory on disk. A full tmpfs or a machine short of memory then
    makes the run slower, never a command's failure the run would count as a crash."""
    shm = Path("/dev/shm")
    if (
        shm.is_dir()
        and os.access(shm, os.W_OK)
        and shutil.disk_usage(shm).free > SCRATCH_ROOM
        and os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") > SCRATCH_ROOM
    ):
        return shm
    return Path(tempfile.gettempdir())


TIMEOUT = 600.0  # seconds of CPU, or of being blocked: a last guard, far above any command's work
RSS_LIMIT = 1 << 30
PARTS = ("fuzz", "hypothesis", "crash", "readonly", "diskfull")


# -- stores ---------------------------------------------------------------------------------------------------------


def fixtures() -> list[str]:
    return sorted(p.name for p in FIXTURES.iterdir() if (p / "store").is_dir())


def conf_of(name: str) -> Path | None:
    p = FIXTURES / name / "broker.conf"
    return p if p.exists() else None


def copy_store(name: str, dest: Path) -> Path:
    shutil.copytree(FIXTURES / name / "store", dest, symlinks=True)
    for p in [dest, *dest.rglob("*")]:
        if not p.is_symlink():
            p.chmod(0o755 if p.is_dir() else 0o644)
    return dest


def snapshot(root: Path, with_mtime: bool = False, canonical_index: bool = False) -> dict[str, tuple]:
    """sha256 (and mtime) of every file under the store. A writer's state leaves out rmqctl's own staging,
    intent and backups (they are not the store) and the lock file (its content is the broker's); the
    read-only proof (with_mtime) takes everything. `canonical_index` names index files by rank: a rebuild
    names them by the time it ran."""
    out = {}
    index_names = sorted(p.name for p in (root / "index").iterdir()) if (root / "index").is_dir() else []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if with_mtime or not d.startswith(".rmqctl-")]
        for name in filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            if not with_mtime and (name.startswith(".rmqctl-") or rel == "lock"):
                continue
            if canonical_index and p.parent == root / "index":
                rel = f"index/#{index_names.index(name)}"
            st = os.lstat(p)
            data = os.readlink(p).encode() if p.is_symlink() else p.read_bytes()
            out[rel] = (hashlib.sha256(data).hexdigest(), st.st_mtime_ns if with_mtime else 0)
    return out


# -- running commands in a watched worker process ---------------------------------------------------------------------


def worker_main():
    """Runs CLI commands in this one long-lived process, one JSON argv per stdin line; answers one JSON line each.
    The commands write to the same stdout/stderr objects every time, as in an operator's long-lived process:
    click's CliRunner puts fresh ones in per call and click's stream cache (a WeakKeyDictionary whose values
    are its keys) keeps every one alive with its output, 0.5 MiB a store, which a harness must not count
    against rmqctl (CHANGELOG.md)."""
    from rmqctl.cli.main import cli

    replies, real_err = sys.stdout, sys.stderr
    out_bytes, err_bytes = io.BytesIO(), io.BytesIO()
    out = io.TextIOWrapper(out_bytes, encoding="utf-8", write_through=True)
    err = io.TextIOWrapper(err_bytes, encoding="utf-8", write_through=True)
    for line in sys.stdin:
        argv = json.loads(line)
        with contextlib.suppress(OSError):
            Path("/proc/self/clear_refs").write_text("5")  # VmHWM back to the current RSS: this command's peak
        rss_before = rss_of("self", "VmRSS")
        t, cpu = time.monotonic(), time.process_time()
        escaped = None
        sys.stdout, sys.stderr = out, err
        try:
            cli.main(args=argv, prog_name="rmqctl")
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except Exception as e:  # past the CLI's own handler: a crash
            code, escaped = None, e
        finally:
            sys.stdout, sys.stderr = replies, real_err
        secs, cpu = time.monotonic() - t, time.process_time() - cpu
        stdout, stderr = out_bytes.getvalue().decode(errors="replace"), err_bytes.getvalue().decode(errors="replace")
        for stream in (out, err):
            stream.seek(0)
            stream.truncate()
        crash = code not in (0, 1, 2) or escaped is not None or "Traceback" in stderr or "internal error" in stderr
        detail = (
            f"{type(escaped).__name__}: {escaped}"
            if escaped
            else next((l for l in stderr.splitlines() if "internal error" in l or "Traceback" in l), stderr[-300:])
        )
        print(
            json.dumps(
                {
                    "exit": code,
                    "crash": crash,
                    "detail": detail if crash else "",
                    "stdout": stdout if "verify" in argv[:2] else "",
                    "secs": secs,
                    "cpu": cpu,
                    "rss": rss_of("self", "VmHWM"),
                    "rss_before": rss_before,
                }
            ),
            flush=True,
        )


def rss_of(pid: str, field: str) -> int:
    """VmRSS (now) or VmHWM (peak since the last reset) of a process, in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def runnable(pid: int) -> bool:
    """Whether any thread of the process is running or waiting for a CPU (state R), not blocked."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            if (task / "stat").read_text().rsplit(")", 1)[1].split()[0] == "R":
                return True
    return False


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


class Worker:
    """The parent's side. A command that uses more than TIMEOUT seconds of CPU (a spinning loop) or is blocked
    (no thread runnable: a wait that never ends) for more than TIMEOUT seconds is too slow, one whose process
    grows past RSS_LIMIT is a crash: either way the worker is killed and the next command gets a fresh one. Wall time alone is
    not the measure: at nice 19 on a loaded machine a command waits for a CPU far longer than it runs.
    `growth` is how much the worker's RSS between commands rose over its life (a leak would show)."""

    def __init__(self):
        self.proc = None
        self.restarts = -1
        self.first_rss = self.growth = 0

    def start(self):
        env = dict(os.environ, PYTHONPATH=str(REPO))
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        self.restarts += 1
        self.commands = 0

    def run(self, argv: list) -> dict:
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        self.proc.stdin.write(json.dumps([str(a) for a in argv]) + "\n")
        self.proc.stdin.flush()
        began, cpu0, blocked = time.monotonic(), cpu_seconds(self.proc.pid), 0.0
        while True:
            polled = time.monotonic()
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.2)
            if ready:
                line = self.proc.stdout.readline()
                if not line:
                    self.proc = None
                    return {"exit": None, "crash": True, "detail": "worker died", "secs": time.monotonic() - began}
                out = json.loads(line)
                if out["rss"] > RSS_LIMIT:
                    out["crash"], out["detail"] = True, f"peak RSS {out['rss'] >> 20} MiB"
                self.commands += 1
                if self.commands == 200:  # past two rounds of every fixture: what loads on first use has loaded
                    self.first_rss = out["rss_before"]
                elif self.commands > 200:
                    self.growth = max(self.growth, out["rss_before"] - self.first_rss)
                return out
            why, slow = None, True
            with contextlib.suppress(OSError):
                if cpu_seconds(self.proc.pid) - cpu0 > TIMEOUT:
                    why = f"over {TIMEOUT:.0f} s of CPU"
                elif not runnable(self.proc.pid) and (blocked := blocked + time.monotonic() - polled) > TIMEOUT:
                    why = f"blocked for over {TIMEOUT:.0f} s"
                elif rss_of(str(self.proc.pid), "VmRSS") > RSS_LIMIT:
                    why, slow = f"RSS over {RSS_LIMIT >> 20} MiB", False
            if why:
                self.stop()
                return {"exit": None, "crash": not slow, "slow": slow, "detail": why, "secs": time.monotonic() - began}

    def stop(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


# -- what is in a store (from the fixture, before mutation) ------------------------------------------------------------


def record_starts(path: Path) -> list[tuple[int, int]]:
    """(position, size) of each record of one commitlog file, by its TOTALSIZE and magic fields."""
    data = path.read_bytes()
    out, pos = [], 0
    while pos + 8 <= len(data):
        size, magic = struct.unpack_from(">i", data, pos)[0], struct.unpack_from(">i", data, pos + MAGIC_AT)[0]
        if magic not in (S.MAGIC_V1, S.MAGIC_V2) or size <= 0 or pos + size > len(data):
            break
        out.append((pos, size))
        pos += size
    return out


class Profile:
    """The read commands' arguments for one fixture: a queue, an offset, a msgId, a key."""

    def __init__(self, name: str):
        from rmqctl.batchcq import batch_consume_queues
        from rmqctl.config import load_config
        from rmqctl.errors import StoreError
        from rmqctl.store import Store, queue_keys

        self.name = name
        self.conf = conf_of(name)
        ini = FIXTURES / name / "server.ini"
        self.metaq = ini if ini.exists() else None
        self.queue, self.slots, self.batch_queue = ("TopicTest", 0), 0, None
        self.unread: tuple[str, ...] = ()  # store paths of the parts rmqctl says it does not read
        self.offset, self.msg_id, self.key = 0, "C0A8000A00002A9F0000000000000000", ("TopicTest", "k")
        try:
            store = Store(FIXTURES / name / "store", load_config(str(self.conf)) if self.conf else None)
        except StoreError:  # not a RocketMQ store root (MetaQ): the commands still run, with these defaults
            return
        self.unread = tuple(part.path.relative_to(store.root).as_posix() for part in store.parts.unread)
        self.queue = next(iter(queue_keys(store)), ("TopicTest", 0))
        self.batch_queue = next(((q.topic, q.queue_id) for q in batch_consume_queues(store)), None)
        try:
            self.slots = store.index_geometry[0]
        except Exception:
            self.slots = 0  # no index geometry to be had: the chain mutation finds no entries
        self.offset, self.msg_id, self.key = 0, "C0A8000A00002A9F0000000000000000", ("TopicTest", "k")
        try:
            for f, m in store.scan().records():
                self.offset, self.msg_id = f.start + m.position, m.msg_id
                keys = m.properties.get("KEYS")
                self.key = (m.topic, keys.split(" ")[0] if keys else m.uniq_key or "k")
                break
        except Exception:
            pass  # a store the scan cannot read (MetaQ, DLedger): the commands still run, with these defaults
        store.close()

    def commands(self, store: Path) -> list[list]:
        if self.metaq:  # a MetaQ dataPath: the metaq group's read commands (verify at index 2, as below at 5)
            base = ["--store", store, "--server-config", self.metaq, "--format", "jsonl"]
            return [
                ["metaq", "info", *base],
                ["metaq", "dump", *base, "--body", "base64"],
                ["metaq", "verify", *base],
                ["metaq", "locate", 0, "--topic", "meta-test", "--partition", 0, *base],
                ["metaq", "locate", 40000, "--topic", "meta-test", "--partition", 1, *base, "--hex"],
            ]
        base = ["--store", store] + (["--broker-config", self.conf] if self.conf else [])
        topic, qid = self.queue
        return [
            ["info", *base, "--format", "jsonl"],
            ["dump", "commitlog", *base, "--body", "base64", "--raw-properties", "--decompress", "--format", "jsonl"],
            ["dump", "consumequeue", topic, qid, "--resolve", *base, "--format", "jsonl"],
            ["dump", "index", *base, "--format", "jsonl"],
            ["dump", "checkpoint", *base, "--format", "jsonl"],
            ["dump", "timerlog", *base, "--format", "jsonl"],
            ["dump", "timerwheel", *base, "--format", "jsonl"],
            ["verify", *base, "--format", "jsonl"],
            ["verify", "--deep", *base, "--format", "jsonl"],
            ["locate", self.offset + 7, *base, "--format", "jsonl"],
            ["locate", 1, "--topic", topic, "--queue-id", qid, *base, "--format", "jsonl"],
            ["msgid", "decode", self.msg_id, *base, "--format", "jsonl"],
            ["msgid", "lookup", self.msg_id, *base, "--format", "jsonl"],
            ["query", "key", self.key[0], self.key[1], *base, "--format", "jsonl"],
            ["consumers", *base, "--format", "jsonl"],
        ] + (
            [
                ["dump", "batchconsumequeue", *map(str, self.batch_queue), "--resolve", *base, "--format", "jsonl"],
                [
                    "locate",
                    1,
                    "--topic",
                    self.batch_queue[0],
                    "--queue-id",
                    self.batch_queue[1],
                    *base,
                    "--format",
                    "jsonl",
                ],
                ["offset-by-time", self.batch_queue[0], 1795867585000, *base, "--format", "jsonl"],
            ]
            if self.batch_queue
            else []
        )


# -- mutations ------------------------------------------------------------------------------------------------------

HOSTILE32 = (0x7FFFFFFF, -1, -(1 << 31), 0, 1 << 30, 3)


def files_of(root: Path) -> dict[str, list[Path]]:
    kinds = {"commitlog": [], "consumequeue": [], "index": [], "config": [], "segment": [], "other": [], "rocksdb": []}
    for p in sorted(root.rglob("*")):
        if not p.is_file() or p.is_symlink():
            continue
        rel = p.relative_to(root).parts
        # a BatchCQ queue's files are damaged as a consumequeue's are
        kind = (
            "consumequeue"
            if rel[0] == "batchconsumequeue"
            else rel[0]
            if rel[0] in kinds
            else "segment"
            if p.suffix == ".meta"
            else "other"
        )
        if rel[0] == "consumequeue" and len(rel) == 2:  # a RocksDB queue's own files (CURRENT, MANIFEST, sst, ...)
            kind = "rocksdb"
        kinds[kind].append(p)
    return kinds


def adds_a_file(how: str) -> bool:
    """A mutation that leaves damage beside the fixture's files (a stray commitlog file, a symlink out, a config
    database)."""
    return how.startswith(("stray ", "symlink ", "config database "))


_FIXTURE_FILES: dict[str, dict] = {}


def fixture_files_intact(name: str, root: Path, unread: tuple[str, ...] = ()) -> bool:
    """Every file of the fixture is in the copy, byte for byte: the mutations undid each other (a file swapped
    with another and back), so there is no damage to report. Files of a part rmqctl says it does not read
    (`unread`: a RocksDB consume queue) are left out: damage there is outside what verify reads."""
    if name not in _FIXTURE_FILES:
        _FIXTURE_FILES[name] = snapshot(FIXTURES / name / "store")
    copy = snapshot(root)
    return all(
        copy.get(path) == digest
        for path, digest in _FIXTURE_FILES[name].items()
        if not any(path == part or path.startswith(part + "/") for part in unread)
    )


def mutate(root: Path, rng: random.Random, outside: Path, profile: "Profile") -> list[tuple[str, bool]]:
    """Damage a store copy in 1..3 ways; returns (what, whether verify must report it) for each."""
    kinds = files_of(root)
    kinds["slots"], kinds["conf"] = profile.slots, profile.conf
    done = []
    for _ in range(rng.randint(1, 3)):
        how = rng.choice(MUTATIONS)
        try:
            out = how(root, kinds, rng, outside, S)
        except (IndexError, ValueError, StopIteration, struct.error):  # nothing of that kind (or too small) here
            continue
        if out:
            done.append(out)
    return done or [("none applicable", False)]


def _pick(kinds, rng, *names) -> Path:
    choices = [p for n in names for p in kinds[n] if p.exists() and not p.is_symlink()]
    return rng.choice(choices)


def _write(path: Path, data: bytes):
    path.write_bytes(bytes(data))


def m_flip(root, kinds, rng, outside, S):
    path = _pick(kinds, rng, "commitlog", "consumequeue", "index", "segment", "other", "rocksdb")
    data = bytearray(path.read_bytes())
    for _ in range(rng.randint(1, 8)):
        if data:
            data[rng.randrange(len(data))] ^= rng.randint(1, 255)
    _write(path, data)
    return f"flip {path.name}", False


def m_zero_run(root, kinds, rng, outside, S):
    path = _pick(kinds, rng, "commitlog", "consumequeue", "index", "segment", "rocksdb")
    data = bytearray(path.read_bytes())
    a = rng.randrange(len(data))
    b = min(len(data), a + rng.randint(1, 4096))
    data[a:b] = bytes(b - a)
    _write(path, data)
    return f"zero {path.parent.name}/{path.name}[{a}:{b}]", False


def m_cut(root, kinds, rng, outside, S):
    path = _pick(kinds, rng, "commitlog", "consumequeue", "index", "segment", "rocksdb")
    size = path.stat().st_size
    os.truncate(path, rng.choice([0, rng.randrange(size), size - 1]))
    # a MetaQ segment has no fixed size: cut at a record boundary, the last one is only shorter; a RocksDB
    # file may be one RocksDB does not read (IDENTITY, an empty WAL): crashes are judged there, not findings
    return f"cut {path.parent.name}/{path.name}", path.suffix != ".meta" and path not in kinds["rocksdb"]


def m_grow(root, kinds, rng, outside, S):
    path = _pick(kinds, rng, "commitlog", "consumequeue", "index", "segment")
    with open(path, "ab") as f:
        f.write(rng.randbytes(rng.randint(1, 100)))
    return f"grow {path.parent.name}/{path.name}", True


def m_length(root, kinds, rng, outside, S):
    path = _pick(kinds, rng, "commitlog")
    recs = record_starts(path)
    pos, size = rng.choice(recs)
    data = bytearray(path.read_bytes())
    sysflag = struct.unpack_from(">i", data, pos + SYSFLAG_AT)[0]
    head = S.RECORD_HEADS[(bool(sysflag & S.BORNHOST_V6_FLAG), bool(sysflag & S.STOREHOSTADDRESS_V6_FLAG))][0]
    body_len_at = pos + head.size - 4
    field = rng.choice(["totalSize", "bodyLength", "topicLength", "propertiesLength"])
    if field == "totalSize":
        struct.pack_into(">i", data, pos, rng.choice(HOSTILE32))
    elif field == "bodyLength":
        value = rng.choice([v for v in HOSTILE32 if v != struct.unpack_from(">i", data, body_len_at)[0]])
        struct.pack_into(">i", data, body_len_at, value)
    else:
        body_len = struct.unpack_from(">i", data, body_len_at)[0]
        topic_at = body_len_at + 4 + body_len
        v2 = struct.unpack_from(">i", data, pos + MAGIC_AT)[0] == S.MAGIC_V2
        if field == "topicLength":
            fmt, span = (">H", 2) if v2 else (">B", 1)
            old = struct.unpack_from(fmt, data, topic_at)[0]
            struct.pack_into(
                fmt, data, topic_at, rng.choice([v for v in (0, (1 << 8 * span) - 1, old + 1) if v != old])
            )
        else:
            tlen = struct.unpack_from(">H" if v2 else ">B", data, topic_at)[0]
            props_at = topic_at + (2 if v2 else 1) + tlen
            old = struct.unpack_from(">H", data, props_at)[0]
            struct.pack_into(">H", data, props_at, rng.choice([v for v in (0xFFFF, 0x8000, old + 1) if v != old]))
    _write(path, data)
    return f"{field} of the record at {path.name}:{pos}", True


def m_magic(root, kinds, rng, outside, S):
    path = _pick(kinds, rng, "commitlog")
    pos, _ = rng.choice(record_starts(path))
    data = bytearray(path.read_bytes())
    struct.pack_into(">i", data, pos + MAGIC_AT, rng.getrandbits(31) | 1)
    _write(path, data)
    return f"magic of the record at {path.name}:{pos}", True


def m_body(root, kinds, rng, outside, S):
    path = _pick(kinds, rng, "commitlog")
    data = bytearray(path.read_bytes())
    cands = []
    for pos, size in record_starts(path):
        sysflag = struct.unpack_from(">i", data, pos + SYSFLAG_AT)[0]
        head = S.RECORD_HEADS[(bool(sysflag & S.BORNHOST_V6_FLAG), bool(sysflag & S.STOREHOSTADDRESS_V6_FLAG))][0]
        n = struct.unpack_from(">i", data, pos + head.size - 4)[0]
        if n > 0:
            cands.append(pos + head.size + rng.randrange(n))
    at = rng.choice(cands)
    data[at] ^= 1 << rng.randrange(8)
    _write(path, data)
    return f"body bit at {path.name}:{at}", True


def m_topic_utf8(root, kinds, rng, outside, S):
    path = _pick(kinds, rng, "commitlog")
    data = bytearray(path.read_bytes())
    pos, _ = rng.choice(record_starts(path))
    sysflag = struct.unpack_from(">i", data, pos + SYSFLAG_AT)[0]
    head = S.RECORD_HEADS[(bool(sysflag & S.BORNHOST_V6_FLAG), bool(sysflag & S.STOREHOSTADDRESS_V6_FLAG))][0]
    body_len = struct.unpack_from(">i", data, pos + head.size - 4)[0]
    v2 = struct.unpack_from(">i", data, pos + MAGIC_AT)[0] == S.MAGIC_V2
    topic_at = pos + head.size + body_len + (2 if v2 else 1)
    data[topic_at] = 0xFF
    _write(path, data)
    return f"non-UTF-8 topic at {path.name}:{pos}", True


def m_props_separators(root, kinds, rng, outside, S):
    path = _pick(kinds, rng, "commitlog")
    data = bytearray(path.read_bytes())
    for pos, size in rng.sample(record_starts(path), k=min(5, len(record_starts(path)))):
        seg = data[pos : pos + size]
        if b"\x01" in seg:
            for i in range(pos, pos + size):
                if data[i] in (1, 2) and i > pos + 100:
                    data[i] = ord("a")
            _write(path, data)
            return f"properties without separators at {path.name}:{pos}", False  # a record may still parse
    return None


def m_swap(root, kinds, rng, outside, S):
    a, b = rng.sample([p for p in kinds["commitlog"] if p.exists()], 2)
    da, db = a.read_bytes(), b.read_bytes()
    a.write_bytes(db)
    b.write_bytes(da)
    return f"swap {a.name} {b.name}", da != db and bool(record_starts(a) or record_starts(b))


def m_stray(root, kinds, rng, outside, S):
    where = rng.choice(
        [
            "commitlog/abc",
            "commitlog/0000000000000000000x",
            "consumequeue/TopicTest/x/1",
            "index/garbage",
            "commitlog/99999999999999999999",
        ]
    )
    p = root / where
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(rng.randbytes(rng.choice([0, 10, 4096])))
    # a MetaQ broker ignores a directory without '-' in its dataPath (loadDataDir): damage only to RocketMQ
    return f"stray {where}", where.startswith("commitlog/") and bool(kinds["commitlog"])


def m_index_loop(root, kinds, rng, outside, S):
    path = _pick(kinds, rng, "index")
    data = bytearray(path.read_bytes())
    count = struct.unpack_from(">i", data, INDEX_COUNT_AT)[0]
    if count < 3 or not kinds["slots"]:
        return None
    k = rng.randrange(2, count)
    at = S.INDEX_HEADER_SIZE + kinds["slots"] * S.HASH_SLOT_SIZE + k * S.INDEX_ENTRY_SIZE + PREV_INDEX_AT
    struct.pack_into(">i", data, at, rng.choice([k, k + 1 if k + 1 < count else k]))
    _write(path, data)
    return f"index chain loop at {path.name} entry {k}", True


def m_index_header(root, kinds, rng, outside, S):
    path = _pick(kinds, rng, "index")
    data = bytearray(path.read_bytes())
    struct.pack_into(">i", data, rng.choice([SLOT_COUNT_AT, INDEX_COUNT_AT]), rng.choice(HOSTILE32[:3]))
    _write(path, data)
    return f"index header count of {path.name}", True


def m_unit_past_end(root, kinds, rng, outside, S):
    path = _pick(kinds, rng, "consumequeue")
    data = bytearray(path.read_bytes())
    used = [
        i for i in range(0, len(data) - S.CQ_UNIT_SIZE + 1, S.CQ_UNIT_SIZE) if S.CQ_UNIT.unpack_from(data, i)[1] > 0
    ]
    at = rng.choice(used)
    if rng.random() < 0.5:
        struct.pack_into(">q", data, at, (1 << 40) + rng.randrange(1 << 20))
    else:
        struct.pack_into(">i", data, at + 8, rng.choice([0x7FFFFFFE, 1 << 24, 7]))  # size, after the 8-byte offset
    _write(path, data)
    return f"consumequeue unit past the end in {path.parent.parent.name}/{path.parent.name}/{path.name}", True


def m_cut_config(root, kinds, rng, outside, S):
    path = rng.choice([p for p in kinds["config"] if p.suffix == ".json"])
    data = path.read_bytes()
    path.write_bytes(data[: rng.randrange(max(1, len(data)))])
    return f"cut config/{path.name}", False


def m_checkpoint(root, kinds, rng, outside, S):
    p = root / "checkpoint"
    if not p.exists():
        return None
    data = bytearray(p.read_bytes())
    if rng.random() < 0.5:
        data = data[: rng.randrange(len(data))]
    else:
        struct.pack_into(">q", data, 8 * rng.randrange(3), rng.choice([-1, 1 << 62, 0]))
    p.write_bytes(bytes(data))
    return "checkpoint", False


def m_symlink_out(root, kinds, rng, outside, S):
    path = _pick(kinds, rng, "consumequeue", "index", "commitlog")
    target = outside / f"{path.name}-{rng.getrandbits(32):08x}"
    shutil.copyfile(path, target)
    path.unlink()
    path.symlink_to(target)
    return f"symlink out of the store: {path.relative_to(root)}", True


def _rocksdb_queue(kinds) -> Path:
    """The store's RocksDB queue directory (StopIteration, as no such part, when the store has none)."""
    return next(p for p in kinds["rocksdb"] if p.exists()).parent


def _rocksdb_read_write(directory: Path, change, keep_open_files: bool = False):
    """Change a store copy's RocksDB database with RocksDB itself; with keep_open_files the files are taken
    while it is still open, as a crash leaves them (closing flushes the WAL into an SST)."""
    import rocksdict  # here: only the RocksDB fixtures' mutations open a database

    opts = rocksdict.Options(raw_mode=True)
    try:
        db = rocksdict.Rdict(
            str(directory),
            options=opts,
            column_families={
                cf: rocksdict.Options(raw_mode=True)
                for cf in rocksdict.Rdict.list_cf(str(directory), opts)
                if cf != "default"
            },
        )
    except Exception as e:  # an earlier mutation of this copy broke the database: nothing left to change this way
        raise ValueError(e) from e
    crashed = directory.with_name(directory.name + ".crashed")
    try:
        try:
            change(db, rocksdict)
        except Exception as e:  # e.g. `offset` already dropped by an earlier mutation of this copy
            raise ValueError(e) from e
        if keep_open_files:
            shutil.copytree(directory, crashed)
    finally:
        db.close()
    if keep_open_files:
        shutil.rmtree(directory)
        crashed.rename(directory)
    (directory / "rocksdict-config.json").unlink(missing_ok=True)


def m_rocksdb_remove(root, kinds, rng, outside, S):
    """A RocksDB queue without a file its MANIFEST needs: CURRENT, the MANIFEST itself, or an SST."""
    path = rng.choice(
        [
            p
            for p in kinds["rocksdb"]
            if p.exists() and (p.name.startswith(("CURRENT", "MANIFEST-")) or p.suffix == ".sst")
        ]
    )
    path.unlink()
    return f"remove {path.parent.name}/{path.name}", True


def m_rocksdb_family(root, kinds, rng, outside, S):
    """Column families that are not RocketMQ's consume queue: `offset` dropped, or one it does not have."""
    directory = _rocksdb_queue(kinds)
    if rng.random() < 0.5:
        _rocksdb_read_write(directory, lambda db, _: db.drop_column_family("offset"))
        return f"drop column family offset of {directory.name}", True
    _rocksdb_read_write(directory, lambda db, rd: db.create_column_family("timer", rd.Options(raw_mode=True)))
    return f"add column family timer to {directory.name}", True


def m_rocksdb_wal(root, kinds, rng, outside, S):
    """A WAL holding units written again (same keys and values, as a re-dispatch writes them), cut at a random
    point: RocksDB drops the torn tail by design, so the store reads as before (nothing to report)."""
    directory = _rocksdb_queue(kinds)

    def write_again(db, _):
        for key, value in list(db.items())[: rng.randint(1, 64)]:
            db.put(key, value)

    _rocksdb_read_write(directory, write_again, keep_open_files=True)
    wal = max((p for p in directory.glob("*.log") if p.stat().st_size), key=lambda p: p.name)
    os.truncate(wal, rng.randrange(wal.stat().st_size))
    return f"cut the WAL {directory.name}/{wal.name}", False


CONFIG_DAMAGE = ("remove CURRENT", "remove MANIFEST", "remove SST", "garbage value", "unknown column family")


def config_database(root: Path, conf: Path | None, damage: str, rng: random.Random) -> Path:
    """Give a store copy the consumer offsets database of a storeType=defaultRocksDB broker (5.2-5.3.3's layout:
    config/consumerOffsets with default, kvDataVersion and forbidden, an offset of every queue the store has), then
    damage it: a file its MANIFEST needs gone, a value that is not JSON, or a column family RocketMQ never
    creates. Returns the database."""
    sys.path.insert(0, str(REPO / "tests"))
    from conftest import write_rocksdb  # here: the tests' one builder of broker-shaped databases, for these stores only
    from rmqctl.config import load_config  # here: as every rmqctl import of this script, after the path is set
    from rmqctl.store import Store, queue_keys

    try:
        store = Store(root, load_config(str(conf)) if conf else None)
        queues = queue_keys(store)
        store.close()
    except Exception:  # a store an earlier mutation broke beyond listing its queues: offsets of one queue
        queues = [("TopicTest", 0)]
    offsets = {
        f"{topic}@torture".encode(): json.dumps({"offsetTable": {str(qid): 0}}).encode() for topic, qid in queues
    }
    families = {
        "default": offsets,
        "kvDataVersion": {b"kvDataVersionKey": b'{"counter":3,"stateVersion":0}'},
        "forbidden": {},
    }
    if damage == "garbage value":
        families["default"][rng.choice(sorted(families["default"]))] = rng.choice(
            [b'{"offsetTable":{0:', b"[1,2]", b"\xff\xfe", b""]
        )
    if damage == "unknown column family":
        families["timer"] = {b"k": b"v"}
    db = root / "config" / "consumerOffsets"
    db.parent.mkdir(exist_ok=True)
    write_rocksdb(db, families, "none")
    gone = {"remove CURRENT": "CURRENT", "remove MANIFEST": "MANIFEST-*", "remove SST": "*.sst"}.get(damage)
    if gone:
        rng.choice(sorted(db.glob(gone))).unlink()
    return db


def m_config_database(root, kinds, rng, outside, S):
    """A damaged RocksDB config database beside the store's files; where the broker reads it (storeType=
    defaultRocksDB: the RocksDB queue fixtures), its load fails, which verify must report (config-load-fails or a
    refusal); elsewhere it is a stale database the broker never opens."""
    if (root / "config" / "consumerOffsets").exists():
        raise ValueError("this copy has its config database already")
    damage = rng.choice(CONFIG_DAMAGE)
    config_database(root, kinds["conf"], damage, rng)
    return f"config database consumerOffsets: {damage}", reads_config_databases(kinds["conf"])


def reads_config_databases(conf: Path | None) -> bool:
    """The broker of this config keeps its configs in RocksDB (storeType=defaultRocksDB)."""
    from rmqctl.config import load_config  # here: as every rmqctl import of this script, after the path is set
    from rmqctl.parts import ROCKSDB_STORE

    return conf is not None and load_config(str(conf)).storeType == ROCKSDB_STORE


MUTATIONS = [
    m_flip,
    m_zero_run,
    m_cut,
    m_grow,
    m_length,
    m_length,
    m_magic,
    m_body,
    m_topic_utf8,
    m_props_separators,
    m_swap,
    m_stray,
    m_index_loop,
    m_index_header,
    m_unit_past_end,
    m_cut_config,
    m_checkpoint,
    m_symlink_out,
    m_rocksdb_remove,
    m_rocksdb_family,
    m_rocksdb_wal,
    m_config_database,
]


def judges(argv: list) -> bool:
    """The plain verify run that must report the damage a mutation says it must."""
    return "verify" in argv[:2] and "--deep" not in argv


def finding_keys(verify_stdout: str) -> set:
    keys = set()
    for line in verify_stdout.splitlines():
        with contextlib.suppress(ValueError):
            f = json.loads(line)
            keys.add((f.get("kind"), f.get("file"), f.get("position"), f.get("commitLogOffset")))
    return keys


CHUNK = 100  # fuzzed stores per saved unit of a long run


def claim(saved: Path) -> bool:
    """Whether this process runs the unit saved at `saved`: the first to create its claim file does, unless
    the process that claimed it is gone (killed: the unit is taken over)."""
    mark = saved.with_suffix(".claim")
    try:
        fd = os.open(mark, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        try:
            os.kill(int(mark.read_text() or 0), 0)
            return False
        except (ProcessLookupError, ValueError, FileNotFoundError):
            mark.write_text(str(os.getpid()))
            return True
    os.write(fd, str(os.getpid()).encode())
    os.close(fd)
    return True


def save(saved: Path, figures: dict):
    tmp = saved.with_suffix(".tmp")
    tmp.write_text(json.dumps(figures))
    tmp.replace(saved)
    saved.with_suffix(".claim").unlink(missing_ok=True)


def fuzz(n_stores: int, seed: int, work: Path, state: Path | None, first: int = 0, report: bool = False) -> dict:
    """Stores first..first+n_stores-1, each mutated by its own generator (seed, store number): any store of a
    run can be replayed alone (--from). Chunks of CHUNK stores are saved in `state` as they finish; a rerun
    skips those (a killed long run resumes), and processes sharing `state` each run the chunks they claim."""
    names = fixtures()
    worker = Worker()
    baseline = {}
    profiles = {n: Profile(n) for n in names}
    for n in names:
        out = worker.run(next(filter(judges, profiles[n].commands(FIXTURES / n / "store"))))
        baseline[n] = (out["exit"], finding_keys(out.get("stdout", "")))
    # missed damage is counted on every fixture verify reads (a new finding, or a refusal, must follow damage)
    judged = [n for n in names if baseline[n][0] in (0, 1)]
    total = {
        "stores": 0,
        "commands": 0,
        "crashes": 0,
        "too slow": 0,
        "must_report": 0,
        "missed": 0,
        "examples": [],
        "max_secs": 0.0,
        "max_cpu": 0.0,
        "max_rss": 0,
        "worker growth": 0,
        "damage judged on": judged,
    }
    outside = work / "outside"
    outside.mkdir(exist_ok=True)
    starts = range(first, first + n_stores, CHUNK)
    for start in starts:
        count = min(CHUNK, first + n_stores - start)
        saved = state / f"fuzz-{seed}-{start}-{count}.json" if state else None
        if saved and saved.exists():
            chunk = json.loads(saved.read_text())
        elif report or (saved and not claim(saved)):
            total["not yet run"] = total.get("not yet run", 0) + count
            continue
        else:
            chunk = fuzz_chunk(range(start, start + count), seed, work, worker, profiles, baseline, judged, outside)
            if saved:
                save(saved, chunk)
        for k in ("stores", "commands", "crashes", "too slow", "must_report", "missed"):
            total[k] += chunk[k]
        for k in ("max_secs", "max_cpu", "max_rss", "worker growth"):
            total[k] = max(total[k], chunk[k])
        total["examples"] += chunk["examples"]
        print(
            f"  fuzz: {total['stores']} stores, {total['commands']} commands, {total['crashes']} crashes, "
            f"{total['missed']} missed of {total['must_report']}",
            file=sys.stderr,
            flush=True,
        )
    worker.stop()
    return total


def fuzz_chunk(
    stores: range, seed: int, work: Path, worker: Worker, profiles: dict, baseline: dict, judged: list, outside: Path
) -> dict:
    names = fixtures()
    stats = {
        "stores": 0,
        "commands": 0,
        "crashes": 0,
        "too slow": 0,
        "must_report": 0,
        "missed": 0,
        "examples": [],
        "max_secs": 0.0,
        "max_cpu": 0.0,
        "max_rss": 0,
    }
    for i in stores:
        name = names[i % len(names)]
        root = copy_store(name, work / f"{name}~{i}" / "store")
        what = mutate(root, random.Random(f"{seed}:{i}"), outside, profiles[name])
        must = any(
            m and (adds_a_file(how) or not fixture_files_intact(name, root, profiles[name].unread)) for how, m in what
        )
        for argv in profiles[name].commands(root):
            out = worker.run(argv)
            stats["commands"] += 1
            stats["max_secs"] = max(stats["max_secs"], out["secs"])
            stats["max_cpu"] = max(stats["max_cpu"], out.get("cpu", 0.0))
            stats["max_rss"] = max(stats["max_rss"], out.get("rss", 0))
            stats["too slow"] += out.get("slow", False)
            if out["crash"] or out.get("slow"):
                stats["crashes"] += out["crash"]
                stats["examples"].append(
                    {
                        "store": i,
                        "fixture": name,
                        "mutations": [w for w, _ in what],
                        "argv": [str(a) for a in argv[:3]],
                        "detail": out["detail"],
                    }
                )
                print("  fuzz crash or too slow:", json.dumps(stats["examples"][-1]), file=sys.stderr, flush=True)
            if judges(argv) and must and name in judged:
                stats["must_report"] += 1
                base_exit, base_keys = baseline[name]
                reported = out["exit"] == 2 or (out["exit"] == 1 and finding_keys(out["stdout"]) - base_keys)
                if not reported:
                    stats["missed"] += 1
                    stats["examples"].append(
                        {"store": i, "fixture": name, "mutations": [w for w, _ in what], "missed": True}
                    )
        stats["stores"] += 1
        shutil.rmtree(root.parent)
    stats["worker growth"] = worker.growth
    return stats


# -- hypothesis: the decoders at the library level ---------------------------------------------------------------------


def file_decoders(work: Path) -> dict:
    """Every file kind's decoder at the library level, on a scratch copy of a fixture store where one file of
    that kind is replaced per example: kind -> (that file, its original bytes, read everything of the kind)."""
    from rmqctl import configfiles
    from rmqctl.config import load_config
    from rmqctl.metaq.store import MetaqStore, SegmentScan, decode_data
    from rmqctl.store import Store
    from rmqctl.timerstore import TimerFiles

    def rocketmq(kind, name, read):
        root, conf = copy_store(name, work / f"hyp-{kind}"), load_config(str(conf_of(name)))

        def run():
            store = Store(root, conf)
            try:
                read(store)
            finally:
                store.close()

        return root, run

    def commitlog(store):
        scan = store.scan()
        for _ in scan.entries():
            pass
        for _ in scan.chunks(check_crc=True):
            pass

    def consumequeue(store):
        for cq in store.consume_queues():
            for _ in cq.entries():
                pass
            cq.offset_range()

    def index(store):
        for ix in store.index_files():
            ix.slots(), ix.entries()
            for h in (0, 1, 0x7FFFFFFF, int(ix.entries()["keyHash"][-1]) if len(ix.entries()) else 5):
                ix.select_phy_offsets(h, 64, 0, 1 << 62, [])

    def timerlog(store):
        timer = TimerFiles(store)
        timer.timerlog.damaged(), timer.timerlog.positions(), timer.timerlog.data_end

    def config(store):
        for c in configfiles.present_configs(store.root):
            if c.document is not None:
                configfiles.committed_offsets(c.document), configfiles.topic_names(c.document)
                configfiles.delay_level_offsets(c.document)

    kinds = {}
    for kind, name, read, rel in (
        ("commitlog", "a-basic", commitlog, "commitlog"),
        ("consumequeue", "a-basic", consumequeue, "consumequeue"),
        ("index", "a-basic", index, "index"),
        ("checkpoint", "a-basic", Store.checkpoint, "checkpoint"),
        ("config json", "a-basic", config, "config/delayOffset.json"),
        ("timerlog", "f-timer5", timerlog, "timerlog"),
        ("dledger data", "e-dledger", commitlog, "dledger-n0/data"),
    ):
        root, run = rocketmq(kind, name, read)
        path = root / rel
        if path.is_dir():
            path = next(p for p in sorted(path.rglob("*")) if p.is_file() and p.stat().st_size)
        kinds[kind] = (path, path.read_bytes(), run)

    root = copy_store("g-metaq", work / "hyp-g-metaq")

    def metaq():
        for part in MetaqStore(root).partitions():
            for seg in part.segments:
                buf = seg.read()
                for rec in SegmentScan(buf, len(buf)):
                    decode_data(rec.msgLen, rec.flag, rec.data)

    segment = sorted((root / "meta-test-0").iterdir())[0]
    kinds["metaq segment"] = (segment, segment.read_bytes(), metaq)
    return kinds


def hypothesis_part(examples: int, work: Path, seed: int) -> dict:
    """Every decoder under hypothesis, seeded by the run's --seed (the same examples on every run with it)."""
    from hypothesis import HealthCheck, given, settings, strategies as st
    from hypothesis import seed as seeded

    from rmqctl.errors import RmqError
    from rmqctl.javacompat import parse_properties
    from rmqctl.views.msgid import decode_ids
    from rmqctl.record import Message, RecordError, read_record

    records = []
    for name in ("a-basic", "b-mixed", "c-v5-features"):
        path = sorted((FIXTURES / name / "store" / "commitlog").iterdir())[0]
        data = path.read_bytes()
        records += [data[p : p + n] for p, n in record_starts(path)[:40]]
    failures: list[str] = []
    ran: dict[str, int] = {}
    settings_ = settings(
        max_examples=examples, deadline=None, database=None, derandomize=False, suppress_health_check=list(HealthCheck)
    )

    def opts(test):
        return seeded(seed)(settings_(test))

    def check(what, fn, *args):
        ran[what] = ran.get(what, 0) + 1
        try:
            fn(*args)
        except (RecordError, RmqError, ValueError):  # a clean refusal (the CLI's one line, exit 2)
            pass
        except Exception as e:
            failures.append(f"{what}: {type(e).__name__}: {e}")

    @opts
    @given(
        st.sampled_from(records),
        st.lists(st.tuples(st.integers(0, 4095), st.integers(0, 255)), max_size=8),
        st.integers(0, 64),
        st.booleans(),
    )
    def mutated_records(rec, edits, cut, v2):
        buf = bytearray(rec)
        for at, value in edits:
            buf[at % len(buf)] = value
        buf = bytes(buf[: len(buf) - cut]) if cut < len(buf) else bytes(buf)
        check("record", read_record, buf, 0, len(buf), v2)

    @opts
    @given(st.binary(max_size=512), st.booleans())
    def random_records(buf, v2):
        check("record", read_record, buf, 0, len(buf), v2)

    @opts
    @given(st.text(alphabet=st.characters(codec="utf-8"), max_size=200))
    def properties(text):
        check("properties", parse_properties, text)

    @opts
    @given(st.text(alphabet="0123456789ABCDEFabcdefXYZ:-", max_size=60))
    def msgids(text):
        check("msgId", decode_ids, [text])

    @opts
    @given(st.binary(max_size=300), st.sampled_from([0x1, 0x101, 0x201, 0x301, 0x401, 0x701]))
    def compressed(body, flag):
        m = Message()
        m.sysFlag, m.body = flag, body
        check("decompression", m.decompressed_body, 1 << 16)

    kinds = file_decoders(work)
    hostile = st.sampled_from([0x7FFFFFFF, -1, -(1 << 31), 0, 1 << 30, 3, 20, 52])

    def file_test(kind):
        path, original, read = kinds[kind]

        @opts
        @given(
            st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(0, 255)), max_size=16),
            st.lists(st.tuples(st.integers(0, 1 << 20), hostile), max_size=4),
            st.one_of(st.none(), st.integers(0, 1 << 20)),
        )
        def mutated_file(edits, ints, cut):
            """The file with bytes changed, hostile ints written over its fields, and/or cut short."""
            buf = bytearray(original)
            for at, value in edits:
                if buf:
                    buf[at % len(buf)] = value
            for at, value in ints:
                if len(buf) >= 4:
                    struct.pack_into(">i", buf, (at % (len(buf) - 3)) & ~3, value)  # fields sit on 4-byte bounds
            path.write_bytes(bytes(buf[: cut % (len(buf) + 1)] if cut is not None else buf))
            check(kind, read)

        return mutated_file

    for test in (mutated_records, random_records, properties, msgids, compressed, *map(file_test, sorted(kinds))):
        test()
    for path, original, _ in kinds.values():
        path.write_bytes(original)
    return {"examples": sum(ran.values()), "failures": len(failures), "first": failures[:3], "per decoder": ran}


# -- crash trials -------------------------------------------------------------------------------------------------------


STEP_CALLS = (
    "rename",
    "replace",
    "unlink",
    "remove",
    "rmdir",
    "mkdir",
    "link",
    "symlink",
    "fsync",
    "ftruncate",
    "pwrite",
    "write",
    "posix_fallocate",
    "truncate",
)


def run_in_child(
    argv: list,
    kill_at_step: int | None = None,
    stdin_fd: int | None = None,
    stdout_fd: int | None = None,
    parent_fds: tuple = (),
) -> int:
    """Fork; the child runs the CLI in-process, SIGKILLing itself before its kill_at_step-th filesystem step
    (with 0: never, and it writes its step count to STEPS_FD). `parent_fds` are the parent's ends of the
    pipes, closed in the child (its stdin must see EOF). Returns the child pid."""
    pid = os.fork()
    if pid:
        return pid
    try:
        for fd in parent_fds:
            os.close(fd)
        if stdin_fd is not None:
            os.dup2(stdin_fd, 0)
        if stdout_fd is not None:
            os.dup2(stdout_fd, 1)
        else:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        if kill_at_step is not None:
            _count_steps(kill_at_step)
        from rmqctl.cli.main import cli

        code = 0
        try:
            cli.main(args=[str(a) for a in argv], prog_name="rmqctl")
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
        sys.stdout.flush()
        if kill_at_step == 0:
            os.write(STEPS_FD, str(STEPS["n"]).encode())
        os._exit(code)
    except BaseException:
        os._exit(99)


STEPS = {"n": 0}
STEPS_FD = -1


def _count_steps(kill_at: int):
    """Patch the filesystem calls rmqctl's writers make: each is one step; at step `kill_at` SIGKILL
    (before the call: the step never happened; the call before it has)."""
    import shutil as sh

    import rmqctl.txn as txn

    def wrap(fn):
        def step(*a, **k):
            STEPS["n"] += 1
            if STEPS["n"] == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            return fn(*a, **k)

        return step

    for name in STEP_CALLS:
        if hasattr(os, name):
            setattr(os, name, wrap(getattr(os, name)))
    sh.rmtree = wrap(sh.rmtree)
    txn.exchange = wrap(txn.exchange)
    import mmap

    class Map(mmap.mmap):
        def flush(self, *a):
            STEPS["n"] += 1
            if STEPS["n"] == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            return super().flush(*a)

    mmap.mmap = Map


def count_steps(argv: list) -> int:
    global STEPS_FD
    r, w = os.pipe()
    STEPS_FD = w
    pid = run_in_child(argv, kill_at_step=0)
    os.close(w)
    _, status = os.waitpid(pid, 0)
    n = os.read(r, 64)
    os.close(r)
    return int(n or 0)


def recover(root: Path):
    """What every writing command does first under the lock: finish or undo a killed run."""
    from rmqctl.txn import locked_for_writing

    with locked_for_writing(root):
        pass


class WriterTrial:
    """One writing command on a prepared store: its old state, its new state (a clean run), and how a killed
    run is judged."""

    canonical_index = False

    def __init__(self, name: str, work: Path):
        self.name = name
        self.work = work
        self.conf = conf_of(self.fixture)

    def prepare(self, dest: Path) -> Path:
        return copy_store(self.fixture, dest)

    def argv(self, root: Path) -> list:
        raise NotImplementedError

    def reference(self):
        root = self.prepare(self.work / f"{self.name}-old")
        self.old = snapshot(root, canonical_index=self.canonical_index)
        self.old_verify = verify_exit(root, self.conf)
        t = time.monotonic()
        pid = run_in_child(self.argv(root))
        _, status = os.waitpid(pid, 0)
        self.duration = time.monotonic() - t
        assert os.waitstatus_to_exitcode(status) == 0, f"{self.name}: the reference run failed"
        self.new = snapshot(root, canonical_index=self.canonical_index)
        assert self.new != self.old, f"{self.name}: the run changes nothing, so a kill could not mix states"
        shutil.rmtree(root)

    def judge(self, root: Path) -> tuple[bool, int]:
        """(mixed, lost acknowledged messages) after recovery."""
        state = snapshot(root, canonical_index=self.canonical_index)
        return state not in (self.old, self.new), 0

    def next_write(self, root: Path) -> int:
        pid = run_in_child(self.argv(root))
        return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def verify_exit(root: Path, conf) -> int:
    pid = run_in_child(["verify", "--quiet", "--store", root] + (["--broker-config", conf] if conf else []))
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


class RebuildCQ(WriterTrial):
    fixture = "a-basic"

    def prepare(self, dest):
        root = copy_store(self.fixture, dest)
        shutil.rmtree(root / "consumequeue" / "TopicTest")
        os.truncate(sorted((root / "consumequeue" / "OrderTopic" / "1").iterdir())[0], 100)
        return root

    def argv(self, root):
        return ["rebuild", "consumequeue", "--store", root, "--broker-config", self.conf, "--no-backup"]


class RebuildIndex(WriterTrial):
    fixture = "a-basic"
    canonical_index = True

    def prepare(self, dest):
        root = copy_store(self.fixture, dest)
        for p in sorted((root / "index").iterdir())[-3:]:
            p.unlink()
        return root

    def argv(self, root):
        return ["rebuild", "index", "--store", root, "--broker-config", self.conf, "--no-backup"]


class Repair(WriterTrial):
    fixture = "d-crashed"

    def argv(self, root):
        return ["repair", "--store", root, "--broker-config", self.conf, "--no-backup"]


class Clean(WriterTrial):
    """The broker's cleaner deletes file by file; so does clean --apply, each deletion durable before the
    next. A killed run must leave a prefix of the plan (the broker's own intermediate states)."""

    fixture = "a-basic"

    def argv(self, root):
        return [
            "clean",
            "--store",
            root,
            "--broker-config",
            self.conf,
            "--now",
            "--file-reserved-time",
            "0",
            "--until-ok",
            "--apply",
            "--format",
            "jsonl",
        ]

    def reference(self):
        root = self.prepare(self.work / "clean-plan")
        r, w = os.pipe()
        pid = run_in_child(self.argv(root), stdout_fd=w, parent_fds=(r,))
        os.close(w)
        with os.fdopen(r) as f:
            rows = [json.loads(l) for l in f if l.strip()]
        os.waitpid(pid, 0)
        self.plan = [row["file"] for row in rows if row.get("action") == "delete"]
        shutil.rmtree(root)
        super().reference()

    def judge(self, root):
        state = snapshot(root)
        gone = [f for f in self.old if f not in state]
        changed = [f for f in state if state[f] != self.old.get(f)]
        prefix = set(self.plan[: len(gone)])
        return bool(changed) or set(gone) != prefix, 0


class Restore(WriterTrial):
    """config restore --apply: two cut config files put back from their sound .bak copies in one swap."""

    fixture = "a-basic"

    def prepare(self, dest):
        root = copy_store(self.fixture, dest)
        for name, text in (
            ("consumerOffset.json", '{"offsetTable":{"TopicTest@g":{0:5,1:7}}}'),
            ("topics.json", '{"topicConfigTable":{"TopicTest":{"readQueueNums":4}}}'),
        ):
            (root / "config" / (name + ".bak")).write_text(text)
            (root / "config" / name).write_text(text[: len(text) // 2])
        return root

    def argv(self, root):
        return ["config", "restore", "--store", root, "--apply", "--no-backup"]


class BackupRestore(WriterTrial):
    """restore BACKUP: put back the index files a `rebuild index` replaced (kept in its backup), in one swap."""

    fixture = "a-basic"
    canonical_index = True

    def prepare(self, dest):
        if not hasattr(self, "template"):
            self.template = RebuildIndex.prepare(
                self, Path(tempfile.mkdtemp(prefix="restore-", dir=self.work)) / "store"
            )
            pid = run_in_child(["rebuild", "index", "--store", self.template, "--broker-config", self.conf])
            assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0, (
                "restore: the rebuild making its backup failed"
            )
            self.backup = next(p.name for p in self.template.iterdir() if p.name.startswith(".rmqctl-backup-"))
        shutil.copytree(self.template, dest, symlinks=True)
        return dest

    def argv(self, root):
        return ["restore", self.backup, "--store", root, "--no-backup"]

    def next_write(self, root):
        """The restore again while its backup is still there (killed before its commit point), else an append:
        a finished restore has used its backup up."""
        if (root / self.backup).is_dir():
            return super().next_write(root)
        pid = run_in_child(["append", "--store", root, "--broker-config", self.conf, "--topic", "After", "--body", "x"])
        return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


class Append(WriterTrial):
    """`append --jsonl -` fed steadily; what it acknowledged must be in the store, and the store must hold the
    old records plus a prefix of the input (nothing else, nothing out of order)."""

    fixture = "a-basic"
    messages = 400

    def __init__(self, name, work):
        super().__init__(name, work)
        self.lines = [
            json.dumps(
                {
                    "topic": f"Crash{i % 3}",
                    "queueId": i % 2,
                    "body": f"message {i} " * 30,
                    "properties": {"KEYS": f"seq-{i}"},
                }
            )
            + "\n"
            for i in range(self.messages)
        ]

    def argv(self, root):
        return ["append", "--store", root, "--broker-config", self.conf, "--jsonl", "-"]

    def feed(self, root: Path, kill_at_step=None, kill_after=None) -> list[dict]:
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        pid = run_in_child(
            self.argv(root), kill_at_step=kill_at_step, stdin_fd=in_r, stdout_fd=out_w, parent_fds=(in_w, out_r)
        )
        os.close(in_r)
        os.close(out_w)
        acks = []

        def read():
            with os.fdopen(out_r, "rb") as f:
                for line in f:
                    if line.endswith(b"\n"):
                        acks.append(json.loads(line))

        def write():
            with contextlib.suppress(BrokenPipeError, OSError), os.fdopen(in_w, "wb") as f:
                for k in range(0, len(self.lines), 25):
                    f.write("".join(self.lines[k : k + 25]).encode())
                    f.flush()
                    time.sleep(0.002)

        threads = [threading.Thread(target=read), threading.Thread(target=write)]
        for t in threads:
            t.start()
        if kill_after is not None:
            time.sleep(kill_after)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        for t in threads:
            t.join()
        self.last_status = status
        return acks

    def reference(self):
        root = self.prepare(self.work / "append-ref")
        self.old = snapshot(root)
        self.old_end = self.end(root)
        self.old_verify = 0
        t = time.monotonic()
        acks = self.feed(root)
        self.duration = time.monotonic() - t
        assert len(acks) == self.messages, "append: the reference run failed"
        shutil.rmtree(root)

    def end(self, root: Path) -> int:
        from rmqctl.config import load_config
        from rmqctl.store import Store

        store = Store(root, load_config(str(self.conf)))
        end = max((f.start + m.position + m.storeSize for f, m in store.scan().records()), default=0)
        store.close()
        return end

    def judge_append(self, root: Path, acks: list[dict]) -> tuple[bool, int]:
        from rmqctl.config import load_config
        from rmqctl.record import Blank, read_record
        from rmqctl.store import Store

        store = Store(root, load_config(str(self.conf)))
        lost = 0
        for a in acks:
            try:
                f = store.commitlog.find(a["commitLogOffset"])
                m = read_record(f.buf, a["commitLogOffset"] - f.start, len(f.buf))
                i = int(m.properties["KEYS"].split("-")[1])
                ok = not isinstance(m, Blank) and m.body_crc_ok() and m.body == f"message {i} ".encode() * 30
            except Exception:
                ok = False
            lost += not ok
        new = [m for f, m in store.scan().records() if f.start + m.position >= self.old_end]
        seqs = [_sequence(m) if m.topic.startswith("Crash") else -1 for m in new]
        store.close()
        return seqs != list(range(len(seqs))), lost


def _sequence(m) -> int:
    """The input line a Crash message was made of (its KEYS `seq-<i>`), -2 for KEYS the input never held (a
    record torn after a sound head once read back with `seq-17\\x00`): mixed."""
    try:
        return int(m.properties.get("KEYS", "x-0").split("-")[1])
    except (ValueError, IndexError):
        return -2


def warm_up(work: Path):
    """Load the compiled kernels into this process once (verify, both rebuilds, repair, append, read-only
    runs on a scratch copy): every forked trial then starts with them instead of loading them itself."""
    from click.testing import CliRunner

    from rmqctl.cli.main import cli

    root = copy_store("d-crashed", work / "warm")
    base = ["--store", str(root), "--broker-config", str(conf_of("d-crashed"))]
    for argv in (
        ["verify", "--deep"],
        ["rebuild", "consumequeue", "--dry-run"],
        ["rebuild", "index", "--dry-run"],
        ["repair", "--dry-run"],
        ["append", "--dry-run", "--topic", "T", "--body", "x"],
    ):
        CliRunner().invoke(cli, argv[:1] + base + argv[1:])
    shutil.rmtree(root)


class RebuildBatchCQ(RebuildCQ):
    """rebuild consumequeue where a 5.x BatchCQ topic's queues are damaged: one gone, one file cut short."""

    fixture = "j-batchcq"

    def prepare(self, dest):
        root = copy_store(self.fixture, dest)
        shutil.rmtree(root / "batchconsumequeue" / "BatchTopic" / "1")
        os.truncate(sorted((root / "batchconsumequeue" / "BatchTopic" / "0").iterdir())[0], 100)
        return root


WRITERS = {
    "append": Append,
    "rebuild consumequeue": RebuildCQ,
    "rebuild batchconsumequeue": RebuildBatchCQ,
    "rebuild index": RebuildIndex,
    "repair": Repair,
    "clean --apply": Clean,
    "config restore": Restore,
    "restore": BackupRestore,
}


STEP_BLOCK = 40  # a long run's filesystem-step kills per saved unit


def writer_steps(name: str, work: Path) -> int:
    """How many filesystem steps a clean run of the writer takes."""
    trial = WRITERS[name](name.replace(" ", "-"), work)
    root = trial.prepare(work / "probe")
    steps = count_steps(trial.argv(root)) if not isinstance(trial, Append) else count_append_steps(trial, root)
    shutil.rmtree(root)
    return steps


def crash_trials(name: str, plan: list[int | None], rng: random.Random, work: Path) -> dict:
    """One writer's trials: a SIGKILL before filesystem step k of each run, or at a random moment (None)."""
    trial = WRITERS[name](name.replace(" ", "-"), work)
    trial.reference()
    row = {
        "writer": name,
        "random kills": 0,
        "step kills": 0,
        "mixed": 0,
        "lost acked": 0,
        "next write failed": 0,
        "verify after": 0,
    }
    for k in plan:
        root = trial.prepare(work / "trial")
        acks = []
        if isinstance(trial, Append):
            acks = trial.feed(root, kill_at_step=k, kill_after=rng.random() * trial.duration if k is None else None)
        else:
            pid = run_in_child(trial.argv(root), kill_at_step=k)
            if k is None:
                time.sleep(rng.random() * trial.duration)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        recover(root)
        mixed, lost = trial.judge_append(root, acks) if isinstance(trial, Append) else trial.judge(root)
        row["mixed"] += mixed
        row["lost acked"] += lost
        row["random kills" if k is None else "step kills"] += 1
        if isinstance(trial, Append):
            code = run_next_append(trial, root)
        else:
            code = trial.next_write(root)
        row["next write failed"] += code != 0
        row["verify after"] += (
            verify_exit(root, trial.conf) > trial.old_verify
            if not isinstance(trial, Repair)
            else verify_exit(root, trial.conf) == 2
        )
        shutil.rmtree(root)
    return row


def count_append_steps(trial: Append, root: Path) -> int:
    global STEPS_FD
    r, w = os.pipe()
    STEPS_FD = w
    trial.feed(root, kill_at_step=0)
    os.close(w)
    n = os.read(r, 64)
    os.close(r)
    return int(n or 0)


def run_next_append(trial: Append, root: Path) -> int:
    """The next writing command after a killed append: another append (a torn record first needs repair,
    which the refusal says)."""
    argv = ["append", "--store", root, "--broker-config", trial.conf, "--topic", "After", "--body", "x"]
    pid = run_in_child(argv)
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    if code == 2:
        pid = run_in_child(["repair", "--store", root, "--broker-config", trial.conf, "--no-backup"])
        os.waitpid(pid, 0)
        pid = run_in_child(argv)
        code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    return code


# -- read-only proof ------------------------------------------------------------------------------------------------------


def read_only_commands(profile: Profile, root: Path) -> list[list]:
    """The fuzzed read commands, then every other command that must not write: the rest of the read
    commands, the plans (clean and config restore without --apply) and every writer's --dry-run."""
    if profile.metaq:
        base = ["--store", root, "--server-config", profile.metaq, "--format", "jsonl"]
        return profile.commands(root) + [["metaq", "clean", *base], ["metaq", "repair", "--dry-run", *base]]
    base = ["--store", root] + (["--broker-config", profile.conf] if profile.conf else []) + ["--format", "jsonl"]
    topic, qid = profile.queue
    return profile.commands(root) + [
        ["consumers", *base],
        ["delay-offsets", *base],
        ["diff", root, root, *base[2:]],
        ["offset-by-time", topic, qid, "2020-01-01T00:00:00", *base],
        ["clean", "--now", "--file-reserved-time", "0", *base],
        ["config", "restore", *base],
        ["append", "--dry-run", "--topic", "T", "--body", "x", *base],
        ["rebuild", "consumequeue", "--dry-run", *base],
        ["rebuild", "index", "--dry-run", *base],
        ["repair", "--dry-run", *base],
        ["restore", *base],
    ]


def readonly(work: Path) -> dict:
    """sha256, mtime and the listing of every file (the lock and anything of rmqctl's own included) before
    and after each read-only command, on a copy of every fixture."""
    worker = Worker()
    changed = commands = crashes = slow = 0
    for name in fixtures():
        root = copy_store(name, work / f"ro-{name}" / "store")
        before = snapshot(root, with_mtime=True)
        listing = sorted(str(p) for p in root.rglob("*"))
        for argv in read_only_commands(Profile(name), root):
            out = worker.run(argv)
            commands += 1
            crashes += out["crash"]
            slow += out.get("slow", False)
            after = snapshot(root, with_mtime=True)
            changed += sum(1 for k in set(before) | set(after) if before.get(k) != after.get(k))
            changed += sorted(str(p) for p in root.rglob("*")) != listing
            if after != before:
                print(f"  read-only: {' '.join(map(str, argv[:3]))} changed {name}", file=sys.stderr, flush=True)
        shutil.rmtree(root.parent)
    worker.stop()
    return {
        "commands": commands,
        "files changed": changed,
        "crashes": crashes,
        "too slow": slow,
        "fixtures": fixtures(),
    }


# -- disk full on a real tmpfs ------------------------------------------------------------------------------------------


@contextlib.contextmanager
def tmpfs(path: Path):
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(path)], check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=True)


def set_free(path: Path, free: int):
    st = os.statvfs(path)
    used = (st.f_blocks - st.f_bfree) * st.f_frsize
    subprocess.run(["mount", "-o", f"remount,size={used + free}", str(path)], check=True)


def disk_full(name: str, work: Path, frees: list[int]) -> dict:
    """One writer on a real tmpfs with `frees` bytes left, one trial each; then with room again."""
    trial = WRITERS[name](name.replace(" ", "-"), work)
    row = {
        "writer": name,
        "trials": 0,
        "refused": 0,
        "not one line / exit 2": 0,
        "mixed": 0,
        "lost acked": 0,
        "unloadable": 0,
        "ok with room": 0,
    }
    trial.reference() if not isinstance(trial, Append) else None
    for free in frees:
        with tmpfs(work / "full") as mnt:
            root = trial.prepare(mnt / "store")
            if isinstance(trial, Append):
                trial.old_end = trial.end(root)
            set_free(mnt, free)
            argv = [sys.executable, "-m", "rmqctl", *map(str, trial.argv(root))]
            env = dict(os.environ, PYTHONPATH=str(REPO))
            feed = "".join(trial.lines) if isinstance(trial, Append) else None
            res = subprocess.run(argv, input=feed, capture_output=True, text=True, env=env, timeout=600)
            row["trials"] += 1
            lines = [l for l in res.stderr.splitlines() if l.strip()]
            if res.returncode != 0:
                row["refused"] += 1
                row["not one line / exit 2"] += res.returncode != 2 or len(lines) != 1
            if isinstance(trial, Append):
                acks = [json.loads(l) for l in res.stdout.splitlines() if l.strip()]
                mixed, lost = trial.judge_append(root, acks)
                verify_old = 0
            else:
                mixed, lost = trial.judge(root)
                verify_old = trial.old_verify
            row["mixed"] += mixed
            row["lost acked"] += lost
            if mixed or lost:
                print(
                    f"  disk full: {name} with {free} bytes free: exit {res.returncode}, mixed {mixed}, lost {lost}: "
                    f"{res.stderr.strip()[:300]}",
                    file=sys.stderr,
                )
            row["unloadable"] += verify_exit(root, trial.conf) > verify_old
            set_free(mnt, 48 << 20)
            if isinstance(trial, Append):
                code = run_next_append(trial, root)
            else:
                code = trial.next_write(root)
            row["ok with room"] += code == 0 and verify_exit(root, trial.conf) <= (
                0 if not isinstance(trial, Repair) else 1
            )
    return row


def disk_full_run(name: str, frees: list[int]) -> dict:
    with tempfile.TemporaryDirectory(prefix="rmqctl-diskfull-") as mnt:  # not /dev/shm: a mount point
        return disk_full(name, Path(mnt), frees)


# -- the table ----------------------------------------------------------------------------------------------------------


def table(results: dict) -> str:
    out = []
    if "fuzz" in results:
        f = results["fuzz"]
        out += [
            "| fuzz | fuzzed stores | read commands run | crashes | too slow | damage verify must report | missed "
            "| slowest command (CPU) | peak RSS of a command | worker RSS growth |",
            "|---|---|---|---|---|---|---|---|---|---|",
            f"| every fixture, every read command | {f['stores']} | {f['commands']} | **{f['crashes']}** | "
            f"**{f['too slow']}** | "
            f"{f['must_report']} | **{f['missed']}** | {f['max_secs']:.1f} s ({f['max_cpu']:.1f} s) "
            f"| {f['max_rss'] >> 20} MiB | {f['worker growth'] >> 20} MiB |",
            f"\nDamage verify must report is judged on {', '.join(f['damage judged on'])} (the fixtures verify "
            "reads: a new finding or a refusal must follow); crashes on every fixture.",
            "",
        ]
    if "hypothesis" in results:
        h = results["hypothesis"]
        out += [
            "| hypothesis (library decoders) | examples | failures |",
            "|---|---|---|",
            f"| {', '.join(h['per decoder'])} | {h['examples']} | **{h['failures']}** |",
            "",
        ]
    if "crash" in results:
        out += [
            "| crash trials | random kills | kills at filesystem steps (of steps) | mixed states | lost acknowledged "
            "| next write failed | verify worse after |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in results["crash"]:
            out.append(
                f"| {r['writer']} | {r['random kills']} | {r['step kills']} (of {r['steps']}) | **{r['mixed']}** | "
                f"**{r['lost acked']}** | {r['next write failed']} | {r['verify after']} |"
            )
        out.append("")
    if "readonly" in results:
        r = results["readonly"]
        out += [
            "| read-only proof | commands × fixtures | files changed |",
            "|---|---|---|",
            f"| sha256 + mtime of every file, every read command and dry run, every fixture | {r['commands']} "
            f"| **{r['files changed']}** |",
            "",
        ]
    if "diskfull" in results:
        out += [
            "| disk full (tmpfs) | trials | refused | not one line / exit 2 | mixed | lost acknowledged | unloadable | "
            "succeeds with room |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for r in results["diskfull"]:
            out.append(
                f"| {r['writer']} | {r['trials']} | {r['refused']} | {r['not one line / exit 2']} | **{r['mixed']}** "
                f"| **{r['lost acked']}** | **{r['unloadable']}** | {r['ok with room']} |"
            )
        out.append("")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="the CI size: 300 stores, 3 kills per writer, sampled steps")
    ap.add_argument("--stores", type=int, help="fuzzed stores (default 300 quick, 10000 long)")
    ap.add_argument(
        "--from",
        dest="first",
        type=int,
        default=0,
        help="fuzz: the first store's number (--from 1234 --stores 1 replays store 1234 of a run)",
    )
    ap.add_argument("--kills", type=int, help="random kills per writer (default 3 quick, 30 long)")
    ap.add_argument("--steps", type=int, default=6, help="--quick: filesystem steps sampled per writer")
    ap.add_argument("--examples", type=int, help="hypothesis examples per decoder (default 100 quick, 2000 long)")
    ap.add_argument("--seed", type=int, default=20241124)
    ap.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated subset of {','.join(PARTS)}")
    ap.add_argument(
        "--writers",
        default="",
        help="crash and disk-full trials of these writers only (comma-separated, e.g. 'append,rebuild index')",
    )
    ap.add_argument(
        "--state",
        type=Path,
        help="save each finished unit (a chunk of fuzzed stores, a writer's trials) "
        "here and reuse it on a rerun: a long run resumes where it stopped",
    )
    ap.add_argument(
        "--report", action="store_true", help="with --state: the table of the units saved so far, running nothing"
    )
    ap.add_argument("--json", help="also write the figures as JSON here")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker_main()
    parts = [p for p in args.parts.split(",") if p]
    writers = [w for w in args.writers.split(",") if w] or list(WRITERS)
    mode = "quick" if args.quick else "long"
    if args.state:
        args.state.mkdir(parents=True, exist_ok=True)
    results = {}
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="rmqctl-torture-", dir=scratch()) as tmp:
        work = Path(tmp)
        units = []  # (part, key, what to run): each saved under --state as it finishes
        if "readonly" in parts:
            units.append(("readonly", "readonly", lambda: readonly(work)))
        if "hypothesis" in parts:
            n = args.examples or (100 if args.quick else 2000)
            units.append(("hypothesis", f"hypothesis-{args.seed}-{n}", lambda: hypothesis_part(n, work, args.seed)))
        kills = args.kills or (3 if args.quick else 30)
        steps, warmed = {}, False
        for name in writers if "crash" in parts else []:
            # every process sharing a run names the same units: the writers' step counts are saved first
            saved = args.state / f"steps-{args.seed}-{name.replace(' ', '_')}.json" if args.state else None
            if saved and saved.exists():
                steps[name] = json.loads(saved.read_text())
            elif args.report:
                results.setdefault("not yet run", []).append(f"{name}: its step count")
                continue
            else:
                if not warmed:
                    warm_up(work)
                    warmed = True
                steps[name] = writer_steps(name, work)
                if saved:
                    saved.write_text(json.dumps(steps[name]))
            rng = random.Random(f"{args.seed}:crash:{name}")
            everything = range(1, steps[name] + 1)
            blocks = (
                [list(everything[i : i + STEP_BLOCK]) for i in range(0, len(everything), STEP_BLOCK)]
                if not args.quick
                else [sorted(rng.sample(everything, min(args.steps, len(everything))))]
            )
            key = f"crash-{mode}-{args.seed}-{name}"
            units.append(
                (
                    "crash",
                    f"{key}-{kills}-random",
                    lambda name=name, rng=rng: crash_trials(name, [None] * kills, rng, work),
                )
            )
            units += [
                (
                    "crash",
                    f"{key}-steps-{b[0]}-{b[-1]}-{len(b)}",
                    lambda name=name, rng=rng, b=b: crash_trials(name, b, rng, work),
                )
                for b in blocks
            ]
        frees = [0, 256 << 10] if args.quick else [0, 4096, 16 << 10, 64 << 10, 128 << 10, 256 << 10, 1 << 20]
        for name in writers if "diskfull" in parts else []:
            units.append(("diskfull", f"diskfull-{mode}-{name}", lambda name=name: disk_full_run(name, frees)))
        for i, (part, key, run) in enumerate(units):
            saved = args.state / (key.replace(" ", "_") + ".json") if args.state else None
            if saved and saved.exists():
                out = json.loads(saved.read_text())
            elif args.report or (saved and not claim(saved)):
                results.setdefault("not yet run", []).append(key)
                continue
            else:
                if part in ("crash", "diskfull") and not warmed:
                    warm_up(work)
                    warmed = True
                out = run()
                if saved:
                    save(saved, out)
            if part == "crash":  # one row per writer, summed over its units
                row = results.setdefault("crash", {}).setdefault(
                    out["writer"], {"writer": out["writer"], "steps": steps[out["writer"]]}
                )
                for k, v in out.items():
                    if k != "writer":
                        row[k] = row.get(k, 0) + v
            elif part == "diskfull":
                results.setdefault(part, []).append(out)
            else:
                results[part] = out
        if "crash" in results:
            results["crash"] = list(results["crash"].values())
        if "fuzz" in parts:
            results["fuzz"] = fuzz(
                args.stores or (300 if args.quick else 10000), args.seed, work, args.state, args.first, args.report
            )
    results["seconds"] = round(time.monotonic() - began, 1)
    results["mode"] = mode
    print(table(results))
    print(
        f"{mode} mode, seed {args.seed}, {results['seconds']} s, {os.cpu_count()} cores, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    if results.get("not yet run") or results.get("fuzz", {}).get("not yet run"):
        left = results.get("not yet run", [])
        print(
            f"not yet run: {results.get('fuzz', {}).get('not yet run', 0)} fuzzed stores, {len(left)} other units "
            f"({', '.join(sorted({k.split('-')[0] for k in left}))})"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, default=str))
    bad = (
        results.get("fuzz", {}).get("crashes", 0)
        + results.get("fuzz", {}).get("missed", 0)
        + results.get("fuzz", {}).get("too slow", 0)
        + results.get("readonly", {}).get("too slow", 0)
        + results.get("hypothesis", {}).get("failures", 0)
        + results.get("readonly", {}).get("files changed", 0)
        + sum(r["mixed"] + r["lost acked"] for r in results.get("crash", []))
        + sum(r["mixed"] + r["lost acked"] + r["unloadable"] for r in results.get("diskfull", []))
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
