"""The Arrow views every commitlog scan offers on top of its `chunks()` (the plain commitlog's and the DLedger
data files'): RecordBatches and a Table. pyarrow and the compiled kernels load only when one is asked for."""

from __future__ import annotations


class ColumnViews:
    """Mixed into a scan with `chunks(start, end, check_crc)` (batches of engine.walk.Chunk)."""

    dledger_entries = False  # the rows carry their DLedger entry (a `dledger` column)

    def batches(self, start: int | None = None, end: int | None = None, check_crc: bool = False):
        """The records of [start, end) as pyarrow RecordBatches (rmqctl.engine.columns.record_schema)."""
        from .columns import record_batch  # start-up time: pyarrow and the kernels load with the first batch

        for chunk in self.chunks(start, end, check_crc):
            yield record_batch(chunk)

    def table(self, start: int | None = None, end: int | None = None, check_crc: bool = False):
        """The records of [start, end) as one pyarrow Table."""
        # start-up time: pyarrow and the kernels load with the first table
        import pyarrow as pa
        from .columns import record_schema

        return pa.Table.from_batches(list(self.batches(start, end, check_crc)), record_schema(self.dledger_entries))
