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

from .. import schema as S
from ..store import MappedFile
from ..timerstore import TimerFiles, TimerLog, delayed_ms, slot_index
from .columns import INT, LONG, STRING
from .filesource import FilePart, FileReader, FileSource
from .inputs import inputs_from_options

TIMERLOG_COLUMNS = [
    ("store", STRING), ("file", STRING), ("position", INT), ("pos", LONG), ("prevPos", LONG), ("magic", INT),
    ("currWriteTimeMs", LONG), ("delayedTimeOffsetMs", INT), ("delayedTimeMs", LONG), ("offsetPy", LONG),
    ("sizePy", INT), ("realTopicHash", INT), ("slotIndex", INT),
]  # fmt: skip


def plan(reader: FileReader) -> list[FilePart]:
    """One partition per timerlog file of every store."""
    parts = []
    for inp in inputs_from_options(reader.options):
        timer = TimerFiles(inp.store())
        if timer.timerlog is not None:
            parts += [
                FilePart(
                    (inp.root, f.path.name),
                    root=inp.root,
                    path=str(f.path),
                    file_size=timer.timerlog.file_size,
                    precision=timer.precision,
                )
                for f in timer.timerlog.files
            ]
    return parts


def read(reader: FileReader, part: FilePart):
    """The units of one timerlog file, up to its BLANK or the first bytes that are not a unit, as one batch."""
    path = Path(part.path)
    log = TimerLog(path.parent, part.file_size)
    f = MappedFile(path, int(path.name))
    units = log.read_file(f).units
    n = len(units)
    if not n:
        return
    position = np.arange(n, dtype=np.int64) * S.TIMERLOG_UNIT_SIZE
    due = delayed_ms(units)
    columns = {
        "store": pa.array([part.root] * n, pa.string()),
        "file": pa.array([f.name] * n, pa.string()),
        "position": pa.array(position.astype(np.int32)),
        "pos": pa.array(f.start + position),
        "delayedTimeMs": pa.array(due),
        "slotIndex": pa.array(slot_index(due, part.precision).astype(np.int32)),
    }
    for name, kind in (
        ("prevPos", np.int64),
        ("magic", np.int32),
        ("currWriteTimeMs", np.int64),
        ("delayedTimeOffsetMs", np.int32),
        ("offsetPy", np.int64),
        ("sizePy", np.int32),
        ("realTopicHash", np.int32),
    ):
        columns[name] = pa.array(units[name].astype(kind))
    yield pa.RecordBatch.from_arrays([columns[c.name] for c in reader.schema], schema=reader.schema)


TIMERLOG = FileSource("rocketmq-timerlog", "store_root", "every timerlog unit", TIMERLOG_COLUMNS, plan, read)
