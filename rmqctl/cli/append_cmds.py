"""`append`: one message from options, or many as JSON Lines in the `dump commitlog` shape."""

from __future__ import annotations

import collections
import concurrent.futures
import fcntl
import io
import json
import os
import select
import stat
import sys
from pathlib import Path

import click
import orjson

from typing import TYPE_CHECKING

from ..budget import block_sigint_here
from ..errors import UsageError
from ..javacompat import decode_utf8
from ..record import decode_body
from .app import cli
from .options import FILE_OR_STDIN, parse_int, store_options, wait_option
from .render import echo_err, note_live_dry_run, prepare_kernels

if TYPE_CHECKING:
    from ..maintenance.append import Appender, NewMessage

# acknowledgements wait for a durable batch; a batch ends when input pauses or at these sizes
BATCH_MESSAGES = 8192
BATCH_BYTES = 8 << 20
READ_CHUNK = BATCH_BYTES
# threads parsing the blocks after the one being written, each its own block: they keep parsing while the writer
# waits for a core (on a busy machine a single parser was the one the writer waited for), and the work is theirs
PARSERS = 2
PIPE_ROOM = 1 << 20  # Linux's default /proc/sys/fs/pipe-max-size
INPUT_STOPPED = None  # what _blocks yields before a read that may block: the caller commits what it holds
MESSAGE_OPTIONS = (
    "topic",
    "queue_id",
    "tags",
    "keys",
    "properties",
    "body",
    "body_file",
    "flag",
    "sys_flag",
    "born_host",
    "store_host",
    "born_timestamp",
    "store_timestamp",
    "reconsume_times",
    "prepared_transaction_offset",
    "delay_level",
)


@cli.command("append")
@store_options(writes=True)
@wait_option
@click.option(
    "--jsonl",
    "jsonl_path",
    type=FILE_OR_STDIN,
    help="Append every line of this file ('-' = stdin), objects in the `dump commitlog --format jsonl` shape.",
)
@click.option(
    "--parquet",
    "parquet_path",
    type=click.Path(exists=True),
    help="Append every row of this Parquet file (or directory of them, in name order): what `spark export` "
    "or Store.scan().table() wrote.",
)
@click.option(
    "--keep-timestamps", is_flag=True, help="Keep each line's storeTimestamp (copies) instead of the time of append."
)
@click.option("--topic", help="Topic of the one message to append.")
@click.option("--queue-id", type=int, default=0, show_default=True, help="Queue id.")
@click.option("--tags", help="TAGS property.")
@click.option("--keys", help="KEYS property (space-separated keys, each indexed).")
@click.option("--property", "properties", multiple=True, metavar="NAME=VALUE", help="A property; repeatable.")
@click.option("--body", help="Body text (stored as UTF-8).")
@click.option("--body-file", type=FILE_OR_STDIN, help="Body bytes from this file ('-' = stdin).")
@click.option("--flag", type=int, default=0, show_default=True, help="The producer's FLAG field.")
@click.option(
    "--sys-flag", default="0", show_default=True, help="SYSFLAG (e.g. 0x4 PREPARED, 0x8 COMMIT, 0xC ROLLBACK)."
)
@click.option("--born-host", help="Producer address ip:port ([v6]:port); default: the store host.")
@click.option(
    "--store-host", help="Broker address ip:port; default brokerIP1:listenPort, else the store's last record's."
)
@click.option("--born-timestamp", type=int, help="Producer time (epoch ms); default now.")
@click.option("--store-timestamp", type=int, help="Store time (epoch ms); default now, the time of append.")
@click.option("--reconsume-times", type=int, default=0, show_default=True, help="RECONSUMETIMES field.")
@click.option(
    "--prepared-transaction-offset",
    type=int,
    default=0,
    show_default=True,
    help="Commitlog offset of the half message a COMMIT/ROLLBACK record ends.",
)
@click.option(
    "--delay-level",
    type=int,
    help="Apply the store's delay rewrite: SCHEDULE_TOPIC_XXXX, queue level-1, REAL_TOPIC/REAL_QID.",
)
@click.option("--dry-run", is_flag=True, help="Print where each message would go; write nothing.")
@click.option(
    "--create",
    is_flag=True,
    help="Make --store a new store if it is not one yet (needed unless it is an existing empty directory).",
)
def append(ctx, jsonl_path, parquet_path, keep_timestamps, dry_run, create, **opts):
    """Append messages exactly as the broker's CommitLog would, then dispatch them to the consumequeue and
    index and update the checkpoint. Takes the broker's lock; a line is printed per message
    (commitLogOffset, queueOffset, msgId, file, position) only once it is durable (after fsync).

    One message from options (--topic ...), or many with --jsonl: `rmqctl dump commitlog --format jsonl
    --body base64 --raw-properties | rmqctl append --jsonl - --keep-timestamps` copies a store's messages;
    --parquet reads what `spark export` wrote (its stored properties bytes, body and fields) the same way.
    Lines and rows are copies: their topics are held to what the store accepts, while --topic meets TopicValidator.
    The acknowledgements are JSON lines whatever --format says: they stream as messages become durable.

    \b
    rmqctl append --store /data/store --broker-config broker.conf --topic TopicTest --body 'hello' --keys ORDER-1
    rmqctl append --store /data/store --broker-config broker.conf --jsonl messages.jsonl
    """
    given = [name for name in MESSAGE_OPTIONS if opts.get(name) not in (None, (), 0, "0")]
    many = "--jsonl" if jsonl_path is not None else "--parquet" if parquet_path is not None else None
    if jsonl_path is not None and parquet_path is not None:
        raise UsageError("give --jsonl or --parquet, not both")
    if many and given:
        raise UsageError(f"{many} takes every field from its input; drop --{given[0].replace('_', '-')}")
    if many is None and not opts["topic"]:
        raise UsageError("give --topic (one message), or --jsonl FILE or --parquet FILE (many)")
    if opts["body"] is not None and opts["body_file"] is not None:
        raise UsageError("give --body or --body-file, not both")
    ctx.require_explicit_store()
    # the first rows are read while the store opens and the kernels load (nothing is written before open())
    rows = ReadAhead(_parquet_batches(parquet_files(Path(parquet_path)), keep_timestamps)) if parquet_path else None
    try:
        _append_many(ctx, jsonl_path, rows, keep_timestamps, dry_run, create, opts)
    finally:
        if rows is not None:
            rows.close()


def _append_many(ctx, jsonl_path, rows: ReadAhead | None, keep_timestamps, dry_run, create, opts):
    """append's work once its options are checked: the messages of --jsonl, of `rows` (--parquet) or of the
    options, appended and acknowledged."""
    from ..maintenance.append import APPEND_KERNELS, Appender  # loads the compiled kernels: only for this command

    if not dry_run:
        prepare_kernels(*APPEND_KERNELS, what="encoder")
    # --rocketmq-version is the config's rocketmqVersion; without it, the store's records, else 4's style
    appender = Appender(
        ctx.store_dir,
        ctx.config,
        dry_run=dry_run,
        keep_index_time=keep_timestamps,
        create=create,
        jobs=1 if jsonl_path is not None else None,  # (--jsonl's parser threads have the other cores)
    )
    out = sys.stdout
    appender.open()
    try:
        if jsonl_path is not None:
            _append_lines(appender, jsonl_path, keep_timestamps, out)
        elif rows is not None:
            _append_rows(appender, rows, out)
        else:
            msg = message_from_options(opts, appender)
            appender.append(msg, producer_topic_rules=True)
            _emit(out, appender)
    finally:
        appender.close()
    if dry_run:
        echo_err("rmqctl: dry run: nothing was written")
        if ctx.store_exists():
            note_live_dry_run(ctx.store)


def message_from_options(opts: dict, appender: Appender) -> NewMessage:
    # kernels: only when appending
    from ..maintenance.append import (
        NewMessage,
        apply_delay_level,
        delay_level_of,
        delayed_as_sent,
        timer_as_sent,
        validate_producer_topic,
    )

    properties = []
    if opts["tags"]:
        properties.append(("TAGS", opts["tags"]))
    if opts["keys"]:
        properties.append(("KEYS", opts["keys"]))
    for item in opts["properties"]:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise UsageError(f"--property {item!r}: expected NAME=VALUE")
        properties.append((name, value))
    if opts["body_file"] is not None:
        body = sys.stdin.buffer.read() if opts["body_file"] == "-" else Path(opts["body_file"]).read_bytes()
    else:
        body = (opts["body"] or "").encode("utf-8")
    msg = NewMessage(
        topic=opts["topic"],
        body=body,
        queue_id=opts["queue_id"],
        flag=opts["flag"],
        sys_flag=parse_int(opts["sys_flag"], "--sys-flag"),
        born_timestamp=opts["born_timestamp"],
        born_host=opts["born_host"],
        store_host=opts["store_host"],
        store_timestamp=opts["store_timestamp"],
        reconsume_times=opts["reconsume_times"],
        prepared_transaction_offset=opts["prepared_transaction_offset"],
        properties=properties,
        broker_order=True,
    )
    validate_producer_topic(msg.topic)  # the broker checks the topic the producer sent, before a delay's rewrite
    level = opts["delay_level"] if opts["delay_level"] is not None else delay_level_of(msg)
    msg = timer_as_sent(msg, appender.config, appender.version, appender.clock(), level)
    if opts["delay_level"] is not None:
        return apply_delay_level(msg, opts["delay_level"], appender.config)
    return delayed_as_sent(msg, appender.config)


def _field(obj: dict, name: str, kind: type, default=None):
    """obj[name] when it is a `kind` (a string or an integer, never a boolean); `default` when absent or null."""
    value = obj.get(name)
    if value is None:
        return default
    if type(value) is not kind and (not isinstance(value, kind) or isinstance(value, bool)):
        raise UsageError(f"{name} must be {'a string' if kind is str else 'an integer'}, not {value!r}")
    return value


def message_from_json(obj, keep_timestamps: bool = False) -> NewMessage:
    """A `dump commitlog` line as a message: the stored fields a copy keeps (computed ones are ignored)."""
    from ..maintenance.append import NewMessage  # kernels: only when appending

    if not isinstance(obj, dict):
        raise UsageError("a line must be a JSON object")
    topic = _field(obj, "topic", str)
    if topic is None:
        raise UsageError("no topic")
    encoding = obj.get("bodyEncoding")
    if encoding == "none":
        raise UsageError("the body was dumped with --body none; dump with --body base64 to copy messages")
    try:
        body = decode_body(_field(obj, "body", str), encoding)
    except ValueError as e:
        raise UsageError(f"body: {e}") from None
    length = _field(obj, "bodyLength", int)
    if length is not None and length != len(body):
        raise UsageError(f"bodyLength is {length} but the body decodes to {len(body)} bytes")
    props_string = _field(obj, "propertiesString", str)
    props = obj.get("properties")
    if props is not None and not isinstance(props, dict):
        raise UsageError("properties must be a JSON object of strings")
    return NewMessage(
        topic=topic,
        body=body,
        queue_id=_field(obj, "queueId", int, 0),
        flag=_field(obj, "flag", int, 0),
        sys_flag=_field(obj, "sysFlag", int, 0),
        born_timestamp=_field(obj, "bornTimestamp", int),
        born_host=_field(obj, "bornHost", str),
        store_host=_field(obj, "storeHost", str),
        store_timestamp=_field(obj, "storeTimestamp", int) if keep_timestamps else None,
        reconsume_times=_field(obj, "reconsumeTimes", int, 0),
        prepared_transaction_offset=_field(obj, "preparedTransactionOffset", int, 0),
        properties=list(props.items()) if props else [],
        properties_string=props_string,
    )


def _append_lines(appender: Appender, path: str, keep_timestamps: bool, out):
    """Every line, a block at a time: a block is the whole lines at hand (at most BATCH_MESSAGES, about
    BATCH_BYTES), read column-wise by the compiled parser where it can, each other line one by one; the block
    is acknowledged once durable, and a block ends early when the input pauses (a producer waiting for its
    acknowledgements gets them at once). Threads parse the next PARSERS blocks (the parser lets the GIL go)
    while this one is written and committed, so the cores work at once; every block read is committed before
    a read the input may make wait."""
    from ..maintenance.append_batch import parsed_batches  # kernels: only when appending

    from_stdin = path == "-"
    name = "<stdin>" if from_stdin else path
    stream = sys.stdin.buffer if from_stdin else open(path, "rb")
    lineno, pending = 0, collections.deque()  # (buffer, its parsed_batches future), oldest first
    try:
        with concurrent.futures.ThreadPoolExecutor(
            PARSERS, thread_name_prefix="rmqctl-parse", initializer=block_sigint_here
        ) as parser:
            for block in _blocks(stream):
                if block is INPUT_STOPPED:  # the next read may wait for ever: acknowledge what was read first
                    while pending:
                        lineno = _append_parsed(appender, *pending.popleft(), lineno, keep_timestamps, name, out)
                    continue
                buf, lo, hi = block
                pending.append(
                    (
                        buf,
                        parser.submit(
                            parsed_batches, appender, buf, lo, hi, BATCH_MESSAGES, BATCH_BYTES, keep_timestamps
                        ),
                    )
                )
                if len(pending) > PARSERS:
                    lineno = _append_parsed(appender, *pending.popleft(), lineno, keep_timestamps, name, out)
            while pending:
                lineno = _append_parsed(appender, *pending.popleft(), lineno, keep_timestamps, name, out)
        _emit(out, appender)
    finally:
        if not from_stdin:
            stream.close()


def _append_parsed(appender: Appender, buf: bytes, parsed, lineno: int, keep_timestamps: bool, name: str, out) -> int:
    """Append a block's parsed batches (append_batch.parsed_batches, a future), committing each; the number of
    the last line read."""
    from ..maintenance.append_batch import stage_columns  # kernels: only when appending

    for steps in parsed.result():
        for step in steps:
            if step.columns is not None and not stage_columns(appender, step.columns):
                _append_one_by_one(appender, buf[step.lo : step.end], lineno, keep_timestamps, name, out)
            lineno += step.lines
            if step.left > step.end:  # a line for the per-line path
                _append_one_by_one(appender, buf[step.end : step.left], lineno, keep_timestamps, name, out)
                lineno += 1
        _emit(out, appender)
    return lineno


def _append_one_by_one(appender: Appender, text: bytes, lineno: int, keep_timestamps: bool, name: str, out):
    """The per-line path: each line of `text` (the first is line lineno + 1) read and appended on its own."""
    for lineno, line in enumerate(text.split(b"\n"), lineno + 1):
        if not line.strip():
            continue
        try:
            appender.append(message_from_json(_json_object(line), keep_timestamps), producer_topic_rules=False)
        except (UsageError, ValueError) as e:
            detail = f"not valid JSON: {e}" if isinstance(e, ValueError) and not isinstance(e, UsageError) else str(e)
            _emit(out, appender)  # everything before the bad line is durable and reported
            raise UsageError(f"line {lineno}: {detail}; nothing after it was appended", name) from None


def _json_object(line: bytes):
    """orjson, fast; json where orjson refuses what json reads (integers past 64 bits, lone surrogates), so
    such a line meets the same checks as before."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return json.loads(line)


# the columns a row is read from (a scan's or an export's)
ROW_COLUMNS = (
    "topic",
    "queueId",
    "flag",
    "sysFlag",
    "bornTimestamp",
    "bornHost",
    "storeHost",
    "storeTimestamp",
    "reconsumeTimes",
    "preparedTransactionOffset",
    "body",
    "propertiesBytes",
    "properties",
)


class ParquetUnreadable(Exception):
    """A Parquet file's read failed (pyarrow's OSError or ValueError): `error`, in `file`."""

    def __init__(self, file: Path, error: Exception):
        super().__init__(file, error)
        self.file, self.error = file, error


def parquet_files(path: Path) -> list[Path]:
    """The file, or the files under a directory in name order."""
    return sorted(p for p in path.rglob("*.parquet") if p.is_file()) if path.is_dir() else [path]


def _append_rows(appender: Appender, rows: ReadAhead, out):
    """Every row `rows` reads (_parquet_batches, read ahead), a batch of rows at a time (column-wise where
    append_batch takes them, else row by row), each batch acknowledged once durable (a group commit)."""
    from ..maintenance.append_batch import stage_columns  # kernels: only when appending

    row, current = 0, None
    try:
        for file, batch, columns, keep_timestamps in rows:
            row, current = (row, current) if file == current else (0, file)  # rows count within their file
            if columns is None or not stage_columns(appender, columns):
                _append_rows_one_by_one(appender, batch, row, keep_timestamps, file, out)
            row += batch.num_rows
            _emit(out, appender)
    except ParquetUnreadable as e:
        _emit(out, appender)
        raise UsageError(f"cannot read it as Parquet: {e.error}", e.file) from None


def _parquet_batches(files: list[Path], keep_timestamps: bool):
    """(file, batch, its columns: append_batch.arrow_columns, keep_timestamps) for each batch of rows of the
    files in order; a read that fails raises ParquetUnreadable naming its file. Arrow's own threads are not
    used: the one thread this runs on (ReadAhead) overlaps the reading with the appending, and on two cores
    Arrow's pool only takes the appender's core (and starts late: its first batch waits for the pool)."""
    import pyarrow.parquet as pq  # only for --parquet

    from ..maintenance.append_batch import PARQUET_DICTIONARIES, arrow_columns  # kernels: only when appending

    for file in files:
        try:
            meta = pq.read_metadata(file)
            names = [c for c in ROW_COLUMNS if c in meta.schema.to_arrow_schema().names and _needed(meta, c)]
            f = pq.ParquetFile(file, metadata=meta, read_dictionary=[c for c in PARQUET_DICTIONARIES if c in names])
            for batch in f.iter_batches(batch_size=_rows_per_batch(f), columns=names, use_threads=False):
                batch = _epoch_millis(batch)
                yield file, batch, arrow_columns(batch, keep_timestamps), keep_timestamps
        except (OSError, ValueError) as e:  # pyarrow's errors for a file that is not Parquet
            raise ParquetUnreadable(file, e) from None


def _needed(meta, column: str) -> bool:
    """Whether a row may be read from `column`: `properties` only where propertiesBytes may be null (the
    statistics of every row group say it holds none: message_from_row then reads the bytes alone), which spares
    reading a map column of every property of every row."""
    if column != "properties":
        return True
    leaves = [j for j in range(meta.num_columns) if meta.schema.column(j).path == "propertiesBytes"]
    if not leaves:
        return True
    for g in range(meta.num_row_groups):
        stats = meta.row_group(g).column(leaves[0]).statistics
        if stats is None or not stats.has_null_count or stats.null_count:
            return True
    return False


class ReadAhead:
    """The items of an iterator, each next one made on a thread from construction on while the caller works
    on the one before (Arrow lets the GIL go): made before the store is opened and the kernels loaded, the first
    batch is read meanwhile. An item's exception is raised where the caller takes it. close() waits for the
    read under way, then closes the iterator."""

    def __init__(self, items):
        self._items = items
        self._pool = concurrent.futures.ThreadPoolExecutor(
            1, thread_name_prefix="rmqctl-read", initializer=block_sigint_here
        )
        self._ahead = self._pool.submit(next, items, None)

    def __iter__(self):
        while (ready := self._ahead.result()) is not None:
            self._ahead = self._pool.submit(next, self._items, None)
            yield ready

    def close(self):
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._items.close()


def _rows_per_batch(f) -> int:
    """Rows of about BATCH_BYTES (by the file's own sizes), at most BATCH_MESSAGES."""
    meta = f.metadata
    size = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    return max(1, min(BATCH_MESSAGES, BATCH_BYTES * max(meta.num_rows, 1) // max(size, 1)))


def _append_rows_one_by_one(appender: Appender, batch, row: int, keep_timestamps: bool, file: Path, out):
    for row, obj in enumerate(batch.to_pylist(), row + 1):
        try:
            appender.append(message_from_row(obj, keep_timestamps), producer_topic_rules=False)
        except UsageError as e:
            _emit(out, appender)  # everything before the bad row is durable and reported
            raise UsageError(f"row {row}: {e}; nothing after it was appended", file) from None


def _epoch_millis(batch):
    """Timestamp columns (spark export's bornTimestamp, storeTimestamp) as the epoch milliseconds they hold."""
    import pyarrow as pa  # only for --parquet

    for i, field in enumerate(batch.schema):
        if pa.types.is_timestamp(field.type):
            millis = batch.column(i).cast(pa.timestamp("ms", field.type.tz)).cast(pa.int64())
            batch = batch.set_column(i, field.name, millis)
    return batch


def message_from_row(obj: dict, keep_timestamps: bool) -> NewMessage:
    """A scan's (or export's) row as the message it holds: the stored properties bytes kept as they are."""
    from ..maintenance.append import NewMessage  # kernels: only when appending

    topic = obj.get("topic")
    if not isinstance(topic, str):
        raise UsageError("no topic")
    raw = _typed(obj, "propertiesBytes", bytes, "bytes")
    props = obj.get("properties")

    def number(name: str, default):
        value = _typed(obj, name, int, "an integer")
        return default if value is None else value

    return NewMessage(
        topic=topic,
        body=_typed(obj, "body", bytes, "bytes (binary, as `spark export` writes it)") or b"",
        queue_id=number("queueId", 0),
        flag=number("flag", 0),
        sys_flag=number("sysFlag", 0),
        born_timestamp=_typed(obj, "bornTimestamp", int, "an integer"),
        born_host=_typed(obj, "bornHost", str, "text"),
        store_host=_typed(obj, "storeHost", str, "text"),
        store_timestamp=_typed(obj, "storeTimestamp", int, "an integer") if keep_timestamps else None,
        reconsume_times=number("reconsumeTimes", 0),
        prepared_transaction_offset=number("preparedTransactionOffset", 0),
        properties=list(props) if raw is None and props else [],
        properties_string=decode_utf8(raw) if raw is not None else None,
    )


def _typed(obj: dict, name: str, kind: type, what: str):
    """A row's value of `name` (None when absent), refused in one line when it is not `kind`."""
    value = obj.get(name)
    if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
        raise UsageError(f"column {name} holds {type(value).__name__} {str(value)[:40]!r}, not {what}")
    return value


def _emit(out, appender: Appender):
    """Commit (fsync) what is staged, then acknowledge each message with one JSON line."""
    out.write(appender.commit_lines())
    out.flush()
    for w in appender.warnings:
        echo_err(f"rmqctl: warning: {w}")
    appender.warnings.clear()


def _blocks(stream):
    """(buffer, lo, hi) with whole lines in buffer[lo:hi] (the last one may lack its newline at the end of input),
    as soon as input stops or about BATCH_BYTES of lines are at hand; INPUT_STOPPED before any read when no
    input is ready, so that the caller commits and acknowledges what it holds before a read that may wait for
    ever (a producer may wait for those acknowledgements before it sends more).
    Reading the descriptor directly lets a pipe's pause be seen (select)."""
    try:
        fd = stream.fileno()
    except (OSError, ValueError, AttributeError):
        fd = None
    if fd is None:
        data = stream.read()
        if data:
            yield data, 0, len(data)
        return
    _widen_pipe(fd)
    raw = io.FileIO(fd, closefd=False)  # its readinto is one read(2) into the room given
    buf, filled, eof = bytearray(READ_CHUNK), 0, False  # buf[:filled] read, not yet handed over
    while not eof:
        hi = buf.rfind(b"\n", 0, filled) + 1
        ready = bool(select.select([fd], [], [], 0)[0])
        if hi and (filled >= BATCH_BYTES or not ready):
            yield buf, 0, hi  # from here on the parser reads it: it is never written again
            rest, filled = buf[hi:filled], filled - hi
            buf = bytearray(filled + READ_CHUNK)
            buf[:filled] = rest
            continue
        if not ready:
            yield INPUT_STOPPED
        if filled == len(buf):  # a line longer than the room: twice the room
            buf += bytearray(len(buf))
        n = _read_into(raw, buf, filled)
        eof, filled = n == 0, filled + n
    if filled:
        yield buf, 0, filled


def _widen_pipe(fd: int):
    """Give a pipe the room the system allows a user (1 MiB by default, not 64 KiB): a producer scheduled
    less often than this reader (`dump | append` on a busy machine) then writes more at a time, and fewer of
    its pauses end a block early (each one a commit of its own). Nothing changes for other inputs."""
    try:
        if stat.S_ISFIFO(os.fstat(fd).st_mode) and fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ) < PIPE_ROOM:
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_ROOM)  # (only grown: a producer's larger pipe is kept)
    except (OSError, AttributeError):  # a system that refuses the size (or has no F_SETPIPE_SZ) keeps its own
        pass


def _read_into(raw: io.FileIO, buf: bytearray, at: int) -> int:
    """Read what is at hand into buf[at:] in place, so that input is copied once (a pipe's many small reads
    appended as they come, never the lines read so far again): the bytes read, 0 at the end of input."""
    with memoryview(buf) as view, view[at:] as room:
        while (n := raw.readinto(room)) is None:  # a non-blocking input (its flag is the producer's too): wait
            select.select([raw], [], [])
        return n
