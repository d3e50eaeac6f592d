"""`rocketmq-batchconsumequeue`: the units of 5.x BatchCQ topics' queues (`batchconsumequeue/`) as rows, one
partition per queue, read on an executor through `rmqctl.batchcq` (each file's units up to the first one
BatchConsumeQueue.recover does not take). A unit covers the queue offsets msgBaseOffset ..
msgBaseOffset + batchSize - 1; join on `commitLogOffset` with the `rocketmq` source for its record.

Options: `path` or several paths (store roots), `brokerConfig` (mapperFileSizeBatchConsumeQueue).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from .. import schema as S
from ..batchcq import BatchConsumeQueue, batch_consume_queues
from .columns import INT, LONG, STRING
from .filesource import FilePart, FileReader, FileSource
from .inputs import inputs_from_options

BATCHCQ_COLUMNS = [
    ("store", STRING), ("topic", STRING), ("queueId", INT), ("file", STRING), ("position", INT),
    ("commitLogOffset", LONG), ("size", INT), ("tagsCode", LONG), ("storeTime", LONG), ("msgBaseOffset", LONG),
    ("batchSize", INT), ("compactedOffset", INT),
]  # fmt: skip


def plan(reader: FileReader) -> list[FilePart]:
    """One partition per BatchCQ queue of every store."""
    return [
        FilePart(
            (inp.root, q.topic, q.queue_id),
            root=inp.root,
            topic=q.topic,
            queue_id=q.queue_id,
            directory=str(q.directory),
            file_size=q.files.file_size,
        )
        for inp in inputs_from_options(reader.options)
        for q in batch_consume_queues(inp.store())
    ]


def read(reader: FileReader, part: FilePart):
    """The units of one queue, a batch per file, one file mapped at a time."""
    schema = reader.schema
    q = BatchConsumeQueue(part.topic, part.queue_id, Path(part.directory), part.file_size)
    for f, written, arr in q.units():
        if written:
            units = arr[:written]
            columns = {
                "store": pa.array([part.root] * written, pa.string()),
                "topic": pa.array([q.topic] * written, pa.string()),
                "queueId": pa.array(np.full(written, q.queue_id, dtype=np.int32)),
                "file": pa.array([f.name] * written, pa.string()),
                "position": pa.array((np.arange(written) * S.BCQ_UNIT_SIZE).astype(np.int32)),
            }
            for field in schema:
                if field.name in S.BCQ_DTYPE.names:
                    columns[field.name] = pa.array(units[field.name].astype(np.int64)).cast(field.type)
            yield pa.RecordBatch.from_arrays([columns[c.name] for c in schema], schema=schema)
            del units, columns
        f.release()


BATCHCQ = FileSource(
    "rocketmq-batchconsumequeue", "store_root", "every BatchConsumeQueue unit", BATCHCQ_COLUMNS, plan, read
)
