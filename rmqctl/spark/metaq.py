"""The `metaq` PySpark data source: the records of MetaQ (Metamorphosis) data paths as rows, the sibling of
`rocketmq`. The driver lists partitions and segments with the broker's loader rules (rmqctl.metaq.store); each
input partition is one segment file, walked on an executor with the broker's record check and decoded as
MessageUtils.decodeMessage decodes it.

    spark.read.format("metaq").load(["/data/a/meta", "/data/b/meta"])

Options: `path` or several paths (data paths), `failOnDamage` (a record the broker's check refuses, or data
that does not decode, fails the task instead of ending that segment with a warning, as `metaq dump` does).
"""

from __future__ import annotations

import logging
from pathlib import Path

import pyarrow as pa
from pyspark.sql.types import BinaryType

from ..errors import StoreError
from ..metaq.store import DecodeError, MetaqStore, Segment, SegmentScan, attribute_text, decode_data
from .columns import INT, LONG, STRING
from .filesource import FilePart, FileReader, FileSource
from .inputs import option_bool, option_list

BATCH_ROWS = 4096  # records per Arrow batch a task yields

log = logging.getLogger("rmqctl.spark")

# `metaq dump`'s fields (without the rendered payload), then the payload bytes.
METAQ_COLUMNS = [
    ("store", STRING), ("topic", STRING), ("partition", INT), ("offset", LONG), ("segment", STRING),
    ("segmentPosition", INT), ("msgLen", INT), ("checksum", INT), ("id", LONG), ("flag", INT), ("attribute", STRING),
    ("payload", BinaryType()),
]  # fmt: skip


def plan(reader: FileReader) -> list[FilePart]:
    """One partition per segment file of every data path's partitions."""
    parts = []
    for root in option_list(reader.options, "path", "paths"):
        store = MetaqStore(root)
        resolved = str(store.root.resolve())
        for p in store.partitions():
            parts += [
                FilePart(
                    (resolved, str(s.path)),
                    root=resolved,
                    topic=p.topic,
                    number=p.partition,
                    path=str(s.path),
                    start=s.start,
                    size=s.size,
                )
                for s in p.segments
            ]
    return parts


def read(reader: FileReader, part: FilePart):
    """One segment's records, walked with the broker's check, in batches of BATCH_ROWS."""
    schema, fail_on_damage = reader.schema, option_bool(reader.options, "failOnDamage")
    seg = Segment(Path(part.path), part.start, part.size)
    rel = f"{seg.path.parent.name}/{seg.path.name}"
    columns: dict[str, list] = {f.name: [] for f in schema}
    scan = SegmentScan(seg.read(), seg.size)

    def damage(offset: int, what: str):
        if fail_on_damage:
            raise StoreError(what, seg.path, offset)
        log.warning("rmqctl: %s at offset %d: %s", seg.path, offset, what)

    for rec in scan:
        try:
            attr, payload = decode_data(rec.msgLen, rec.flag, rec.data)
        except DecodeError as e:
            damage(seg.start + rec.position, str(e))
            continue
        for name, value in (
            ("store", part.root),
            ("topic", part.topic),
            ("partition", part.number),
            ("offset", seg.start + rec.position),
            ("segment", rel),
            ("segmentPosition", rec.position),
            ("msgLen", rec.msgLen),
            ("checksum", rec.checksum),
            ("id", rec.id),
            ("flag", rec.flag),
            ("attribute", None if attr is None else attribute_text(attr)),
            ("payload", payload),
        ):
            columns[name].append(value)
        if len(columns["offset"]) >= BATCH_ROWS:
            yield _batch(columns, schema)
    if columns["offset"]:
        yield _batch(columns, schema)
    if scan.stop is not None:
        damage(seg.start + scan.stop.position, f"{scan.stop.problem}: {scan.stop.detail}; rest of the segment skipped")


def _batch(columns: dict[str, list], schema: pa.Schema) -> pa.RecordBatch:
    arrays = [pa.array(columns[f.name], f.type) for f in schema]
    for values in columns.values():
        values.clear()
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


METAQ = FileSource("metaq", "data_path | [data paths...]", "every record of every segment", METAQ_COLUMNS, plan, read)
