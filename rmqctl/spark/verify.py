"""`spark verify`: `verify` with its commitlog scan (the record-level checks, ops.verify_scan.scan_chunk, or
ops.verify_dledger.scan_file for a DLedger store) run as
Spark tasks, one per commitlog file of every store; the checks that need the whole store (queue offsets,
consumequeues, index, checkpoint, recovery) then run on the driver over what the tasks found, exactly as
`verify` runs them, so the findings are verify's own Finding objects.

The run is verify's own (`start_run` / `complete`), with its scan() answered by the Spark tasks; tests hold
the two to the same findings on every fixture.
"""
from __future__ import annotations

import dataclasses
import time

from ..ops import verify as V
from ..ops.verify_dledger import scan_file
from ..ops.verify_scan import Task, scan_chunk
from ..store import Store


class SparkRun(V.VerifyRun):
    """A verify run whose commitlog scan results come from Spark tasks (set before `complete` runs)."""

    results: list[list]  # per commitlog file, set by verify_stores before complete()

    def file_tasks(self) -> list[Task | None]:
        """verify's own plan, one task per file: the file's first chunk (a walk forced from the file's start)
        stretched to where its last chunk ends, so no hand-over between chunks is needed."""
        return [dataclasses.replace(chunks[0], stop=chunks[-1].stop) if chunks else None for chunks in self.tasks()]

    def scan(self) -> list[list]:
        self.bytes_scanned = sum(r.bytes for rs in self.results for r in rs)
        return self.results


def scan_task(item: tuple[int, int, Task, bool]):
    run_index, file_index, task, dledger = item
    return run_index, file_index, (scan_file if dledger else scan_chunk)(task)


def verify_stores(spark, stores: list[Store], only: str | None = None, deep: bool = False,
                  max_findings: int | None = None) -> list[tuple[Store, V.VerifyResult]]:
    """Verify every store; all their commitlog files are scanned in one Spark job."""
    began = time.monotonic()
    runs = [V.start_run(store, only, None, None, deep, 1, None, run_class=SparkRun) for store in stores]
    plans = [run.file_tasks() for run in runs]
    items = [(r, f, task, runs[r].store.dledger is not None) for r, plan in enumerate(plans)
             for f, task in enumerate(plan) if task is not None]
    sc = spark.sparkContext
    sc.setJobDescription(f"rmqctl spark verify: {len(items)} commitlog file(s) of {len(runs)} store(s)")
    scanned = sc.parallelize(items, len(items)).map(scan_task).collect() if items else []
    for r, run in enumerate(runs):
        run.results = [[] for _ in plans[r]]
    for r, f, result in scanned:
        runs[r].results[f] = [result]
    for run in runs:
        run.jobs = sum(1 for rs in run.results if rs)  # tasks that scanned this store's commitlog
    return [(run.store, V.complete(run, began, max_findings)) for run in runs]
