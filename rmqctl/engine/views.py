"""The Arrow views every commitlog scan offers on top of its `chunks()` (the plain commitlog's and the DLedger
data files'): RecordBatches and a Table. pyarrow and the compiled kernels load only when one is asked for."""

from __future__ import annotations


class ColumnViews:
    """Mixed into a scan with `chunks(start, end, check_crc, resident=)` (batches of engine.walk.Chunk)."""

    dledger_entries = False  # the rows carry their DLedger entry (a `dledger` column)
    segmented = False  # chunks(built=, jobs=) walks and builds a file's cells on threads (engine.walk_segments)

    def batches(self, start: int | None = None, end: int | None = None, check_crc: bool = False, jobs: int = 1):
        """The records of [start, end) as pyarrow RecordBatches (rmqctl.engine.columns.record_schema), in
        commitlog order. With jobs > 1, `jobs` threads decode and build the batches (the kernels let the GIL
        go): each a cell of a file where the scan is segmented, else the next batches while this thread decodes;
        at most 2 x jobs cells of a file (each up to 4 MiB of records, their batches built) or, unsegmented, 2 x
        jobs batches are pending, their pages kept mapped. Damage the walk meets goes to `errors`
        when the batches before it are handed out, whatever `jobs`."""
        # start-up time: pyarrow and the kernels load with the first batch
        from .columns import ArrowDecode, record_batch
        from .kernels import available_cores
        from .ordered import ordered_map
        from .walk import ARROW_BATCH_BYTES

        # the walk fills each batch's Arrow buffers as it decodes the batch
        arrow = dict(decoder=ArrowDecode(), max_bytes=ARROW_BATCH_BYTES)
        if jobs > 1 and self.segmented:
            yield from self.chunks(start, end, check_crc, built=record_batch, jobs=jobs, **arrow)
            return

        resident = (2 * jobs + 1) * ARROW_BATCH_BYTES if jobs > 1 else 0
        # one thread walks and builds: a second core maps the pages in ahead of it and gives them back
        paging = dict(paged=True) if jobs == 1 and available_cores() > 1 else {}
        told = [len(self.errors)]  # the damage handed out so far (the walk appends past it)

        def met():  # the damage the walk told since the last chunk, held back while the walk runs ahead
            found = self.errors[told[0] :]
            del self.errors[told[0] :]
            return found

        def drawn():  # each chunk with the damage met before it; then the damage after the last one
            for chunk in self.chunks(start, end, check_crc, resident=resident, **arrow, **paging):
                yield chunk, met()
            yield None, met()

        def built(item):
            chunk, damage = item
            return None if chunk is None else record_batch(chunk), damage

        for batch, damage in ordered_map(built, drawn(), jobs):
            self.errors.extend(damage)
            told[0] = len(self.errors)
            if batch is not None:
                yield batch

    def table(self, start: int | None = None, end: int | None = None, check_crc: bool = False, jobs: int = 1):
        """The records of [start, end) as one pyarrow Table (`jobs` as for batches)."""
        # start-up time: pyarrow and the kernels load with the first table
        import pyarrow as pa
        from .columns import record_schema

        return pa.Table.from_batches(
            list(self.batches(start, end, check_crc, jobs)), record_schema(self.dledger_entries)
        )
