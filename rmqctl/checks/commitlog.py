"""verify's commitlog part: the files (names, sizes, contiguity), the scan of every file in chunks on a thread
pool (checks/scan.py's compiled walk, which releases the GIL), and the merge of the chunks' results into
findings, damaged ranges and one table of every record (`Records`). Another engine (Spark) runs the same
`plan`'s tasks itself and hands their results to `merge` through checks/verify.py's `complete`.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses

import numpy as np

from .. import dledger as D
from .. import schema as S
from ..budget import block_sigint_here
from ..engine import available_cores
from ..errors import FileGone
from ..findings import FILES, RECORD_ERROR_KINDS, RECORDS, Findings
from ..recovery import allow_v2
from ..rules import record_expired
from ..store import dledger_committed_end, links_outside
from . import dledger as verify_dledger, links as verify_links
from .context import Context
from .queues import summarize
from .scan import ChunkResult, Region, Task, scan_chunk

CHUNK = 64 << 20  # commitlog bytes per task: files are split so that --jobs helps on one big file
COLUMNS = ("pos", "size", "queue_id", "queue_offset", "sysflag", "store_ts", "topic", "tags", "key_record", "key_hash")


def check_files(ctx: Context) -> Findings:
    """Names, sizes and contiguity (MappedFileQueue.load, and MetaQ's validateSegments rule); the missing
    bytes go to the run's damaged ranges."""
    found = _strays(ctx)
    files, size = ctx.files, ctx.file_size
    for i, f in enumerate(files):
        if f.length != size:
            last = i == len(files) - 1
            if f.length == 0 and last:
                note = (
                    "the broker's load refuses it (4.9); 5.1.3+ deletes a zero-length last file"
                    if not ctx.is5
                    else "5.1.3+ brokers delete a zero-length last file at load; older ones refuse to start"
                )
            else:
                note = "the broker's load refuses any file whose length is not mappedFileSizeCommitLog"
            found.add(
                FILES, "file-size", "error", f.path, None, f.start, f"file is {f.length} bytes, not {size}: {note}"
            )
        if f.start % size:
            found.add(
                FILES,
                "file-misaligned",
                "error",
                f.path,
                None,
                f.start,
                f"starts at {f.start}, not a multiple of the file size {size}",
            )
    found += _gaps_and_overlaps(ctx)
    for f in files:
        if f.length < size:
            ctx.damage.add(f.start + f.length, f.start + size, "file-size", f.start)
    return found


def _strays(ctx: Context) -> Findings:
    """What lies in the commitlog directories besides its files, and symlinks that lead out of the store."""
    found = Findings()
    q = ctx.store.commitlog
    for p in q.strays:
        found.add(
            FILES,
            "stray-file",
            "error",
            p,
            None,
            None,
            "not a 20-digit offset name: the broker's load fails on it (Long.parseLong of the name)",
        )
    for d in q.dirs:
        for p in sorted(d.iterdir()) if d.is_dir() else []:
            if p.is_dir():
                found.add(
                    FILES,
                    "stray-file",
                    "warning",
                    p,
                    None,
                    None,
                    "a directory inside the commitlog directory: 4.9 brokers fail to load it (5.x skips it)",
                )
    for p, target in links_outside(ctx.store):
        found.add(
            FILES,
            "symlink-outside",
            "warning",
            p,
            None,
            None,
            f"a symlink to {target}, outside the store: the broker follows it, rmqctl's writers refuse to",
        )
    return found


def _gaps_and_overlaps(ctx: Context) -> Findings:
    """Neighbouring files that leave offsets without a file (lost records: damaged ranges) or overlap."""
    found, files, size = Findings(), ctx.files, ctx.file_size
    for a, b in zip(files, files[1:]):
        if b.start > a.start + size:
            missing = (b.start - a.start - size) // size
            ctx.damage.add(a.start + size, b.start, "file-gap", a.start + size)
            found.add(
                FILES,
                "file-gap",
                "error",
                b.path,
                None,
                a.start + size,
                f"commitlog offsets {a.start + size}..{b.start} have no file ({missing} file(s) of {size} "
                f"bytes missing between {a.name} and {b.name}); every record there is lost",
            )
        elif b.start < a.start + size:
            found.add(
                FILES,
                "file-overlap",
                "error",
                b.path,
                None,
                b.start,
                f"{b.name} starts inside {a.name} (which covers {a.start}..{a.start + size})",
            )
    return found


def plan(ctx: Context) -> list[list[Task]]:
    """Per file, its chunks. Records before `start` are walked (to find where records start) but not
    checked; files wholly outside [start, end) are skipped."""
    out = []
    size = ctx.file_size
    want = dict(
        check_crc="commitlog" in ctx.parts, want_tags="consumequeue" in ctx.parts, want_keys="index" in ctx.parts
    )
    end = ctx.scan_end
    paged = ctx.jobs == 1 and available_cores() > 1  # one walking thread, and a core for the pager's
    reput_end = dledger_committed_end(ctx.store)
    reading = ctx.rocksdb_reading
    digest = reading.digest.bounds if reading is not None and reading.digest is not None else None
    for f in ctx.files:
        limit = min(f.length, size)
        before = ctx.start is not None and f.start + size <= ctx.start
        if before or (end is not None and f.start >= end):
            out.append([])
            continue
        claim_from = max(0, (ctx.start or 0) - f.start)
        stop = min(limit, end - f.start) if end is not None else limit
        if ctx.store.dledger is not None:  # entries are found from the file's start: chunks begin at entry starts
            cuts = [c for c in D.slice_starts(f.buf, limit, CHUNK) if c < stop] or [0]
            f.release()
        else:
            cuts = list(range(0, stop, CHUNK))[: max(1, stop // CHUNK)] or [0]
        bounds = cuts[1:] + [stop]
        moving_from = None if ctx.live is None else ctx.live.commitlog_end - f.start
        chunks = []
        for k, (lo, hi) in enumerate(zip(cuts, bounds)):
            chunks.append(
                Task(
                    path=str(f.path),
                    name=f.name,
                    file_start=f.start,
                    file_size=size,
                    begin=lo,
                    forced=k == 0 or ctx.store.dledger is not None,
                    claim_from=max(lo, claim_from),
                    stop=hi,
                    config=ctx.config,
                    moving_from=moving_from,
                    reput_end=reput_end,
                    allow_v2=allow_v2(ctx.store),
                    paged=paged,
                    index_digest=digest,
                    **want,
                )
            )
        out.append(chunks)
    return out


def scan(ctx: Context, plan: list[list[Task]], progress=None, keep: int | None = None) -> tuple[list[list], int, bool]:
    """Run the plan's tasks, `ctx.jobs` at a time; a chunk that started at another record than the walk
    before it reached is walked again from there. Returns the results per file, the bytes scanned and
    whether every result holds its record columns: the first `keep` records' results do (None: all), the
    later ones lose them (verify's windows walk those chunks again). Each result carries its queue-offset
    summary, taken while its columns are at hand."""
    whole = walker(ctx)
    flat = [(i, k, t) for i, chunks in enumerate(plan) for k, t in enumerate(chunks)]
    total = sum(max(0, t.stop - t.claim_from) for _, _, t in flat)
    results: dict[tuple[int, int], object] = {}
    done = 0
    held = [0]

    def scan_one(task):
        r = whole(task)
        if "commitlog" in ctx.parts and r.count:
            r.queues = summarize(ctx, r)
        held[0] += r.count  # (threads add here: a count off by a race only moves when columns are dropped)
        if keep is not None and held[0] > keep:
            return without_records(r)
        return compact(r) if keep is not None else r

    if progress:
        progress(0, total)
    if ctx.jobs > 1 and len(flat) > 1:  # threads: the kernel releases the GIL
        with concurrent.futures.ThreadPoolExecutor(min(ctx.jobs, len(flat)), initializer=block_sigint_here) as pool:
            if "index" in ctx.parts:  # index structure does not need the records: read it meanwhile
                pool.submit(verify_links.index_structure, ctx)
            futures = {pool.submit(scan_one, t): (i, k) for i, k, t in flat}
            for fut in concurrent.futures.as_completed(futures):
                r = fut.result()
                results[futures[fut]] = r
                done += r.bytes
                if progress:
                    progress(done, total)
    else:
        for i, k, t in flat:
            r = scan_one(t)
            results[(i, k)] = r
            done += r.bytes
            if progress:
                progress(done, total)
    kept = keep is None or held[0] <= keep
    out = []
    for i, chunks in enumerate(plan):
        rs = [results[(i, k)] for k in range(len(chunks))]
        for k in range(1, len(rs)):
            expected = rs[k - 1].handoff
            if rs[k].first == expected or (rs[k].first is None and expected >= rs[k].task.stop):
                continue
            # the chunk found another first record than the walk before it reached: walk on from there
            if expected < rs[k].task.stop:
                rs[k] = scan_one(dataclasses.replace(rs[k].task, begin=expected, forced=True))
            else:
                rs[k] = dataclasses.replace(
                    without_records(rs[k]),
                    handoff=expected,
                    count=0,
                    start=-1,
                    end=0,
                    newest=0,
                    record_bytes=0,
                    queues=None,
                )
        out.append(rs)
    if ctx.live is not None and ctx.head_moved() > ctx.files[0].start:
        # the broker's cleaner took head files during the walk: their records are expired, all of them (a file
        # walked in part would leave a gap in its queues' offsets where its successor's records take over)
        out = [
            [expired(r.task) for r in rs] if record_expired(ctx.files[i].start, ctx.min_offset) else rs
            for i, rs in enumerate(out)
        ]
    return out, done, kept


def walker(ctx: Context):
    """How this run walks a chunk (DLedger's entries or plain records). Beside a running broker a file its
    cleaner deleted at the head since the listing walks to no records: they are expired (noted in what moved);
    any other file gone is FileGone (verify starts again on a new snapshot)."""
    walk = verify_dledger.scan_file if ctx.store.dledger is not None else scan_chunk
    if ctx.live is None:
        return walk

    def walk_live(task: Task):
        try:
            return walk(task)
        except FileGone:
            if not record_expired(task.file_start, ctx.head_moved()):
                raise
            return expired(task)

    return walk_live


def expired(task: Task) -> ChunkResult:
    """The result of a chunk whose records the broker's cleaner deleted: none."""
    empty = np.zeros(0, np.int64)
    return ChunkResult(
        task, None, task.stop, **{name: empty for name in COLUMNS}, topics=[], lmq=[], inner_num={}, findings=[],
        regions=[], blank=None, bytes=0, count=0, start=-1, end=0, newest=0, record_bytes=0,
    )  # fmt: skip


def merge(ctx: Context, results: list[list]) -> tuple[int, Findings]:
    """Record findings and damaged regions, the commitlog's logical end and its version; returns how many
    records were checked (their columns come per window: checks/windows.py) and the findings."""
    files = ctx.files
    found = Findings()
    has_data = [
        any(
            r.count or r.blank or any(not g.zero_head or g.last_nonzero >= 0 or g.resync is not None for g in r.regions)
            for r in rs
        )
        for rs in results
    ]
    last_data = max((i for i, d in enumerate(has_data) if d), default=-1)
    records = 0
    for i, rs in enumerate(results):
        f = files[i]
        for r in rs:
            for kind, severity, pos, detail in r.findings:
                found.add(RECORDS, kind, severity, f.path, pos, f.start + pos, detail)
            for g in r.regions:
                found += _region(ctx, i, g, last_data)
            if r.blank is not None:
                ctx.logical_end = max(ctx.logical_end, f.start + r.blank[0] + S.END_FILE_MIN_BLANK_LENGTH)
            if r.count:
                ctx.logical_end = max(ctx.logical_end, f.start + r.end)
            records += r.count
    return records, found


def compact(r):
    """A chunk's result whose record columns own just their records (the walk's arrays have room to spare)."""
    return dataclasses.replace(r, **{name: np.array(getattr(r, name)) for name in COLUMNS})


def without_records(r):
    """A chunk's result without its per-record columns (its findings, regions and counts kept)."""
    empty = np.zeros(0, np.int64)
    return dataclasses.replace(r, lmq=[], inner_num={}, **{name: empty for name in COLUMNS})


def _region(ctx: Context, i: int, g: Region, last_data: int) -> Findings:
    """Classify bytes that are not records (Region) into a finding and a damaged range."""
    found = Findings()
    f = ctx.files[i]
    x = f.start + g.start
    if g.resync is None and i >= last_data and g.last_nonzero < g.start:
        return found  # zeros after the last record: the logical end of the commitlog
    kind, end, detail = _region_damage(ctx, i, g, last_data)
    ctx.damage.add(x, end, kind, x)
    found.add(RECORDS, kind, "error", f.path, g.start, x, detail)
    return found


def _region_damage(ctx: Context, i: int, g: Region, last_data: int) -> tuple[str, int, str]:
    """(kind, end of the damaged range, detail) of a region that is damage: bytes the next record resyncs after,
    a torn tail after the last record, or a file with no BLANK record at its end."""
    f = ctx.files[i]
    x = f.start + g.start
    if g.resync is not None:
        n = g.resync - g.start
        return (
            RECORD_ERROR_KINDS.get(g.cause, g.cause),
            f.start + g.resync,
            f"{n} invalid bytes at commitlog offset {x} ({g.detail}); the next record starts at {f.start + g.resync}",
        )
    if i >= last_data:
        n = g.last_nonzero + 1 - g.start
        return (
            "torn-tail",
            f.start + g.last_nonzero + 1,
            f"{n} invalid bytes at commitlog offset {x} ({g.detail}) and nothing valid after them: a torn or "
            f"garbage tail after the last record",
        )
    limit = min(f.length, ctx.file_size)
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
        kind = RECORD_ERROR_KINDS.get(g.cause, g.cause)
        what = f"{n} invalid bytes at commitlog offset {x} ({g.detail}) up to the end of the file, which has no BLANK record"
    end = f.start + max(limit, g.start + 1)
    return kind, end, f"{what}; the broker's readers stop at this file and never reach the next one by walking"
