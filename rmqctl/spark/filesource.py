"""One Spark data source over store files, driven by a declaration per source (FileSource): its name, its columns,
how the driver lists its partitions and how an executor reads one. `data_source` makes the DataSource class Spark
registers; every source shares the reader, so planning, the empty plan and pushed filters work one way for all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import DataType

from .columns import arrow_schema, struct


class FilePart(InputPartition):
    """What one task reads (a file, a queue, a group of queues): `key` names it to Spark, `fields` are what the
    source's read takes, as attributes."""

    def __init__(self, key, **fields):
        super().__init__(key)
        self.__dict__.update(fields)


@dataclass(frozen=True)
class FileSource:
    """A data source's declaration. `loads`: what its load() takes; `rows`: what a row is (said in its `about`);
    `columns`: its (name, Spark type) columns, or a function of the options that gives them; `plan(reader)`: its
    partitions (on the driver); `read(reader, part)`: one partition's Arrow batches (on an executor). The reader
    holds `options`, the Arrow `schema` Spark asked for and, with `pushdown` (a class whose `take(filter)` keeps a
    filter it applies exactly), `pushed`."""

    name: str
    loads: str
    rows: str
    columns: list[tuple[str, DataType]] | Callable[[dict], list[tuple[str, DataType]]]
    plan: Callable[[FileReader], list[FilePart]]
    read: Callable[[FileReader, FilePart], Iterator[pa.RecordBatch]]
    pushdown: type | None = None

    @property
    def about(self) -> str:
        """How the source is loaded, and what a row is (its DataSource's docstring)."""
        return f'spark.read.format("{self.name}").load({self.loads})' + (f": {self.rows}." if self.rows else "")


class FileReader(DataSourceReader):
    def __init__(self, source: FileSource, options, schema):
        self.source = source
        self.options = options
        self.schema = arrow_schema(schema)

    def partitions(self):
        return self.source.plan(self)

    def read(self, partition):
        if not isinstance(partition, FilePart):
            return  # nothing planned: Spark still reads one default partition
        yield from self.source.read(self, partition)


class PushingFileReader(FileReader):
    """A reader that takes pushed filters (a separate class: Spark refuses a reader with pushFilters while
    pushdown is switched off)."""

    def __init__(self, source: FileSource, options, schema):
        super().__init__(source, options, schema)
        self.pushed = source.pushdown()

    def pushFilters(self, filters):
        return [f for f in filters if not self.pushed.take(f)]


class FileDataSource(DataSource):
    """The DataSource of one FileSource (`declared`, set by data_source)."""

    declared: FileSource

    @classmethod
    def name(cls):
        return cls.declared.name

    def schema(self):
        columns = self.declared.columns
        return struct(columns(self.options) if callable(columns) else columns)

    def reader(self, schema):
        reader = PushingFileReader if self.declared.pushdown is not None else FileReader
        return reader(self.declared, self.options, schema)


def data_source(source: FileSource) -> type[DataSource]:
    """The DataSource class Spark registers for `source`."""
    return type(f"FileDataSource[{source.name}]", (FileDataSource,), {"declared": source, "__doc__": source.about})
