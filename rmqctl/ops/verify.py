"""`verify`: every problem the broker's load and recovery would trip on (and the ones it silently misses),
named precisely, and silence on a sound store.

    result = verify(Store("/data/store", load_config("broker.conf")))
    result.exit_code, [f.to_dict() for f in result.findings]

The commitlog is checked chunk by chunk in a thread pool (ops/verify_scan.py: a compiled kernel, which
releases the GIL); the consumequeues, index files, checkpoint and abort file are then checked against what
the commitlog holds (ops/verify_links.py for the first two). Everything is read-only. Each finding has a kind, a severity (`error`: damage or an
inconsistency the broker trips on or serves wrong data from; `warning`: something the broker tolerates or
repairs itself but that loses or hides data; `info`: facts an operator needs, such as where a crashed
broker's recovery will start), where it is, and a detail that says what follows from it. Findings that are
consequences of another say so in their detail.
"""
from __future__ import annotations

import concurrent.futures
import dataclasses
import time
from pathlib import Path
from typing import Callable

import numpy as np

from .. import schema as S
from ..config import BrokerConfig
from ..dispatch import LMQ_PREFIX
from ..errors import EXIT_FINDINGS, EXIT_OK, StoreError
from ..store import MappedFileQueue, Store, offset_to_name
from . import VERIFY_PARTS, verify_links
from .config_check import config_problems
from ..native import available_cores
from ..native.verify import queue_breaks
from .verify_scan import Region, Task, scan_chunk

CHUNK = 64 << 20  # commitlog bytes per task: files are split so that --jobs helps on one big file
REGION_KINDS = {"zeros": "zeroed-region", "illegal-magic": "illegal-magic", "bad-length": "bad-length",
                "truncated-record": "truncated-record"}
RECOVERY_SEES = ("torn-tail", "zeroed-region", "illegal-magic", "bad-length", "truncated-record", "missing-blank")


@dataclasses.dataclass
class Finding:
    kind: str
    severity: str
    file: str | None  # relative to the store root
    position: int | None  # inside `file`
    commitLogOffset: int | None  # the commitlog offset the finding is about, when there is one
    detail: str

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class VerifyResult:
    findings: list[Finding]
    truncated: bool  # stopped at max_findings
    stats: dict
    lock_holder: int | None  # pid of a broker holding the store lock: the tail may be moving

    @property
    def problems(self) -> list[Finding]:
        return [f for f in self.findings if f.severity != "info"]

    @property
    def exit_code(self) -> int:
        return EXIT_FINDINGS if self.problems or self.truncated else EXIT_OK


class Damage:
    """Commitlog ranges that are damaged or missing, so later findings can name their cause."""

    def __init__(self):
        self.ranges: list[tuple[int, int, str, int]] = []  # (start, end, kind, reported at)

    def add(self, start: int, end: int, kind: str, at: int):
        self.ranges.append((start, max(end, start + 1), kind, at))

    def cause(self, offset: int, end: int | None = None) -> str | None:
        """'the <kind> at <offset>' when [offset, end) touches a damaged range."""
        end = offset + 1 if end is None else end
        hits = [(not lo <= offset < hi, at, kind) for lo, hi, kind, at in self.ranges if offset < hi and lo < end]
        if not hits:
            return None
        _, at, kind = min(hits)  # the range holding the offset itself first
        return f"the {kind} at {at}"


class Collector:
    def __init__(self, store: Store):
        self.root = store.root
        self.items: list[tuple[int, Finding]] = []

    def add(self, order: int, kind: str, severity: str, path: Path | str | None, position: int | None,
            offset: int | None, detail: str) -> Finding:
        if isinstance(path, Path):
            try:
                path = path.relative_to(self.root).as_posix()
            except ValueError:
                path = str(path)
        f = Finding(kind, severity, path, position, offset, detail)
        self.items.append((order, f))
        return f


# finding groups, in output order
FILES, RECORDS, QUEUES, CONSUMEQUEUE, INDEX, CHECKPOINT, CONFIG = range(7)


def verify(store: Store, only: str | None = None, start: int | None = None, end: int | None = None,
           deep: bool = False, jobs: int | None = None, max_findings: int | None = None,
           progress: Callable[[int, int], None] | None = None) -> VerifyResult:
    """Check `store`; `only` limits the findings to one part (the commitlog is read in any case, since
    the others are checked against it); `start`/`end` limit the commitlog range checked (half-open);
    `deep` also checks that every key of every message is in the index; `jobs` threads (default: all
    cores); `progress(done, total)` is called with commitlog bytes."""
    began = time.monotonic()
    run = start_run(store, only, start, end, deep, jobs or available_cores(), progress)
    return complete(run, began, max_findings)


def start_run(store: Store, only: str | None, start: int | None, end: int | None, deep: bool, jobs: int,
              progress, run_class: type["VerifyRun"] | None = None) -> "VerifyRun":
    """A run with its geometry settled, before any scanning. `run_class` lets another engine (Spark) scan
    the commitlog chunks; everything after the scan is `complete`."""
    if only not in (None, *VERIFY_PARTS):
        raise ValueError(f"only must be one of {VERIFY_PARTS}")
    store = with_geometry(store)
    parts = {p for p in VERIFY_PARTS if only in (None, p)}
    # geometry that cannot be settled means verify cannot run (exit 2), not that the store is damaged
    geometry = {"mappedFileSizeCommitLog": store.commitlog.file_size,
                "mappedFileSizeConsumeQueue": store.consumequeue_file_size}
    if "index" in parts:
        geometry["maxHashSlotNum"], geometry["maxIndexNum"] = store.index_geometry
    run = (run_class or VerifyRun)(store, Collector(store), parts, start, end, deep, jobs, progress)
    run.geometry = geometry
    return run


def complete(run: "VerifyRun", began: float, max_findings: int | None) -> VerifyResult:
    """Scan (through the run's own scan()), then the whole-store checks, in their order."""
    store, parts = run.store, run.parts
    run.interrupted_write()
    run.commitlog()
    if "commitlog" in parts:
        run.queue_offsets()
    links = [check for part, check in (("consumequeue", verify_links.check_consumequeues),
                                       ("index", verify_links.check_index)) if part in parts]
    # the two share nothing but the records and the findings list: with jobs to spare, side by side
    with concurrent.futures.ThreadPoolExecutor(max(1, min(run.jobs, len(links)))) as pool:
        for done in [pool.submit(check, run) for check in links]:
            done.result()
    if "commitlog" in parts:
        run.checkpoint_and_recovery()
    if len(parts) == len(VERIFY_PARTS):
        for p in config_problems(store):
            run.out.add(CONFIG, p.kind, p.severity, p.path, None, None, p.detail)
    findings = [f for _, f in sorted(run.out.items, key=_order)]
    truncated = max_findings is not None and len(findings) > max_findings
    if truncated:
        findings = findings[:max_findings]
    stats = {"seconds": round(time.monotonic() - began, 3), "bytes": run.bytes_scanned, "records": len(run.rec.off),
             "files": len(store.commitlog.files), "jobs": run.jobs, "geometry": run.geometry}
    return VerifyResult(findings, truncated, stats, store.lock_holder())


def check_links(store: Store, rec: Records, only: str) -> list[Finding]:
    """The consumequeue or index checks alone, against a record table of the whole commitlog that the
    caller decoded already and found sound (no damage, so no finding here has a commitlog cause)."""
    run = start_run(store, only, None, None, False, 1, None)
    run.rec = rec
    if len(rec.off):
        run.logical_end = int((rec.off + rec.size).max())
    if only == "consumequeue":
        verify_links.check_consumequeues(run)
    else:
        verify_links.check_index(run)
    return [f for _, f in sorted(run.out.items, key=_order)]


def _order(item: tuple[int, Finding]):
    group, f = item
    return group, -1 if f.commitLogOffset is None else f.commitLogOffset, f.file or "", f.position or 0


def with_geometry(store: Store) -> Store:
    """The store with its commitlog and consumequeue file sizes settled. When not configured and the files
    disagree (a short file is exactly what verify must report), the spacing of the file names decides,
    if all names agree on it. Without a broker config, LMQ queue directories show that the broker
    dispatched to LMQ queues (enableMultiDispatch)."""
    cfg = store.config
    changes = {}
    if not cfg.mappedFileSizeCommitLog:
        files = MappedFileQueue(store.commitlog_dirs, 0).files
        if len({f.length for f in files}) > 1:
            changes["mappedFileSizeCommitLog"] = _spacing([f.start for f in files], store.commitlog_dirs[0])
    if not cfg.mappedFileSizeConsumeQueue:
        starts_by_queue = []
        lengths = set()
        for topic_dir in Store._dirs(store.consumequeue_dir):
            for qdir in Store._dirs(topic_dir):
                files = MappedFileQueue([qdir], 0).files
                lengths |= {f.length for f in files}
                starts_by_queue.append([f.start for f in files])
        if len(lengths) > 1:
            gaps = {b - a for starts in starts_by_queue for a, b in zip(starts, starts[1:])}
            if len(gaps) != 1:
                raise StoreError("consumequeue files have different sizes and their names do not tell the file "
                                 "size; pass mappedFileSizeConsumeQueue with --broker-config", store.consumequeue_dir)
            changes["mappedFileSizeConsumeQueue"] = gaps.pop()
    if cfg.source is None and not cfg.enableMultiDispatch and any(
            d.name.startswith(LMQ_PREFIX) for d in Store._dirs(store.consumequeue_dir)):
        # no broker config given, but the broker that wrote this store dispatched to LMQ queues
        changes.update(enableMultiDispatch=True, enableLmq=True)
    if not changes:
        return store
    return Store(store.root, dataclasses.replace(cfg, **changes))


def _spacing(starts: list[int], where: Path) -> int:
    gaps = {b - a for a, b in zip(starts, starts[1:])}
    if len(gaps) == 1 and gaps.pop() > 0:
        return starts[1] - starts[0]
    raise StoreError("commitlog files have different sizes and their names do not tell the file size; pass "
                     "mappedFileSizeCommitLog with --broker-config", where)


@dataclasses.dataclass
class Records:
    """Every well-formed commitlog record checked, in offset order, with what the broker derives from it."""

    off: np.ndarray
    size: np.ndarray
    queue_id: np.ndarray
    queue_offset: np.ndarray
    sysflag: np.ndarray
    store_ts: np.ndarray
    topic: np.ndarray
    tags: np.ndarray
    topics: list[str]
    key_record: np.ndarray
    key_hash: np.ndarray
    lmq: list[tuple[int, str, int, int]]
    inner_num: dict[int, int]

    def find(self, offsets: np.ndarray) -> np.ndarray:
        """Index of the record starting at each offset, -1 where none does."""
        idx = np.searchsorted(self.off, offsets)
        idx = np.minimum(idx, max(len(self.off) - 1, 0))
        hit = (self.off[idx] == offsets) if len(self.off) else np.zeros(len(offsets), bool)
        return np.where(hit, idx, -1)

    def containing(self, offset: int) -> int:
        """Index of the record whose bytes cover `offset`, -1 if none."""
        i = int(np.searchsorted(self.off, offset, side="right")) - 1
        if i >= 0 and offset < self.off[i] + self.size[i]:
            return i
        return -1

    @property
    def dispatched(self) -> np.ndarray:
        t = self.sysflag & S.TRANSACTION_MASK
        return (t == S.TRANSACTION_NOT_TYPE) | (t == S.TRANSACTION_COMMIT_TYPE)

    def describe(self, i: int) -> str:
        return (f"{self.topics[self.topic[i]]}/{int(self.queue_id[i])}@{int(self.queue_offset[i])} at "
                f"{int(self.off[i])}")


class VerifyRun:
    """State shared by the checks of one verify run."""

    def __init__(self, store: Store, out: Collector, parts: set, start, end, deep: bool, jobs: int, progress):
        self.store = store
        self.config: BrokerConfig = store.config
        self.out = out
        self.parts = parts
        self.start = start
        self.end = end
        self.deep = deep
        self.jobs = jobs
        self.progress = progress
        self.damage = Damage()
        self.bytes_scanned = 0
        self.file_size = store.commitlog.file_size
        self.files = store.commitlog.files
        self.logical_end = self.files[0].start if self.files else 0
        self.min_offset = self.files[0].start if self.files else 0
        self.rec: Records | None = None
        self.is5 = self.config.rocketmqVersion == 5
        self.commitlog_findings: list[Finding] = []  # record damage, for the recovery notes

    def in_range(self, offsets: np.ndarray) -> np.ndarray:
        ok = np.ones(len(offsets), dtype=bool)
        if self.start is not None:
            ok &= offsets >= self.start
        if self.end is not None:
            ok &= offsets < self.end
        return ok

    @property
    def full_range(self) -> bool:
        return self.start is None and self.end is None

    def report(self, group: int, kind: str, severity: str, path, position, offset, detail: str) -> Finding:
        f = self.out.add(group, kind, severity, path, position, offset, detail)
        if group in (FILES, RECORDS) and offset is not None:
            self.commitlog_findings.append(f)
        return f

    # -- commitlog ---------------------------------------------------------------------------------------
    def commitlog(self):
        files_part = "commitlog" in self.parts
        if files_part:
            self.file_checks()
        results = self.scan()
        self.merge(results, files_part)

    def file_checks(self):
        """Names, sizes and contiguity (MappedFileQueue.load, and MetaQ's validateSegments rule)."""
        q = self.store.commitlog
        size = self.file_size
        for p in q.strays:
            self.report(FILES, "stray-file", "error", p, None, None,
                        "not a 20-digit offset name: the broker's load fails on it (Long.parseLong of the name)")
        for d in q.dirs:
            for p in sorted(d.iterdir()) if d.is_dir() else []:
                if p.is_dir():
                    self.report(FILES, "stray-file", "warning", p, None, None, "a directory inside the commitlog "
                                "directory: 4.9 brokers fail to load it (5.x skips it)")
        for p, target in self.store.links_outside():
            self.report(FILES, "symlink-outside", "warning", p, None, None,
                        f"a symlink to {target}, outside the store: the broker follows it, rmqctl's writers refuse to")
        files = self.files
        for i, f in enumerate(files):
            if f.length != size:
                last = i == len(files) - 1
                if f.length == 0 and last:
                    note = ("the broker's load refuses it (4.9); 5.1.3+ deletes a zero-length last file" if not self.is5
                            else "5.1.3+ brokers delete a zero-length last file at load; older ones refuse to start")
                else:
                    note = "the broker's load refuses any file whose length is not mappedFileSizeCommitLog"
                self.report(FILES, "file-size", "error", f.path, None, f.start,
                            f"file is {f.length} bytes, not {size}: {note}")
            if f.start % size:
                self.report(FILES, "file-misaligned", "error", f.path, None, f.start,
                            f"starts at {f.start}, not a multiple of the file size {size}")
        for a, b in zip(files, files[1:]):
            if b.start > a.start + size:
                missing = (b.start - a.start - size) // size
                self.damage.add(a.start + size, b.start, "file-gap", a.start + size)
                self.report(FILES, "file-gap", "error", b.path, None, a.start + size,
                            f"commitlog offsets {a.start + size}..{b.start} have no file ({missing} file(s) of {size} "
                            f"bytes missing between {a.name} and {b.name}); every record there is lost")
            elif b.start < a.start + size:
                self.report(FILES, "file-overlap", "error", b.path, None, b.start,
                            f"{b.name} starts inside {a.name} (which covers {a.start}..{a.start + size})")
        for f in files:
            if f.length < size:
                self.damage.add(f.start + f.length, f.start + size, "file-size", f.start)

    def tasks(self) -> list[list[Task]]:
        """Per file, its chunks. Records before `start` are walked (to find where records start) but not
        checked; files wholly outside [start, end) are skipped."""
        out = []
        size = self.file_size
        want = dict(check_crc="commitlog" in self.parts, want_tags="consumequeue" in self.parts,
                    want_keys="index" in self.parts)
        for f in self.files:
            limit = min(f.length, size)
            before = self.start is not None and f.start + size <= self.start
            if before or (self.end is not None and f.start >= self.end):
                out.append([])
                continue
            claim_from = max(0, (self.start or 0) - f.start)
            stop = min(limit, self.end - f.start) if self.end is not None else limit
            cuts = list(range(0, stop, CHUNK))[: max(1, stop // CHUNK)] or [0]
            bounds = cuts[1:] + [stop]
            chunks = []
            for k, (lo, hi) in enumerate(zip(cuts, bounds)):
                chunks.append(Task(str(f.path), f.name, f.start, size, lo, k == 0, max(lo, claim_from), hi,
                                   self.config, **want))
            out.append(chunks)
        return out

    def scan(self) -> list[list]:
        plan = self.tasks()
        flat = [(i, k, t) for i, chunks in enumerate(plan) for k, t in enumerate(chunks)]
        total = sum(max(0, t.stop - t.claim_from) for _, _, t in flat)
        results: dict[tuple[int, int], object] = {}
        done = 0
        if self.progress:
            self.progress(0, total)
        if self.jobs > 1 and len(flat) > 1:  # threads: the kernel releases the GIL
            with concurrent.futures.ThreadPoolExecutor(max_workers=min(self.jobs, len(flat))) as pool:
                if "index" in self.parts:  # index structure does not need the records: read it meanwhile
                    pool.submit(verify_links.index_structure, self)
                futures = {pool.submit(scan_chunk, t): (i, k) for i, k, t in flat}
                for fut in concurrent.futures.as_completed(futures):
                    r = fut.result()
                    results[futures[fut]] = r
                    done += r.bytes
                    if self.progress:
                        self.progress(done, total)
        else:
            for i, k, t in flat:
                r = scan_chunk(t)
                results[(i, k)] = r
                done += r.bytes
                if self.progress:
                    self.progress(done, total)
        out = []
        for i, chunks in enumerate(plan):
            rs = [results[(i, k)] for k in range(len(chunks))]
            for k in range(1, len(rs)):
                expected = rs[k - 1].handoff
                if rs[k].first == expected or (rs[k].first is None and expected >= rs[k].task.stop):
                    continue
                # the chunk found another first record than the walk before it reached: walk on from there
                if expected < rs[k].task.stop:
                    rs[k] = scan_chunk(dataclasses.replace(rs[k].task, begin=expected, forced=True))
                else:
                    rs[k] = dataclasses.replace(rs[k], pos=rs[k].pos[:0], handoff=expected)
            out.append(rs)
        self.bytes_scanned = done
        return out

    def merge(self, results: list[list], report: bool):
        """Record findings and damaged regions, then one table of every record."""
        files = self.files
        has_data = [any(len(r.pos) or r.blank or any(not g.zero_head or g.last_nonzero >= 0 or g.resync is not None
                                                       for g in r.regions) for r in rs) for rs in results]
        last_data = max((i for i, d in enumerate(has_data) if d), default=-1)
        index_of: dict[str, int] = {}
        cols = {k: [] for k in ("off", "size", "queue_id", "queue_offset", "sysflag", "store_ts", "topic", "tags",
                                "key_record", "key_hash")}
        lmq, inner = [], {}
        base = 0
        trailing = with_props = 0
        for i, rs in enumerate(results):
            f = files[i]
            for r in rs:
                for kind, severity, pos, detail in r.findings:
                    if report:
                        self.report(RECORDS, kind, severity, f.path, pos, f.start + pos, detail)
                for g in r.regions:
                    self.region(i, g, last_data, report)
                if r.blank is not None:
                    self.logical_end = max(self.logical_end, f.start + r.blank[0] + S.END_FILE_MIN_BLANK_LENGTH)
                remap = np.array([index_of.setdefault(t, len(index_of)) for t in r.topics], dtype=np.int64)
                n = len(r.pos)
                cols["off"].append(r.pos + f.start)
                cols["size"].append(r.size)
                cols["queue_id"].append(r.queue_id)
                cols["queue_offset"].append(r.queue_offset)
                cols["sysflag"].append(r.sysflag)
                cols["store_ts"].append(r.store_ts)
                cols["topic"].append(remap[r.topic] if n else r.topic)
                cols["tags"].append(r.tags)
                cols["key_record"].append(r.key_record + base)
                cols["key_hash"].append(r.key_hash)
                lmq += [(k + base, *rest) for k, *rest in r.lmq]
                inner.update({k + base: v for k, v in r.inner_num.items()})
                trailing += r.trailing_separator
                with_props += n
                base += n
        cat = {k: np.concatenate(v) if v else np.zeros(0, np.int64) for k, v in cols.items()}
        keys = cat["key_record"]
        # each chunk lists its keys by record, except the few of records decoded the slow way
        order = np.argsort(keys, kind="stable") if len(keys) and (np.diff(keys) < 0).any() else slice(None)
        self.rec = Records(cat["off"], cat["size"], cat["queue_id"], cat["queue_offset"], cat["sysflag"],
                           cat["store_ts"], cat["topic"], cat["tags"], sorted(index_of, key=index_of.get),
                           cat["key_record"][order], cat["key_hash"][order], lmq, inner)
        if len(self.rec.off):
            self.logical_end = max(self.logical_end, int((self.rec.off + self.rec.size).max()))
        if not self.is5 and self.config.rocketmqVersion is None:
            # 5.x ends every property pair with 0x02, 4.x only separates them
            self.is5 = trailing * 2 > with_props and with_props > 0

    def region(self, i: int, g: Region, last_data: int, report: bool):
        """Classify bytes that are not records (Region) into a finding."""
        f = self.files[i]
        x = f.start + g.start
        limit = min(f.length, self.file_size)
        if g.resync is not None:
            n = g.resync - g.start
            kind = REGION_KINDS.get(g.cause, g.cause)
            self.damage.add(x, f.start + g.resync, kind, x)
            if report:
                self.report(RECORDS, kind, "error", f.path, g.start, x,
                            f"{n} invalid bytes at offset {x} ({g.detail}); the next record starts at "
                            f"{f.start + g.resync}")
            return
        if i >= last_data:
            if g.last_nonzero < g.start:
                return  # zeros after the last record: the logical end of the commitlog
            n = g.last_nonzero + 1 - g.start
            self.damage.add(x, f.start + g.last_nonzero + 1, "torn-tail", x)
            if report:
                self.report(RECORDS, "torn-tail", "error", f.path, g.start, x,
                            f"{n} invalid bytes at offset {x} ({g.detail}) and nothing valid after them: a torn or "
                            f"garbage tail after the last record")
            return
        n = limit - g.start
        if g.zero_head and g.last_nonzero < g.start:
            kind = "zeroed-region" if g.start == 0 else "missing-blank"
            if g.start == 0:
                what = "the whole file is zero bytes although later files hold records"
            elif n:
                what = f"{n} zero bytes from offset {x} to the end of the file where the BLANK record should be"
            else:
                what = "the last record ends exactly at the end of the file, leaving no room for the BLANK record"
        else:
            kind = REGION_KINDS.get(g.cause, g.cause)
            what = f"{n} invalid bytes at offset {x} ({g.detail}) up to the end of the file, which has no BLANK record"
        self.damage.add(x, f.start + max(limit, g.start + 1), kind, x)
        if report:
            self.report(RECORDS, kind, "error", f.path, g.start, x,
                        f"{what}; the broker's readers stop at this file and never reach the next one by walking")

    # -- queue offsets -----------------------------------------------------------------------------------
    def queue_offsets(self):
        """Per topic/queue, dispatched records' QUEUEOFFSET goes up by exactly one (INNER_NUM for inner
        batches); PREPARED/ROLLBACK records carry 0."""
        rec = self.rec
        if not len(rec.off):
            return
        dispatched = rec.dispatched
        undispatched_nonzero = np.flatnonzero(~dispatched & (rec.queue_offset != 0))
        for i in undispatched_nonzero.tolist():
            kind = "PREPARED" if rec.sysflag[i] & S.TRANSACTION_MASK == S.TRANSACTION_PREPARED_TYPE else "ROLLBACK"
            self.report(QUEUES, "queue-offset", "warning", self._path(int(rec.off[i])), None, int(rec.off[i]),
                        f"{kind} record {rec.describe(i)} has queue offset {int(rec.queue_offset[i])}; the broker "
                        f"writes 0 for records it never dispatches")
        targets = self.targets()
        topic, qid, qoff, ri = targets
        if not len(ri):
            return
        # targets in commitlog order within each queue: own targets come so; LMQ ones are appended after them
        order = np.argsort(ri, kind="stable") if rec.lmq else np.zeros(0, np.int64)
        low = int(qid.min())
        span = int(qid.max()) - low + 1
        queues = span * (int(topic.max()) + 1)
        if queues < 1 << 20:
            queue = topic * span + (qid - low)
        else:
            queues, queue = len(ri), np.unique(topic * (1 << 32) + qid, return_inverse=True)[1].ravel()
        inner = np.array(sorted(rec.inner_num.items()), dtype=np.int64).reshape(-1, 2)
        before, at, after = queue_breaks(queue, qoff, ri, order, queues, inner[:, 0].copy(), inner[:, 1].copy())
        # per queue, in commitlog order
        by_queue = np.lexsort((at, ri[at], topic[at] * (1 << 32) + qid[at]))

        def step(j: int) -> int:  # how far target j's record moves its queue's offset
            return rec.inner_num.get(int(ri[j]), 1)

        skip = set()
        names = self.all_topics
        for before_t, at_t, after_t in zip(before[by_queue].tolist(), at[by_queue].tolist(), after[by_queue].tolist()):
            if at_t in skip:
                continue
            prev, cur = int(ri[before_t]), int(ri[at_t])
            want = int(qoff[before_t]) + step(before_t)
            got = int(qoff[at_t])
            queue_name = f"{names[topic[at_t]]}/{int(qid[at_t])}"
            a, b = int(rec.off[prev]), int(rec.off[cur])
            if after_t >= 0 and int(qoff[after_t]) == want + step(at_t):  # one record's field is off
                skip.add(after_t)
                detail = (f"record at {b} in {queue_name} has queue offset {got}, but the records around it make it "
                          f"{want} ({'a duplicate of an earlier offset' if got < want else 'a jump ahead'}); the header "
                          f"field was changed after the broker wrote it")
                self.report(QUEUES, "queue-offset", "error", self._path(b), b - self._file_start(b), b, detail)
                continue
            cause = self.damage.cause(a, b)
            if got > want:
                detail = (f"queue {queue_name} jumps from offset {want - 1} (record at {a}) to {got} (record at {b}): "
                          f"{got - want} missing")
            else:
                detail = (f"queue {queue_name} goes back from offset {want - 1} (record at {a}) to {got} (record at "
                          f"{b}): duplicate queue offsets")
            if cause:
                detail += f"; a direct consequence of {cause}"
            self.report(QUEUES, "queue-offset", "error" if not cause or got < want else "warning", self._path(b),
                        b - self._file_start(b), b, detail)

    @property
    def all_topics(self) -> list[str]:
        self.targets()
        return self._all_topics

    def targets(self):
        """(topic id, queueId, queue offset, record) of every consumequeue entry the broker's dispatch
        writes: the record's own queue for NOT/COMMIT records, plus LMQ queues. Topic ids index
        `all_topics` (the records' topics, then LMQ queue names)."""
        if getattr(self, "_targets", None) is not None:
            return self._targets
        rec = self.rec
        names = list(rec.topics)
        ids = {t: i for i, t in enumerate(names)}
        main = np.flatnonzero(rec.dispatched & self.in_range(rec.off))
        lmq = [(r, name, q, o) for r, name, q, o in rec.lmq if rec.dispatched[r] and self.in_range(rec.off[r:r + 1])[0]]
        for _, name, _, _ in lmq:
            if name not in ids:
                ids[name] = len(names)
                names.append(name)
        self._all_topics = names
        if len(main) == len(rec.off) and not lmq:  # every record has exactly its own entry: no copies
            self._targets = (rec.topic, rec.queue_id, rec.queue_offset, main)
            return self._targets
        topic = np.concatenate([rec.topic[main], np.array([ids[n] for _, n, _, _ in lmq], dtype=np.int64)])
        qid = np.concatenate([rec.queue_id[main], np.array([q for _, _, q, _ in lmq], dtype=np.int64)])
        qoff = np.concatenate([rec.queue_offset[main], np.array([o for _, _, _, o in lmq], dtype=np.int64)])
        ri = np.concatenate([main, np.array([r for r, _, _, _ in lmq], dtype=np.int64)])
        self._targets = (topic, qid, qoff, ri)
        return self._targets

    def _file_start(self, offset: int) -> int:
        return offset - offset % self.file_size

    def _path(self, offset: int) -> Path:
        f = self.store.commitlog.find(offset)
        return f.path if f is not None else self.store.commitlog_dirs[0] / offset_to_name(self._file_start(offset))

    def interrupted_write(self):
        """A rebuild/repair/clean killed mid-way (ops.txn's intent or staging left behind)."""
        from .txn import pending

        left = pending(self.store.root)
        if left is None:
            return
        committed = left["state"] == "committed"
        what = (f"an interrupted `{left['command']}` ({left['steps']} step(s)) is committed but not finished"
                if committed else f"staging left by an interrupted rmqctl run: {', '.join(left['paths'])}")
        self.report(FILES, "interrupted-write", "error" if committed else "warning", self.store.root, None, None,
                    f"{what}; it {left['action']}. Do not start the broker before that."
                    if committed else f"{what}; it {left['action']}")

    # -- checkpoint, abort, recovery ---------------------------------------------------------------------
    def checkpoint_and_recovery(self):
        store, rec = self.store, self.rec
        cp = store.checkpoint()
        has_data = bool(len(rec.off))
        if cp is None:
            if has_data:
                self.report(CHECKPOINT, "checkpoint-missing", "warning", store.checkpoint_path, None, None,
                            "no checkpoint file: the broker starts with all its timestamps at 0")
            cp = {"physicMsgTimestamp": 0, "logicsMsgTimestamp": 0, "indexMsgTimestamp": 0, "fileSize": 0}
        elif cp["fileSize"] != S.CHECKPOINT_FILE_SIZE:
            self.report(CHECKPOINT, "checkpoint-size", "warning", store.checkpoint_path, None, None,
                        f"checkpoint is {cp['fileSize']} bytes; the broker maps {S.CHECKPOINT_FILE_SIZE}")
        if has_data and self.full_range:
            newest = int(rec.store_ts.max())
            tail = next((r for r in self.damage.ranges if r[2] == "torn-tail"), None)
            for name, what in (("physicMsgTimestamp", "flushed"),
                               ("logicsMsgTimestamp", "dispatched to a consumequeue"),
                               ("indexMsgTimestamp", "indexed in a full index file")):
                if cp[name] > newest:
                    detail = (f"{name} {cp[name]} is later than the newest record's storeTimestamp {newest}: the "
                              f"checkpoint says messages were {what} that the commitlog no longer holds")
                    if tail:
                        detail += f"; a direct consequence of the torn-tail at {tail[3]}"
                    self.report(CHECKPOINT, "checkpoint-ahead", "error", store.checkpoint_path, None, None, detail)
        self.recovery_notes(cp)

    def recovery_notes(self, cp: dict):
        """Which file the broker's next recovery starts from, which damage it will see (and cut the
        commitlog at) and which it will not."""
        files = self.files
        if not files:
            return
        abort = self.store.abort_exists()
        cfg = self.config
        if abort:
            from .repair import recovery_start  # repair imports this module (through rebuild)

            first = recovery_start(self.store)
            safe = " (and indexMsgTimestamp)" if cfg.messageIndexEnable and cfg.messageIndexSafe else ""
            why = (f"the newest file whose first record's storeTimestamp is at most the checkpoint's "
                   f"min(physic, logics) - 3s{safe}")
            mode = "abnormal recovery"
        elif self.is5:
            cq_end = verify_links.consumequeue_max_phy(self)
            first = next((i for i in range(len(files) - 1, 0, -1) if files[i].start <= cq_end), 0)
            why = "the newest file starting at or before the consumequeues' end (5.x normal recovery)"
            mode = "normal recovery"
        else:
            first = max(0, len(files) - 3)
            why = "the third file from the last (4.9 normal recovery)"
            mode = "normal recovery"
        begin = files[first].start
        seen = [f for f in self.commitlog_findings if self.recovery_sees(f)]
        cut = next((f for f in sorted(seen, key=lambda f: f.commitLogOffset) if f.commitLogOffset >= begin), None)
        if cut is not None:
            lost = self.rec.off > cut.commitLogOffset
            cut_note = (f"the broker's {mode} re-checks records from {files[first].name} and stops at this one: it "
                        f"truncates the commitlog at {cut.commitLogOffset}, dropping {int(lost.sum())} later record(s) "
                        f"({int(self.rec.size[lost].sum())} bytes) and the consumequeue entries past it")
            cut.detail += f"; {cut_note}"
        for f in seen:
            if f is cut:
                continue
            if f.commitLogOffset < begin:
                f.detail += (f"; the broker's {mode} starts at {files[first].name} and does not re-check this file: it "
                             f"keeps serving this record as it is")
            elif cut is not None and f.commitLogOffset > cut.commitLogOffset:
                f.detail += f"; the {mode} cuts it off with everything after {cut.commitLogOffset}"
        if abort:
            outcome = (f"it stops at the {cut.kind} at {cut.commitLogOffset}" if cut is not None else
                       "it finds nothing to cut")
            before = sorted({f.commitLogOffset for f in seen if f.commitLogOffset < begin})
            detail = (f"abort file present: the last exit was not clean. Abnormal recovery starts at "
                      f"{files[first].name} ({why}), re-checks every record from {begin} on with "
                      f"checkCRCOnRecover={str(cfg.checkCRCOnRecover).lower()}, and truncates at the first failure: "
                      f"{outcome}.")
            if before:
                detail += f" Damage before {begin} is not re-checked: {', '.join(map(str, before[:5]))}."
            self.report(CHECKPOINT, "abnormal-recovery", "info", self.store.abort_path, None, begin, detail)
            verify_links.index_loss_on_recovery(self, cp, begin)

    def recovery_sees(self, f: Finding) -> bool:
        """Would checkMessageAndReturnSize(checkCRC = checkCRCOnRecover) fail on this?"""
        cfg = self.config
        if f.kind in RECOVERY_SEES:
            return True
        if not cfg.checkCRCOnRecover:
            return False
        prop = cfg.forceVerifyPropCRC and self.is5
        return f.kind == ("property-crc" if prop else "body-crc")
