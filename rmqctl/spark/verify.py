"""`spark verify`: `verify` with its commitlog scan (the record-level checks, ops.verify_scan.scan_chunk) run as
Spark tasks, one per commitlog file of every store; the checks that need the whole store (queue offsets,
consumequeues, index, checkpoint, recovery) then run on the driver over what the tasks found, exactly as
`verify` runs them, so the findings are verify's own Finding objects.

verify.verify() builds its run object itself, so the few lines that order its steps are repeated here around
a run whose scan is Spark's; tests hold the two to the same findings on every fixture.
"""
from __future__ import annotations

import dataclasses
import time

from ..ops import verify as V
from ..ops import verify_links
from ..ops.verify_scan import Task, scan_chunk
from ..store import Store


class SparkRun(V._Run):
    """A verify run whose commitlog scan results come from Spark tasks (set before `commitlog()` runs)."""

    def __init__(self, store: Store, parts: set, deep: bool):
        super().__init__(store, V.Collector(store), parts, None, None, deep, 1, None)
        self.results: list[list] = []

    def file_tasks(self) -> list[Task | None]:
        """verify's own plan, one task per file: the file's first chunk (a walk forced from the file's start)
        stretched to where its last chunk ends, so no hand-over between chunks is needed."""
        return [dataclasses.replace(chunks[0], stop=chunks[-1].stop) if chunks else None for chunks in self.tasks()]

    def scan(self) -> list[list]:
        self.bytes_scanned = sum(r.bytes for rs in self.results for r in rs)
        return self.results


def scan_task(item: tuple[int, int, Task]):
    run_index, file_index, task = item
    return run_index, file_index, scan_chunk(task)


def verify_stores(spark, stores: list[Store], only: str | None = None, deep: bool = False,
                  max_findings: int | None = None) -> list[tuple[Store, V.VerifyResult]]:
    """Verify every store; all their commitlog files are scanned in one Spark job."""
    if only not in (None, *V.ONLY):
        raise ValueError(f"only must be one of {V.ONLY}")
    began = time.monotonic()
    parts = {p for p in V.ONLY if only in (None, p)}
    runs = []
    for store in stores:
        store = V.with_geometry(store)
        runs.append(SparkRun(store, parts, deep))
    plans = [run.file_tasks() for run in runs]
    items = [(r, f, task) for r, plan in enumerate(plans) for f, task in enumerate(plan) if task is not None]
    sc = spark.sparkContext
    sc.setJobDescription(f"rmqctl spark verify: {len(items)} commitlog file(s) of {len(runs)} store(s)")
    scanned = sc.parallelize(items, len(items)).map(scan_task).collect() if items else []
    for r, run in enumerate(runs):
        run.results = [[] for _ in plans[r]]
    for r, f, result in scanned:
        runs[r].results[f] = [result]
    return [(run.store, finish(run, parts, began, max_findings)) for run in runs]


def finish(run: SparkRun, parts: set, began: float, max_findings: int | None) -> V.VerifyResult:
    """The steps of verify.verify() after its scan, in its order."""
    run.commitlog()
    if "commitlog" in parts:
        run.queue_offsets()
    if "consumequeue" in parts:
        verify_links.check_consumequeues(run)
    if "index" in parts:
        verify_links.check_index(run)
    if "commitlog" in parts:
        run.checkpoint_and_recovery()
    order = sorted(run.out.items, key=lambda x: (x[0], x[1].commitLogOffset if x[1].commitLogOffset is not None else -1,
                                                  x[1].file or "", x[1].position or 0))
    findings = [f for _, f in order]
    truncated = max_findings is not None and len(findings) > max_findings
    if truncated:
        findings = findings[:max_findings]
    stats = {"seconds": round(time.monotonic() - began, 3), "bytes": run.bytes_scanned, "records": len(run.rec.off),
             "files": len(run.store.commitlog.files), "jobs": spark_jobs(run)}
    return V.VerifyResult(findings, truncated, stats, run.store.lock_holder())


def spark_jobs(run: SparkRun) -> int:
    """Tasks that scanned this store's commitlog."""
    return sum(1 for rs in run.results if rs)
