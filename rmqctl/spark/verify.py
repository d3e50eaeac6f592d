"""`spark verify`: `verify` with its commitlog scan (the record-level checks, checks.scan.scan_chunk, or
checks.dledger.scan_file for a DLedger store) run as Spark tasks, one per commitlog file of every store;
the checks that need the whole store (queue offsets, consumequeues, index, checkpoint, recovery) then run on
the driver over what the tasks found, exactly as `verify` runs them, so the findings are verify's own Finding
objects.

The run is verify's own (`start_run`, `verify_commitlog.plan`, `complete`), with the scan done by Spark tasks;
tests hold the two to the same findings on every fixture.
"""

from __future__ import annotations

import dataclasses
import time

from ..checks import verify as V
from ..checks import commitlog as verify_commitlog
from ..checks.context import Context
from ..checks.dledger import scan_file
from ..views.time_range import narrow
from ..checks.scan import Task, scan_chunk
from ..store import Store


def file_tasks(ctx: Context) -> list[Task | None]:
    """verify's own plan, one task per file: the file's first chunk (a walk forced from the file's start)
    stretched to where its last chunk ends, so no hand-over between chunks is needed."""
    return [
        # (not paged: an executor runs a task on each of its cores, with none left for a pager)
        dataclasses.replace(chunks[0], stop=chunks[-1].stop, paged=False) if chunks else None
        for chunks in verify_commitlog.plan(ctx)
    ]


def scan_task(item: tuple[int, int, Task, bool]):
    run_index, file_index, task, dledger = item
    return run_index, file_index, (scan_file if dledger else scan_chunk)(task)


def verify_stores(
    spark,
    stores: list[Store],
    only: str | None = None,
    deep: bool = False,
    max_findings: int | None = None,
    since: int | None = None,
    until: int | None = None,
) -> list[tuple[Store, V.VerifyResult]]:
    """Verify every store (only the part of its commitlog holding the messages stored in [since, until], epoch
    ms, when given: `verify --since/--until`'s range); all their commitlog files are scanned in one Spark job."""
    began = time.monotonic()
    runs = [V.start_run(store, only, *narrow(store, since, until), deep, 1) for store in stores]
    plans = [file_tasks(ctx) for ctx in runs]
    items = [
        (r, f, task, runs[r].store.dledger is not None)
        for r, plan in enumerate(plans)
        for f, task in enumerate(plan)
        if task is not None
    ]
    sc = spark.sparkContext
    sc.setJobDescription(f"rmqctl spark verify: {len(items)} commitlog file(s) of {len(runs)} store(s)")
    scanned = sc.parallelize(items, len(items)).map(scan_task).collect() if items else []
    results = [[[] for _ in plan] for plan in plans]
    for r, f, result in scanned:
        results[r][f] = [result]
    out = []
    for ctx, per_file in zip(runs, results):
        ctx.jobs = sum(1 for rs in per_file if rs)  # tasks that scanned this store's commitlog
        scanned_bytes = sum(r.bytes for rs in per_file for r in rs)
        out.append((ctx.store, V.complete(ctx, per_file, scanned_bytes, began, max_findings)))
    return out
