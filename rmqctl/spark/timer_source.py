"""`rocketmq-timerlog`: the 5.x timerlog units as rows, one partition per timerlog file, read on an executor
through `rmqctl.timerstore` (the broker's recovery walk: each file's units up to its BLANK or the first bytes
that are not a unit). Units are not resolved here: join on `offsetPy` = `commitLogOffset` with the `rocketmq`
source for their records.

Options: `path` or several paths (store roots), `brokerConfig` (mappedFileSizeTimerLog, timerPrecisionMs).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from .. import schema as S
from ..store import MappedFile
from ..timerstore import TimerFiles, TimerLog, delayed_ms, slot_index
from .columns import INT, LONG, STRING, arrow_schema, struct
from .inputs import inputs_from_options

TIMERLOG_COLUMNS = [
    ("store", STRING), ("file", STRING), ("position", INT), ("pos", LONG), ("prevPos", LONG), ("magic", INT),
    ("currWriteTimeMs", LONG), ("delayedTimeOffsetMs", INT), ("delayedTimeMs", LONG), ("offsetPy", LONG),
    ("sizePy", INT), ("realTopicHash", INT), ("slotIndex", INT),
]  # fmt: skip


class TimerLogFilePartition(InputPartition):
    def __init__(self, root: str, path: str, file_size: int, precision: int):
        super().__init__((root, Path(path).name))
        self.root = root
        self.path = path
        self.file_size = file_size
        self.precision = precision


class TimerLogReader(DataSourceReader):
    def __init__(self, options, schema):
        self.inputs = inputs_from_options(options)
        self.schema = arrow_schema(schema)

    def partitions(self):
        parts = []
        for inp in self.inputs:
            timer = TimerFiles(inp.store())
            if timer.timerlog is not None:
                parts += [TimerLogFilePartition(inp.root, str(f.path), timer.timerlog.file_size, timer.precision)
                          for f in timer.timerlog.files]
        return parts

    def read(self, partition: TimerLogFilePartition):
        if not isinstance(partition, TimerLogFilePartition):
            return  # no timerlog files: Spark still reads one default partition
        path = Path(partition.path)
        log = TimerLog(path.parent, partition.file_size)
        f = MappedFile(path, int(path.name))
        units = log.read_file(f).units
        n = len(units)
        if not n:
            return
        position = np.arange(n, dtype=np.int64) * S.TIMERLOG_UNIT_SIZE
        due = delayed_ms(units)
        columns = {
            "store": pa.array([partition.root] * n, pa.string()),
            "file": pa.array([f.name] * n, pa.string()),
            "position": pa.array(position.astype(np.int32)),
            "pos": pa.array(f.start + position),
            "delayedTimeMs": pa.array(due),
            "slotIndex": pa.array(slot_index(due, partition.precision).astype(np.int32)),
        }
        for name, kind in (("prevPos", np.int64), ("magic", np.int32), ("currWriteTimeMs", np.int64),
                           ("delayedTimeOffsetMs", np.int32), ("offsetPy", np.int64), ("sizePy", np.int32),
                           ("realTopicHash", np.int32)):
            columns[name] = pa.array(units[name].astype(kind))
        yield pa.RecordBatch.from_arrays([columns[c.name] for c in self.schema], schema=self.schema)


class TimerLogDataSource(DataSource):
    """spark.read.format("rocketmq-timerlog").load(store_root): every timerlog unit."""

    @classmethod
    def name(cls):
        return "rocketmq-timerlog"

    def schema(self):
        return struct(TIMERLOG_COLUMNS)

    def reader(self, schema):
        return TimerLogReader(self.options, schema)
