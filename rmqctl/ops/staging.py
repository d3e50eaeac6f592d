"""A new file set, staged and checked before it is swapped in: what rebuild and repair share. Both hold the
lock and finish an interrupted run first (`writing`), stage a changed checkpoint, read what they built back
(`check_consumequeues`, `check_index`) and run verify's checks on the store as the swap will leave it
(`verify_staged`, through `post_commit_view`).
"""
from __future__ import annotations

import contextlib
import dataclasses
import shutil
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np

from .. import schema as S
from ..lock import store_lock
from ..native.record import index_slots
from ..recovery import RecordSet
from ..store import ConsumeQueue, IndexFile, Store, refuse_links_outside
from ..writers import Dispatcher
from .txn import Transaction, locked_for_writing, pending
from .verify import check_links, verify
from .verify_context import Records


@contextlib.contextmanager
def writing(store: Store, dry_run: bool, extra_dirs=()):
    """Hold the broker's lock for the whole run and apply the recovery rule first. Yields what an earlier
    killed run left (and what was done about it) and the store to work on: reopened when the recovery
    changed files, so nothing read before it is used. A dry run takes the lock only if the lock file exists
    (creating it would be a write) and only reports leftovers."""
    if dry_run:
        if store.lock_path.exists():
            with store_lock(store.root):
                yield pending(store.root, extra_dirs), store
        else:
            yield pending(store.root, extra_dirs), store
        return
    with locked_for_writing(store.root, extra_dirs) as done:
        refuse_links_outside(store)
        if done:
            store.close()
            store = Store(store.root, store.config)
        yield done, store


def stage_checkpoint(store: Store, txn: Transaction | None, result_fields: dict, **values) -> None:
    """Write a copy of the checkpoint with some fields changed into the staging area and plan its swap.
    Records [before, after] of every field that changes in `result_fields`. No checkpoint file: nothing
    (the broker creates it at start)."""
    cp = store.checkpoint()
    if cp is None:
        return
    changes = {k: v for k, v in values.items() if cp[k] != v}
    if not changes:
        return
    result_fields.update({k: [cp[k], v] for k, v in changes.items()})
    if txn is None:
        return
    data = bytearray(store.checkpoint_path.read_bytes())
    data.extend(bytes(max(0, S.CHECKPOINT_FILE_SIZE - len(data))))
    for k, v in changes.items():
        S.INT64.pack_into(data, S.CHECKPOINT_AT[k], v)
    staged = txn.area(store.root) / "checkpoint"
    staged.write_bytes(bytes(data))
    txn.replace(store.checkpoint_path, staged)


@dataclasses.dataclass
class Build:
    """What one dispatch run produced and what it was asked to produce (for the read-back check)."""

    dispatcher: Dispatcher
    records: int
    records_seen: RecordSet
    targets: dict  # (topic, qid) -> array of queue offsets, in dispatch order
    keys: int  # index keys put
    warnings: list[str]
    commitlog: "Records | None"  # verify's record table from this dispatch, when it found the commitlog sound
    units: dict  # (topic, qid) -> (queue offsets, units) as written


def post_commit_view(store: Store, txn: Transaction) -> Path:
    """The store as the transaction will leave it, as symlinks in the transaction's staging directory (so
    a killed run's view goes with its staging): the live files, the staged ones in place of those replaced,
    the removed ones left out (commitlog files of every commitlog directory together in view/commitlog)."""
    view = Path(tempfile.mkdtemp(prefix="view-", dir=txn.staging))

    def link(src: Path, dst: Path):
        if src.is_dir():
            dst.mkdir(parents=True, exist_ok=True)
            for child in src.iterdir():
                link(child, dst / child.name)
        else:
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.symlink_to(src.resolve())

    def place(target: Path) -> Path:
        target = target.resolve()
        if target.parent in {d.resolve() for d in store.commitlog_dirs}:
            return view / "commitlog" / target.name
        return view / target.relative_to(store.root.resolve())

    (view / "commitlog").mkdir()
    for d in store.commitlog_dirs:
        for f in (d.iterdir() if d.is_dir() else ()):
            if f.is_file():
                link(f, view / "commitlog" / f.name)
    names = ["consumequeue", "index", "checkpoint", "abort", "lock", "timerlog", "timerwheel", "config"]
    if store.dledger is not None:  # its index, checkpoint and currterm (the data files are in view/commitlog)
        names.append(store.dledger.home.name)
    for name in names:
        if (store.root / name).exists():
            link(store.root / name, view / name)
    for op in txn.ops:
        at = place(Path(op["target"]))
        if at.is_dir() and not at.is_symlink():
            shutil.rmtree(at)
        elif at.is_symlink() or at.exists():
            at.unlink()
        if op["op"] == "replace":
            link(Path(op["staged"]), at)
    return view


def verify_staged(store: Store, txn: Transaction, only: str | None, within: tuple[str, ...] = (),
                  accepted=lambda finding: False, records: Records | None = None) -> list[str]:
    """verify (ops/verify.py) on the state the transaction will leave: its errors, except those verify
    calls consequences of commitlog damage (no rebuild or repair of these files can change them), those
    outside `within` (path prefixes relative to the store) when given, and those `accepted`. With the
    commitlog's `records` (from a build that found it sound), only the checks of `only` run, against them."""
    view = post_commit_view(store, txn)
    try:
        if store.dledger is not None:
            config = dataclasses.replace(store.config, storePathCommitLog=None, storePathRootDir=None,
                                         enableDLegerCommitLog=True, dLegerSelfId=store.dledger.home.name[len("dledger-"):],
                                         storePathDLedgerCommitLog=str(view / "commitlog"))
        else:
            config = dataclasses.replace(store.config, storePathCommitLog=str(view / "commitlog"), storePathRootDir=None)
        staged = Store(view, config)
        findings = check_links(staged, records, only) if records is not None else verify(staged, only=only).findings
    finally:
        shutil.rmtree(view)
    return [f"{f.file}: {f.kind}: {f.detail}" for f in findings
            if f.severity == "error" and "a direct consequence of" not in f.detail and not accepted(f)
            and (not within or (f.file or "").startswith(within))]


def queue_units(directory: Path, file_size: int) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Queue offsets and units of every written unit of a consumequeue directory, and file-level problems
    (names, sizes, gaps)."""
    cq = ConsumeQueue("", 0, directory, file_size)
    qoffs, units, problems = [], [], []
    expected_start = None
    for first, f, written, arr in cq.units():
        if f.length != file_size:
            problems.append(f"{f.path}: {f.length} bytes, not {file_size}")
        if expected_start is not None and f.start != expected_start:
            problems.append(f"{f.path}: expected the next file at {expected_start}")
        expected_start = f.start + file_size
        qoffs.append(np.arange(first, first + written, dtype=np.int64))
        units.append(np.array(arr[:written]))
    problems += [f"{p}: not a consumequeue file name" for p in cq.files.strays]
    if not qoffs:
        return np.empty(0, np.int64), np.empty(0, S.CQ_DTYPE), problems
    return np.concatenate(qoffs), np.concatenate(units), problems


def check_consumequeues(build: Build, build_root: Path, file_size: int) -> tuple[list[str], dict]:
    """Read the built queues back and check them against the commitlog: every queue asked for exists,
    pre-blank units only at its head, then one unit per dispatched message at its queue offset, each
    pointing at a record start of that size, in commitlog order. Returns the problems and what was read
    (queue -> (queue offsets, units))."""
    problems, read = [], {}
    skipped = Counter(q for status, q, _, _ in build.dispatcher.events if status in ("duplicate", "already-built"))
    for (topic, qid), wanted in build.targets.items():
        directory = build_root / "consumequeue" / topic / str(qid)
        name = f"{topic}/{qid}"
        qoffs, units, file_problems = queue_units(directory, file_size)
        read[(topic, qid)] = qoffs, units
        problems += file_problems
        real = units["size"] != S.PRE_BLANK_SIZE
        blanks = np.flatnonzero(~real)
        if len(blanks) and blanks[-1] != len(blanks) - 1:
            problems.append(f"{name}: pre-blank units after real ones")
        if len(blanks) and np.any(units["commitLogOffset"][blanks] != 0) | np.any(units["tagsCode"][blanks] != 0):
            problems.append(f"{name}: pre-blank units that are not (0, {S.PRE_BLANK_SIZE}, 0)")
        entries = units[real]
        wanted = np.frombuffer(wanted, dtype=np.int64)
        if len(entries) != len(wanted) - skipped[name]:
            problems.append(f"{name}: {len(entries)} units written for {len(wanted)} dispatched messages")
            continue
        if len(entries) and qoffs[real][0] != wanted[0]:
            problems.append(f"{name}: first message at queue offset {qoffs[real][0]}, its record says {wanted[0]}")
        if not skipped[name] and len(entries) and not np.array_equal(qoffs[real], wanted):
            problems.append(f"{name}: units are not at their records' queue offsets")
        phys = entries["commitLogOffset"].astype(np.int64)
        if np.any(np.diff(phys) <= 0):
            problems.append(f"{name}: units not in commitlog order")
        bad = np.flatnonzero(build.records_seen.sizes_at(phys) != entries["size"])
        if len(bad):
            problems.append(f"{name}: {len(bad)} unit(s) not pointing at a record of their size, e.g. {int(phys[bad[0]])}")
    return problems, read


def check_index(build: Build, index_dir: Path, slots: int, num: int) -> list[str]:
    """Read the built index files back: headers agree with their entries, every chain runs strictly
    backwards and reaches each entry exactly once, every entry points at a record start, and all keys
    dispatched are there."""
    problems = []
    paths = sorted(index_dir.iterdir()) if index_dir.is_dir() else []
    for p in paths:
        ix = IndexFile(p, slots, num)
        h = ix.header
        count = ix.index_count
        if ix.length != ix.expected_length:
            problems.append(f"{p}: {ix.length} bytes, not {ix.expected_length}")
            continue
        entries = ix.entries()[1:count]
        slot_values = ix.slots()
        if h["hashSlotCount"] != int(np.count_nonzero(slot_values)):
            problems.append(f"{p}: hashSlotCount {h['hashSlotCount']} but {np.count_nonzero(slot_values)} slots used")
        if np.any((slot_values < 0) | (slot_values >= count)):
            problems.append(f"{p}: slot values out of range")
            continue
        prev = entries["prevIndex"].astype(np.int64)
        numbers = np.arange(1, count, dtype=np.int64)
        if np.any((prev < 0) | (prev >= numbers)):
            problems.append(f"{p}: a chain link that does not point backwards")
            continue
        # each entry is the head of its slot or the prevIndex of exactly one later entry
        heads = slot_values[slot_values > 0].astype(np.int64)
        linked = prev[prev > 0]
        reach = np.bincount(np.concatenate([heads, linked]), minlength=count)[1:]
        if np.any(reach != 1):
            problems.append(f"{p}: {int(np.count_nonzero(reach != 1))} entries not reached exactly once by the chains")
        hashes = entries["keyHash"].astype(np.int64)
        own_slot = index_slots(hashes, slots)
        used = np.flatnonzero(slot_values)
        if np.any(own_slot[slot_values[used].astype(np.int64) - 1] != used):
            problems.append(f"{p}: a slot heads a chain of another slot's entries")
        link_slots = own_slot[prev[prev > 0] - 1]
        if np.any(link_slots != own_slot[prev > 0]):
            problems.append(f"{p}: a chain joins entries of different slots")
        phys = entries["phyOffset"].astype(np.int64)
        if len(entries):
            if h["endPhyOffset"] != phys[-1] or h["beginPhyOffset"] != phys[0]:
                problems.append(f"{p}: header phy offsets do not match its first/last entries")
            if np.any(np.diff(phys) < 0):
                problems.append(f"{p}: entries not in commitlog order")
            if np.any(entries["timeDiff"] < 0):
                problems.append(f"{p}: negative timeDiff")
        missing = np.count_nonzero(build.records_seen.sizes_at(phys) < 0)
        if missing:
            problems.append(f"{p}: {missing} entries not pointing at a record start")
    return problems + index_count_check(build, index_dir, slots, num)


def index_count_check(build: Build, index_dir: Path, slots: int, num: int) -> list[str]:
    """As many entries in the files' headers as keys dispatched."""
    total = sum(IndexFile(p, slots, num).entry_count for p in sorted(index_dir.iterdir()))
    return [] if total == build.keys else [f"{total} index entries written for {build.keys} keys dispatched"]


def last_full_end(files: list[IndexFile]) -> int:
    """The checkpoint's indexMsgTimestamp: the endTimestamp of the last full index file (the broker sets it
    when it flushes a full file at rollover; every file here is durable, so a full last file counts too)."""
    full = [ix for ix in files if ix.index_count >= ix.index_num]
    return full[-1].header["endTimestamp"] if full else 0
