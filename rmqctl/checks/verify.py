"""`verify`: every problem the broker's load and recovery would trip on (and the ones it silently misses),
named precisely, and silence on a sound store.

    result = verify(Store("/data/store", load_config("broker.conf")))
    result.exit_code, [f.to_dict() for f in result.findings]

A run (`Run`) is a context (checks/context.py) and a table of steps, each a function of the run that returns its
findings: the commitlog's walk in chunks on a thread pool (checks/commitlog.py, over checks/scan.py's compiled
walk, which releases the GIL), then the CHECKS: the commitlog's files, the queue offsets, the consumequeues and
index files against the records (checks/links.py), the checkpoint, the abort file and what the broker's
recovery will do (here). Spark runs the same plan's chunks as its tasks and hands their results to `complete`,
which runs the CHECKS. Everything is read-only.
Each finding has a kind (rmqctl/findings.py), a severity (`error`: damage or an inconsistency the broker
trips on or serves wrong data from; `warning`: something the broker tolerates or repairs itself but that
loses or hides data; `info`: facts an operator needs, such as where a crashed broker's recovery will start),
where it is, and a detail that says what follows from it. Findings that are consequences of another say so
in their detail.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from typing import Callable, NamedTuple

from .. import schema as S
from ..budget import DEFAULT_MEMORY, release_freed
from ..errors import FileGone
from ..findings import CHECKPOINT, CONFIG, FILES, Finding, Findings
from ..engine import available_cores
from ..recovery import abnormal_start_by_offset, first_redispatched, normal_recovery_start, recovery_fails_on
from ..rules import LMQ_PREFIX, index_dropped_after_crash
from ..store import Store
from . import (
    VERIFY_PARTS,
    commitlog as verify_commitlog,
    consumequeue as verify_cq,
    dledger as verify_dledger,
    links as verify_links,
)
from .baseline import finding_key, judge
from .compaction import check_compaction
from .rocksdbstore import check_rocksdb_store, start_reading
from .config import config_problems
from .timer import TimerCheck
from ..txn import pending
from .context import Context
from .batchcq import BatchConsumeQueueCheck
from .consumequeue import DISPATCHED_AGAIN, ConsumeQueueCheck
from .doublewrite import check_double_write
from .index import IndexCheck
from .queues import QueueOffsets, summarize
from .windows import records_past, window_records, windows


WINDOWED_PARTS = {"consumequeue", "index", "timer"}  # the checks that need the record columns


@dataclasses.dataclass
class VerifyResult:
    findings: list[Finding]
    truncated: bool  # stopped at max_findings
    stats: dict
    lock_holder: int | None  # pid of a broker holding the store lock: the tail may be moving
    restarted_after: list = dataclasses.field(default_factory=list)  # files a running broker deleted mid-run
    # what moved under the last run after a restart (the caller reports its own store's snapshot itself)
    moved: list = dataclasses.field(default_factory=list)

    @property
    def problems(self) -> list[Finding]:
        return [f for f in self.findings if f.severity != "info"]

    @property
    def exit_code(self) -> int:
        """The exit code without a baseline (checks/baseline.judge)."""
        return judge(self.findings, self.truncated).exit_code


def verify(
    store: Store,
    only: str | None = None,
    start: int | None = None,
    end: int | None = None,
    deep: bool = False,
    jobs: int | None = None,
    max_findings: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    memory: int = DEFAULT_MEMORY,
    window: int | None = None,
) -> VerifyResult:
    """Check `store`; `only` limits the findings to one part (the commitlog is read in any case, since
    the others are checked against it); `start`/`end` limit the commitlog range checked (half-open);
    `deep` also checks that every key of every message is in the index; `jobs` threads (default: all
    cores); `progress(done, total)` is called with commitlog bytes. `memory` (bytes) bounds the record
    table: the cross-checks take it in windows of that many records' worth (`window` records, when given:
    the differential tests force tiny windows); with a RocksDB message store the table has half of it and
    that store's records kept in memory rather than spilled the other half (checks/rocksdbstore.py); findings are the same for any window.
    On a running broker's store the head files its cleaner deletes while verify reads them are expired: left out
    with the units and index entries naming their records (checks/context.head_moved); any other file gone starts
    the run again on a new snapshot (a few times at most), and the result says so."""
    deleted, given = [], store
    while True:
        try:
            result = _verify_once(store, only, start, end, deep, jobs, max_findings, progress, memory, window)
        except FileGone as e:
            if store.live is None or len(deleted) >= LIVE_RESTARTS:
                raise
            deleted.append(e.path)
            if store is not given:  # the caller's store is the caller's to close
                store.close()
            store = Store(store.root, store.config)
            continue
        result.restarted_after = deleted
        if store is not given:
            result.moved = store.live.moved if store.live is not None else []
            store.close()
        return result


class Preexisting:
    """Accepts a finding of a staged store when the live store has it already: the change being checked did
    not create it. The live store is verified only when the first finding needs this answer, so a change
    whose staged result is sound pays nothing. `kept` lists the findings accepted this way."""

    def __init__(self, store):
        self.store = store
        self.kept: list = []
        self._before: set[tuple] | None = None

    def __call__(self, finding) -> bool:
        if self._before is None:
            self._before = {finding_key(f) for f in verify(self.store).findings}
        if finding_key(finding) in self._before:
            self.kept.append(finding)
            return True
        return False


def redispatched_missing(store: Store, below: int) -> list[Finding]:
    """A crashed store's consumequeue units missing for records below `below` that the abnormal recovery `abort`
    asks for dispatches again (cq-missing-entries the broker dispatches again): a writer that removes `abort`, or
    dispatches only past the queues' end, would lose them."""
    return [
        f
        for f in verify(store, only="consumequeue").findings
        if f.kind == "cq-missing-entries" and DISPATCHED_AGAIN in f.detail and (f.commitLogOffset or 0) < below
    ]


LIVE_RESTARTS = 3  # the broker deletes its expired head files a few at a time, every 10 s by default


def _verify_once(store: Store, only, start, end, deep, jobs, max_findings, progress, memory, window) -> VerifyResult:
    began = time.monotonic()
    run = Run(start_run(store, only, start, end, deep, jobs or available_cores()), began, window, memory, progress)
    try:
        return run.through(WALK + CHECKS, max_findings)
    finally:
        if run.ctx.rocksdb_reading is not None:
            run.ctx.rocksdb_reading.close()


def start_run(store: Store, only: str | None, start: int | None, end: int | None, deep: bool, jobs: int) -> Context:
    """A run's context with its geometry settled, before any scanning."""
    if only not in (None, *VERIFY_PARTS):
        raise ValueError(f"only must be one of {VERIFY_PARTS}")
    store = with_lmq_dispatch(store)
    parts = {p for p in VERIFY_PARTS if only in (None, p)}
    if not store.parts.queues_read:
        # a queue store this version does not read is named (cli), never checked as if it were absent
        if only == "consumequeue":
            store.parts.require_queues()
        parts.discard("consumequeue")
    # geometry that cannot be settled means verify cannot run (exit 2), not that the store is damaged
    geometry = {
        "mappedFileSizeCommitLog": store.commitlog.file_size,
        "mappedFileSizeConsumeQueue": store.consumequeue_file_size,
    }
    if "index" in parts:
        geometry["maxHashSlotNum"], geometry["maxIndexNum"] = store.index_geometry
    return Context(store, parts, start, end, deep, jobs, geometry)


def complete(
    ctx: Context, results: list[list], scanned: int, began: float, max_findings: int | None, window: int | None = None
) -> VerifyResult:
    """The checks (CHECKS) over a commitlog walk's `results` (per file, its chunks' results) done elsewhere (Spark's
    tasks), the record columns taken `window` records at a time (None: the whole table at once)."""
    return Run(ctx, began, window, results=results, scanned=scanned).through(CHECKS, max_findings)


@dataclasses.dataclass
class Run:
    """One verify run as its steps see it: the context, what the commitlog walk found and what each step leaves
    for the later ones. Every step is a function of the run that returns its findings; the run keeps them in the
    order found, and later steps read them (the recovery plan annotates the commitlog's)."""

    ctx: Context
    began: float
    window: int | None  # records a window of the record columns holds (None: the whole table at once)
    memory: int = DEFAULT_MEMORY
    progress: Callable[[int, int], None] | None = None
    results: list[list] = dataclasses.field(default_factory=list)  # per commitlog file, its chunks' scan results
    scanned: int = 0  # commitlog bytes walked
    records: int = 0
    newest: int | None = None  # the newest record's storeTimestamp
    dledger: object = None  # checks/dledger.check_layer's view of the DLedger layer
    links: list = dataclasses.field(default_factory=list)  # the consumequeue and index checks, in windows
    timer: TimerCheck | None = None
    plan: RecoveryPlan | None = None
    lost: tuple[int, int, int] = (0, 0, 0)  # records and bytes past the recovery's cut, records past DLedger's
    findings: Findings = dataclasses.field(init=False)

    def __post_init__(self):
        self.findings = Findings(self.ctx.store.root)

    def through(self, steps: tuple, max_findings: int | None) -> VerifyResult:
        for step in steps:
            self.findings += step(self)
        return _result(self.ctx, self.findings.sorted(), self.records, self.scanned, self.began, max_findings)


def _split_memory(run: Run) -> Findings:
    """The memory budget split between the record table (the window's records, unless the caller gave them) and,
    where verify reads the RocksDB message store, that reading, started here on a thread of its own
    (checks/rocksdbstore.py). Its runs and the record table share the budget, since both live until the checks after the walk: half each, or an
    eighth for the runs when the index records are summed instead of kept (IndexDigest: the runs are then
    the timer and transaction records', and the index records' only if the digest proves nothing). The
    digest proves them only against a whole walk of a stopped store's commitlog (DLedger's walk sums none).
    It reads beside the walk where the walk's threads leave a core free, else beside the checks after it; the
    records read are checked on the reading's thread too (and a core less than the jobs: the checks after
    the walk run meanwhile), but in a live store (its files may go mid-run)."""
    ctx = run.ctx
    reads_rocksdb = "index" in ctx.parts and ctx.store.message_rocksdb is not None
    digest = ctx.full_range and ctx.live is None and ctx.store.dledger is None
    table_memory = run.memory - ((run.memory // 8 if digest else run.memory // 2) if reads_rocksdb else 0)
    if run.window is None:
        run.window = window_records(table_memory)
    if reads_rocksdb:
        at_once = ctx.jobs < available_cores()
        check_threads = max(ctx.jobs - 1, 1) if ctx.live is None else 0
        ctx.rocksdb_reading = start_reading(ctx.store, run.memory - table_memory, digest, at_once, check_threads)
    return Findings()


def _walk_commitlog(run: Run) -> Findings:
    """The commitlog's walk in chunks on a thread pool (checks/commitlog.py): without the checks that take
    windows no record columns outlive their chunk's scan, and when every record fits in one window the
    checks take the whole table at once."""
    ctx = run.ctx
    keep = run.window if WINDOWED_PARTS & ctx.parts else 0
    run.results, run.scanned, kept = verify_commitlog.scan(ctx, verify_commitlog.plan(ctx), run.progress, keep=keep)
    if ctx.rocksdb_reading is not None:
        ctx.rocksdb_reading.begin()
    if kept:
        run.window = None
    return Findings()


def _interrupted_write(run: Run) -> Findings:
    return check_interrupted_write(run.ctx.store)


def _commitlog_files(run: Run) -> Findings:
    return verify_commitlog.check_files(run.ctx) if "commitlog" in run.ctx.parts else Findings()


def _records(run: Run) -> Findings:
    """The walk's chunks merged: the record damage they found, the records counted."""
    ctx, results = run.ctx, run.results
    run.records, found = verify_commitlog.merge(ctx, results)
    if ctx.rocksdb_reading is not None and ctx.rocksdb_reading.digest is not None:
        ctx.rocksdb_reading.digest.add_walked(results)
    if run.records:
        run.newest = max([0] + [r.newest for rs in results for r in rs if r.count])
    return found if "commitlog" in ctx.parts else Findings()


def _dledger_layer(run: Run) -> Findings:
    if run.ctx.store.dledger is None:
        return Findings()
    run.dledger, found = verify_dledger.check_layer(run.ctx, run.results, "commitlog" in run.ctx.parts)
    return found


def _queue_offsets(run: Run) -> Findings:
    """The queue-offset check over the scan's runs of records, in commitlog order (checks/queues.py)."""
    ctx, found = run.ctx, Findings()
    if "commitlog" not in ctx.parts:
        return found
    queues = QueueOffsets(ctx)
    for r in (r for rs in run.results for r in rs if r.count):
        found += queues.add(r.queues if r.queues is not None else summarize(ctx, r))
    found += queues.finish()
    return found


def _begin_links(run: Run) -> Findings:
    """The consumequeue and index checks begin before the recovery plan: it settles where the consumequeues
    end. A unit's mismatch with its record is explained by a queue-offset finding there."""
    ctx, found = run.ctx, Findings()
    breaks = {f.commitLogOffset for f in run.findings if f.kind == "queue-offset"}
    if "consumequeue" in ctx.parts:
        run.links += [ConsumeQueueCheck(ctx, breaks), BatchConsumeQueueCheck(ctx)]
    if "index" in ctx.parts:
        run.links.append(IndexCheck(ctx))
    for check in run.links:
        found += check.begin()
    return found


def _plan_recovery(run: Run) -> Findings:
    """Where the broker's next recovery starts and cuts, and what it drops: noted on the findings later."""
    ctx, cut_at, dledger_cut = run.ctx, (0, 0), 0
    run.plan = _recovery_plan(ctx, run.findings.about_commitlog()) if "commitlog" in ctx.parts else None
    if run.plan is not None and run.plan.cut is not None:
        cut_at = records_past(ctx, run.results, run.plan.cut.commitLogOffset)
    if run.dledger is not None and run.dledger.stop is not None:
        dledger_cut = records_past(ctx, run.results, run.dledger.cut - 1)[0]
    run.lost = (*cut_at, dledger_cut)
    return Findings()


def _begin_timer(run: Run) -> Findings:
    if "timer" not in run.ctx.parts:
        return Findings()
    run.timer = TimerCheck(run.ctx)
    return run.timer.begin()


def _windowed_checks(run: Run) -> Findings:
    """The checks that need the record columns, over the windows of them (checks/windows.py)."""
    ctx, links, timer, found = run.ctx, run.links, run.timer, Findings()
    if links or timer is not None:
        for w in windows(ctx, run.results, run.window):
            for check in links:
                found += check.window(w)
            if timer is not None:
                found += timer.window(w)
            del w
            release_freed()
    for check in links:
        if getattr(check, "needs_resolve", False):
            for w in windows(ctx, run.results, run.window):
                check.resolve(w)
        found += check.finish()
    return found


def _dledger_recovery(run: Run) -> Findings:
    if run.dledger is None or "commitlog" not in run.ctx.parts:
        return Findings()
    found = verify_dledger.recovery_notes(run.ctx, run.lost[2], run.dledger, run.findings.about_commitlog())
    found += _dledger_index_loss(run.ctx)
    return found


def _checkpoint(run: Run) -> Findings:
    if "commitlog" not in run.ctx.parts:
        return Findings()
    return check_checkpoint(run.ctx, run.records, run.newest, run.plan, run.lost[0], run.lost[1])


def _finish_timer(run: Run) -> Findings:
    return run.timer.finish() if run.timer is not None else Findings()


def _live(run: Run) -> Findings:
    return live_note(run.ctx) if run.ctx.live is not None else Findings()


def _dledger_index_loss(ctx: Context) -> Findings:
    """After a crash a DLedger broker deletes the index files newer than the checkpoint's indexMsgTimestamp as any
    broker does (IndexService.load), but DLedgerCommitLog.recover dispatches nothing: keys are indexed again only
    from where the reput resumes, the queues' end (recovery.first_redispatched)."""
    cp = ctx.store.checkpoint() if ctx.crashed and "index" in ctx.parts else None
    if cp is None:
        return Findings()
    verify_cq.consumequeue_max_phy(ctx)
    if ctx.queues_end is None:
        return Findings()
    return verify_links.index_loss_on_recovery(ctx, cp, first_redispatched(ctx.store, ctx.queues_end, ctx.logical_end))


def _store_wide_checks(run: Run) -> Findings:
    """The checks that do not read the records: the double-write copy, compaction topics, the RocksDB message
    store (its records read one by one), config files."""
    ctx = run.ctx
    store, parts = ctx.store, ctx.parts
    found = Findings()
    copy = store.parts.find("rocksdb-consumequeue")
    if "consumequeue" in parts and copy is not None and copy.read:
        found += check_double_write(store)
    if "consumequeue" in parts:
        found += check_compaction(store)
    if "index" in parts:
        found += check_rocksdb_store(store, ctx.rocksdb_reading, ctx.jobs)
    if len(parts) == len(VERIFY_PARTS):
        for p in config_problems(store):
            found.add(CONFIG, p.kind, p.severity, p.path, None, None, p.detail)
    return found


def _result(
    ctx: Context, findings: list[Finding], records: int, scanned: int, began: float, max_findings: int | None
) -> VerifyResult:
    """The run's result: its findings (cut at `max_findings`), counted in full, and what it read."""
    # all, also past --max-findings
    counts = {
        "total": len(findings),
        "bySeverity": dict(Counter(f.severity for f in findings)),
        "byKind": dict(Counter(f.kind for f in findings).most_common()),
    }
    truncated = max_findings is not None and len(findings) > max_findings
    if truncated:
        findings = findings[:max_findings]
    stats = {
        "seconds": round(time.monotonic() - began, 3),
        "bytes": scanned,
        "records": records,
        "files": len(ctx.store.commitlog.files),
        "jobs": ctx.jobs,
        "geometry": ctx.geometry,
        "findings": counts,
    }
    return VerifyResult(findings, truncated, stats, ctx.store.lock_holder())


def with_lmq_dispatch(store: Store) -> Store:
    """The store as the broker that wrote it dispatched: without a broker config, LMQ queue directories show that it
    dispatched to LMQ queues (enableMultiDispatch)."""
    cfg = store.config
    if (
        cfg.source is not None
        or cfg.enableMultiDispatch
        or not any(d.name.startswith(LMQ_PREFIX) for d in Store._dirs(store.consumequeue_dir))
    ):
        return store
    return Store(store.root, dataclasses.replace(cfg, enableMultiDispatch=True, enableLmq=True))


def live_note(ctx: Context) -> Findings:
    """What a run beside a running broker judged: the store up to its snapshot; the rest is the broker's."""
    live, found = ctx.live, Findings()
    moved = "".join(f"; {f.name} at {pos}: {what}" for f, pos, what in live.moved)
    marker = "" if live.by_rmqctl else " and has `abort` as its running marker"
    found.add(
        CHECKPOINT,
        "live",
        "info",
        ctx.store.lock_path,
        None,
        live.commitlog_end,
        f"live: {live.holder} holds the store{marker}; verify judged the store as it was when the run began (the commitlog up to offset {live.commitlog_end}, the "
        f"checkpoint and index headers then); records, units and index entries written since are the "
        f"broker's work in flight, not checked{moved}",
    )
    return found


def check_interrupted_write(store: Store) -> Findings:
    """A rebuild/repair/clean killed mid-way (txn's intent or staging left behind)."""
    left, found = pending(store.root), Findings()
    if left is None:
        return found
    committed = left["state"] == "committed"
    what = (
        f"an interrupted `{left['command']}` ({left['steps']} step(s)) is committed but not finished"
        if committed
        else f"staging left by an interrupted rmqctl run: {', '.join(left['paths'])}"
    )
    found.add(
        FILES,
        "interrupted-write",
        "error" if committed else "warning",
        store.root,
        None,
        None,
        f"{what}; it {left['action']}. Do not start the broker before that."
        if committed
        else f"{what}; it {left['action']}",
    )
    return found


def check_checkpoint(ctx: Context, records: int, newest: int | None, plan, lost: int, lost_bytes: int) -> Findings:
    """The checkpoint against the records (how many, the newest storeTimestamp), then what the broker's next
    recovery does (`plan`, and the records and bytes past its cut)."""
    store = ctx.store
    found = Findings()
    cp = store.checkpoint()
    has_data = bool(records)
    if cp is None:
        if has_data:
            found.add(
                CHECKPOINT,
                "checkpoint-missing",
                "warning",
                store.checkpoint_path,
                None,
                None,
                "no checkpoint file: the broker starts with all its timestamps at 0",
            )
        cp = {"physicMsgTimestamp": 0, "logicsMsgTimestamp": 0, "indexMsgTimestamp": 0, "fileSize": 0}
    elif cp["fileSize"] != S.CHECKPOINT_FILE_SIZE:
        found.add(
            CHECKPOINT,
            "checkpoint-size",
            "warning",
            store.checkpoint_path,
            None,
            None,
            f"checkpoint is {cp['fileSize']} bytes; the broker maps {S.CHECKPOINT_FILE_SIZE}",
        )
    if has_data and ctx.full_range:
        tail = next((r for r in ctx.damage.ranges if r[2] == "torn-tail"), None)
        for name, what in (
            ("physicMsgTimestamp", "flushed"),
            ("logicsMsgTimestamp", "dispatched to a consumequeue"),
            ("indexMsgTimestamp", "indexed in a full index file"),
        ):
            if cp[name] > newest:
                detail = (
                    f"{name} {cp[name]} is later than the newest record's storeTimestamp {newest}: the "
                    f"checkpoint says messages were {what} that the commitlog no longer holds"
                )
                if tail:
                    detail += f"; a direct consequence of the torn-tail at {tail[3]}"
                found.add(CHECKPOINT, "checkpoint-ahead", "error", store.checkpoint_path, None, None, detail)
    if plan is not None:
        found += _recovery_notes(ctx, plan, cp, lost, lost_bytes)
    return found


class RecoveryPlan(NamedTuple):
    first: int  # the file the recovery starts from
    why: str
    mode: str
    abort: bool
    seen: list  # the commitlog findings the recovery fails on
    cut: Finding | None  # the first of them it reaches: it truncates there


def _recovery_plan(ctx: Context, damage: list[Finding]) -> RecoveryPlan | None:
    """Which file the broker's next recovery starts from and where it cuts the commitlog, at the first of the
    commitlog findings (`damage`) it fails on (None: DLedger's own recovery, verify_dledger's notes)."""
    files = ctx.files
    if not files or ctx.store.dledger is not None:
        return None
    abort = ctx.crashed
    cfg = ctx.config
    if abort:
        first = ctx.abnormal_start
        safe = " (and indexMsgTimestamp)" if cfg.messageIndexEnable and cfg.messageIndexSafe else ""
        why = (
            "the newest file whose first record's commitlog offset is within the RocksDB consume queue's "
            "dispatch checkpoint"
            if abnormal_start_by_offset(ctx.store)
            else f"the newest file whose first record's storeTimestamp is at most the checkpoint's "
            f"min(physic, logics) - 3s{safe}"
        )
        mode = "abnormal recovery"
    elif not ctx.store.parts.queues_read:
        first = 0
        why = "the first file: where the broker's queues end is not known (its consume queues are not read)"
        mode = "normal recovery"
    else:
        first = normal_recovery_start(ctx.store, lambda: verify_cq.consumequeue_max_phy(ctx))
        why = (
            "the third file from the last (4.9 normal recovery)"
            if not ctx.is5
            else "the newest file starting at or before the consumequeues' end (5.x normal recovery)"
            if ctx.store.message_rocksdb is None
            else "the newest file starting at or before where dispatch "
            "resumes, the least of the consumequeues' end and the RocksDB stores' lastOffsetPy (5.x normal recovery)"
        )
        mode = "normal recovery"
    begin = files[first].start
    seen = [f for f in damage if recovery_fails_on(f.kind, ctx.config, ctx.store.version, abort)]
    cut = next((f for f in sorted(seen, key=lambda f: f.commitLogOffset) if f.commitLogOffset >= begin), None)
    ctx.recovery_cut = cut.commitLogOffset if cut is not None else None
    return RecoveryPlan(first, why, mode, abort, seen, cut)


def _index_past_cut(ctx: Context, cp: dict, abort: bool, cut: int) -> str:
    """What the index keeps past a recovery's cut: IndexService truncates nothing, and buildIndex skips a record
    below the last index file's endPhyOffset (after a crash, of the last file its load keeps)."""
    if "index" not in ctx.parts or not ctx.config.messageIndexEnable:
        return ""
    kept = [
        ix
        for ix in verify_links.index_files(ctx)[0]
        if not (abort and index_dropped_after_crash(ix.header["endTimestamp"], cp["indexMsgTimestamp"]))
    ]
    end = kept[-1].header["endPhyOffset"] if kept else 0
    if end < cut:
        return ""
    return (
        f"; the index keeps its entries up to {end} (the broker never truncates it): keys of the dropped records "
        f"stay, and the messages it then writes at {cut}..{end} get no index entry (buildIndex skips a record below "
        "the last index file's endPhyOffset); `rmqctl repair` takes those entries out"
    )


def _recovery_notes(ctx: Context, plan: RecoveryPlan, cp: dict, lost: int, lost_bytes: int) -> Findings:
    """Which damage the broker's next recovery will see (and cut the commitlog at, noted on its findings) and
    which it will not; with the abort file, where its abnormal recovery starts and the index keys it drops."""
    files, cfg = ctx.files, ctx.config
    found = Findings()
    first, why, mode, abort, seen, cut = plan
    begin = files[first].start
    if cut is not None:
        cut_note = (
            f"the broker's {mode} re-checks records from {files[first].name} and stops at this one: it "
            f"truncates the commitlog at {cut.commitLogOffset}, dropping {lost} later record(s) "
            f"({lost_bytes} bytes) and the consumequeue entries past it"
        )
        cut.detail += f"; {cut_note}" + _index_past_cut(ctx, cp, abort, cut.commitLogOffset)
    for f in seen:
        if f is cut:
            continue
        if f.commitLogOffset < begin:
            f.detail += (
                f"; the broker's {mode} starts at {files[first].name} and does not re-check this file: it "
                f"keeps serving this record as it is"
            )
        elif cut is not None and f.commitLogOffset > cut.commitLogOffset:
            f.detail += f"; the {mode} cuts it off with everything after {cut.commitLogOffset}"
    if abort:
        outcome = (
            f"it stops at the {cut.kind} at {cut.commitLogOffset}" if cut is not None else "it finds nothing to cut"
        )
        before = sorted({f.commitLogOffset for f in seen if f.commitLogOffset < begin})
        detail = (
            f"abort file present: the last exit was not clean. Abnormal recovery starts at "
            f"{files[first].name} ({why}), re-checks every record from {begin} on with "
            f"checkCRCOnRecover={str(cfg.checkCRCOnRecover).lower()}, and truncates at the first failure: "
            f"{outcome}."
        )
        if before:
            detail += f" Damage before {begin} is not re-checked: {', '.join(map(str, before[:5]))}."
        found.add(CHECKPOINT, "abnormal-recovery", "info", ctx.store.abort_path, None, begin, detail)
        found += verify_links.index_loss_on_recovery(ctx, cp, begin)
    return found


# A run's steps, in order (Run.through). Spark walks the commitlog in its own tasks and runs the CHECKS.
WALK = (_split_memory, _walk_commitlog)
CHECKS = (
    _interrupted_write,
    _commitlog_files,
    _records,
    _dledger_layer,
    _queue_offsets,
    _begin_links,
    _plan_recovery,
    _begin_timer,
    _windowed_checks,
    _dledger_recovery,
    _checkpoint,
    _store_wide_checks,
    _finish_timer,
    _live,
)
