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
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from .. import schema as S
from ..batchcq import BatchConsumeQueue, batch_consume_queues
from .columns import INT, LONG, STRING, arrow_schema, struct
from .inputs import inputs_from_options

BATCHCQ_COLUMNS = [
    ("store", STRING), ("topic", STRING), ("queueId", INT), ("file", STRING), ("position", INT),
    ("commitLogOffset", LONG), ("size", INT), ("tagsCode", LONG), ("storeTime", LONG), ("msgBaseOffset", LONG),
    ("batchSize", INT), ("compactedOffset", INT),
]  # fmt: skip


class BatchQueuePartition(InputPartition):
    def __init__(self, root: str, topic: str, queue_id: int, directory: str, file_size: int):
        super().__init__((root, topic, queue_id))
        self.root, self.topic, self.queue_id, self.directory, self.file_size = root, topic, queue_id, directory, file_size


class BatchConsumeQueueReader(DataSourceReader):
    def __init__(self, options, schema):
        self.inputs = inputs_from_options(options)
        self.schema = arrow_schema(schema)

    def partitions(self):
        return [BatchQueuePartition(inp.root, q.topic, q.queue_id, str(q.directory), q.files.file_size)
                for inp in self.inputs for q in batch_consume_queues(inp.store())]

    def read(self, partition: BatchQueuePartition):
        if not isinstance(partition, BatchQueuePartition):
            return  # no BatchCQ queue: Spark still reads one default partition
        q = BatchConsumeQueue(partition.topic, partition.queue_id, Path(partition.directory), partition.file_size)
        for f, written, arr in q.units():
            if written:
                units = arr[:written]
                columns = {
                    "store": pa.array([partition.root] * written, pa.string()),
                    "topic": pa.array([q.topic] * written, pa.string()),
                    "queueId": pa.array(np.full(written, q.queue_id, dtype=np.int32)),
                    "file": pa.array([f.name] * written, pa.string()),
                    "position": pa.array((np.arange(written) * S.BCQ_UNIT_SIZE).astype(np.int32)),
                }
                for field in self.schema:
                    if field.name in S.BCQ_DTYPE.names:
                        columns[field.name] = pa.array(units[field.name].astype(np.int64)).cast(field.type)
                yield pa.RecordBatch.from_arrays([columns[c.name] for c in self.schema], schema=self.schema)
                del units, columns
            f.release()  # one file of the queue mapped at a time


class BatchConsumeQueueDataSource(DataSource):
    """spark.read.format("rocketmq-batchconsumequeue").load(store_root): every BatchConsumeQueue unit."""

    @classmethod
    def name(cls):
        return "rocketmq-batchconsumequeue"

    def schema(self):
        return struct(BATCHCQ_COLUMNS)

    def reader(self, schema):
        return BatchConsumeQueueReader(self.options, schema)
