"""The click plumbing every command shares: the root group, the store/config/format options, rendering of
records (table, jsonl, json, csv), and errors as one line with an exit code instead of a traceback.

Command modules in this package import `cli` (or a subgroup) from here and decorate their commands; they
only parse options, call the library, and render what it returns.
"""
from __future__ import annotations

import base64
import csv
import datetime as dt
import functools
import json
import os
import re
import shutil
import sys
import textwrap
from typing import Callable, Iterable

import click
import orjson

from .. import schema as S
from ..brokerversion import CHOICES as VERSION_CHOICES, BrokerVersion
from ..budget import DEFAULT_MEMORY, MIN_CLI_MEMORY, parse_size
from ..config import BrokerConfig, load_config
from ..errors import EXIT_INTERRUPTED, EXIT_REFUSED, RmqError, UsageError, where
from ..views.inspect import ms_text
from ..lock import waiting_for_lock
from ..store import Store

FORMATS = ("table", "jsonl", "json", "csv")
FAILED = "rmqctl.failed"  # click context meta: the command ended in an error line (no notes after it)
LONG = "long"  # --long: the table format with every record as a key: value block


class RmqGroup(click.Group):
    """A group whose commands turn library errors into `rmqctl: <file> at commitlog offset N: <what>` (or
    `position N in <file>`) + exit 2, Ctrl-C into exit 130, and
    an error of rmqctl's own into one line and exit 2 too: a crash must not read as exit 1 (findings) in
    cron. RMQCTL_DEBUG=1 shows its traceback instead."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except RmqError as e:
            ctx.meta[FAILED] = True
            click.echo(f"rmqctl: {e}", err=True)
            ctx.exit(e.exit_code)
        except KeyboardInterrupt:
            ctx.meta[FAILED] = True
            # 1 means findings; an interrupted run has none to report
            click.echo("rmqctl: interrupted", err=True)
            ctx.exit(EXIT_INTERRUPTED)
        except BrokenPipeError:
            # `rmqctl dump ... | head`: the reader left; not an error of ours
            sys.stderr.close()
            ctx.exit(0)
        except OSError as e:
            if os.environ.get("RMQCTL_DEBUG"):
                raise
            where = f"{e.filename}: " if e.filename else ""
            click.echo(f"rmqctl: {where}{e.strerror or e}", err=True)
            ctx.exit(EXIT_REFUSED)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except Exception as e:
            ctx.meta[FAILED] = True
            if os.environ.get("RMQCTL_DEBUG"):
                raise
            click.echo(f"rmqctl: internal error ({type(e).__name__}: {e}): a bug in rmqctl, not a finding about the "
                       "store; please report it with the command line (RMQCTL_DEBUG=1 shows where)", err=True)
            ctx.exit(EXIT_REFUSED)

    def group(self, *args, **kwargs):
        kwargs.setdefault("cls", RmqGroup)
        return super().group(*args, **kwargs)


@click.group(cls=RmqGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(package_name="rmqctl")
def cli():
    """Inspect, verify and repair Apache RocketMQ broker stores offline.

    Point it at a store root (--store, or ROCKETMQ_STORE, default ~/store) and, for
    exact geometry and settings, the broker's own config (--broker-config broker.conf).
    Read-only commands never modify the store; writing commands take the broker's lock.
    """


@cli.group()
def dump():
    """Decode store files: commitlog records, consumequeue units, index files, checkpoint."""


@cli.group()
def msgid():
    """Decode message ids (offset msgId and UNIQ_KEY) and look messages up by id."""


@cli.group()
def query():
    """Look messages up through the store's index files."""


@cli.group()
def rebuild():
    """Rebuild consumequeue or index files from the commitlog, byte-identical to the broker's."""


class StoreContext:
    """What the shared options resolve to: the store, its config, and the chosen output format."""

    def __init__(self, store_dir: str | None, broker_config: str | None, fmt: str | None, explicit_store: bool,
                 writes: bool = False, long: bool = False, rocketmq_version: str | None = None):
        if long and fmt not in (None, "table"):
            raise UsageError(f"--long shows records as key: value blocks; it does not go with --format {fmt}")
        self.writes = writes
        self.config: BrokerConfig = load_config(broker_config, rocketmqVersion=rocketmq_version)
        root = os.path.expanduser(store_dir or self.config.storePathRootDir or "~/store")
        if os.path.islink(root.rstrip("/") or "/"):
            # resolved once: a link re-pointed mid-run cannot move a writer to another store
            real = os.path.realpath(root)
            echo_err(f"rmqctl: note: store {root} is a symlink; using {real}")
            root = real
        self.store_dir = root
        self.explicit_store = explicit_store or bool(self.config.storePathRootDir)
        self.format = LONG if long else fmt or ("table" if sys.stdout.isatty() else "jsonl")
        self._store: Store | None = None

    @property
    def store(self) -> Store:
        """The store, and on a running broker's its snapshot, taken before anything is read (rmqctl.live)."""
        if self._store is None:
            self._store = Store(self.store_dir, self.config)
            self._store.live  # noqa: B018 (taking it is the point: every later read is judged against it)
            click_ctx = click.get_current_context(silent=True)
            if click_ctx is not None and not self.writes:
                root = click_ctx.find_root()
                root.call_on_close(lambda: self._name_unread_parts(root.meta))
        return self._store

    def _name_unread_parts(self, meta: dict):
        """After a read command's output, one line per part of the store it did not read (a writer refuses
        such a store instead, in its one error line; a failed command's error line stays the last)."""
        if meta.get(FAILED):
            return
        for part in self._store.parts.unread_named:
            echo_err(f"rmqctl: note: {part.line()}")

    def report_moved(self):
        """What moved under a read of a running broker's store (files it deleted, a tail being written)."""
        # only a snapshot already taken: taking one now (in a finally) could raise over the command's own error
        live = self._store.__dict__.get("live") if self._store is not None else None
        echo_moved(live.moved if live is not None else [])

    def store_exists(self) -> bool:
        """A store root is there (a dry run of `append --create` may name one that is not)."""
        return os.path.isdir(os.path.join(self.store_dir, "commitlog")) or self._store is not None

    def version(self, quiet: bool = False) -> BrokerVersion:
        """The store's broker version, for a command whose answer depends on it; one stderr line when assumed
        (none when `quiet`)."""
        version = self.store.version
        if version.assumed and not quiet:
            echo_err(f"rmqctl: {version.note()}")
        return version

    def writable_store(self) -> Store:
        """The store a writer opens: no snapshot (it reads the store once it holds the lock, in
        maintenance.staging.writing)."""
        self.require_explicit_store()
        if self._store is None:
            self._store = Store(self.store_dir, self.config)
        return self._store

    def require_explicit_store(self):
        """Writing commands refuse to guess the store: --store, ROCKETMQ_STORE or storePathRootDir only."""
        if not self.explicit_store:
            raise UsageError("this command writes: name the store with --store or ROCKETMQ_STORE")


def echo_moved(moved: list):
    """One line per (file, position, what) that moved under a read of a running broker's store."""
    for f, pos, what in moved:
        path = getattr(f, "path", f)  # a mapped file, or the path of a file deleted before it was mapped
        echo_err(f"rmqctl: live: {where(path, position=pos) if pos else path}: {what}")


def store_options(fn: Callable | None = None, *, writes: bool = False) -> Callable:
    """--store, --broker-config and --format, accepted after every command's name. `writes`: a writing
    command (it refuses a store holding a part not read, rather than naming that part after its output)."""
    if fn is None:
        return functools.partial(store_options, writes=writes)

    @click.option("--store", "store_dir", envvar="ROCKETMQ_STORE", type=click.Path(file_okay=False),
                  help="Store root (storePathRootDir). Env ROCKETMQ_STORE; default ~/store.")
    @click.option("--broker-config", type=click.Path(dir_okay=False),
                  help="broker.conf to read geometry and settings from (key=value lines).")
    @click.option("--format", "fmt", type=click.Choice(FORMATS),
                  help="Output format: table (one line per record) on a terminal, jsonl otherwise.")
    @click.option("--long", "-l", "long", is_flag=True,
                  help="Each record as a block of key: value lines with every field, instead of one line.")
    @click.option("--rocketmq-version", type=click.Choice(VERSION_CHOICES),
                  help="The rules of the broker that owns the store, where they differ: 4 (4.9), 5 (5.x) or 5.5 "
                       "(5.5.0's recovery). Default: what the store's files tell (see `info`).")
    @functools.wraps(fn)
    def wrapper(store_dir, broker_config, fmt, long, rocketmq_version, **kwargs):
        explicit = store_dir is not None
        ctx = StoreContext(store_dir, broker_config, fmt, explicit, writes, long, rocketmq_version)
        try:
            return fn(ctx, **kwargs)
        finally:
            ctx.report_moved()

    return wrapper


def _json_default(o):
    if isinstance(o, (bytes, bytearray, memoryview)):
        return bytes(o).hex()
    if hasattr(o, "item"):  # numpy scalars
        return o.item()
    raise TypeError(f"cannot serialise {type(o).__name__}")


def dumps(obj) -> str:
    """Compact JSON, UTF-8 text as is. orjson: JSON encoding was most of dump's time per record."""
    return orjson.dumps(obj, default=_json_default, option=orjson.OPT_NON_STR_KEYS).decode()


def render(rows: Iterable[dict], fmt: str, columns: list[str] | None = None, title: str | None = None,
           out=None, blocks: bool = False) -> int:
    """Write records to stdout in the chosen format; returns how many. jsonl streams, so a pipe sees each
    record as soon as it is decoded; the others collect first. A table is one line per record (`columns`, or
    for messages the fields that identify one), values never cut; `blocks` (a command that answers with
    one record: a message, a location, the checkpoint) and --long show each record as `key: value` lines."""
    out = out or sys.stdout
    n = 0
    if fmt == "jsonl":
        for r in rows:
            out.write(dumps(r) + "\n")
            n += 1
        out.flush()
        return n
    rows = list(rows)
    if fmt == "json":
        out.write(json.dumps(rows, ensure_ascii=False, indent=2, default=_json_default) + "\n")
        return len(rows)
    if fmt == "csv":
        cols = columns or _columns(rows)
        w = csv.writer(out)
        w.writerow(cols)
        for r in rows:
            w.writerow([_cell(r.get(c)) for c in cols])
        return len(rows)
    if not rows:  # no lone header: the command says on stderr why there is nothing
        return 0
    if blocks or fmt == LONG:
        _blocks(rows, out, columns=None if fmt == LONG else columns)
    elif _is_message(rows[0]):
        lines = [message_line(r) for r in rows]
        _lines(lines, list(lines[0]), title, out)
    else:
        _lines(rows, columns or _columns(rows), title, out)
    return len(rows)


def echo_lines(lines: list[str], indent: int = 0):
    """Plain lines to stdout; on a terminal each is folded at word boundaries to its width (continuations
    indented), so the terminal never breaks a number or a name in two."""
    if not _is_terminal(sys.stdout):
        click.echo("\n".join(lines))
        return
    width = shutil.get_terminal_size().columns
    for line in lines:
        click.echo(textwrap.fill(line, width, subsequent_indent=" " * indent, break_long_words=False,
                                 break_on_hyphens=False))


def _is_terminal(out) -> bool:
    return bool(getattr(out, "isatty", None) and out.isatty())


def _lines(rows: list[dict], cols: list[str], title: str | None, out):
    """One line per record under a header line, columns two spaces apart, numbers right-aligned, an empty
    value shown as `-`: never cut and never folded (a line wider than the terminal wraps there, `less -S`
    scrolls it), so `awk '{print $3}'` and `sort -k` see one field per column."""
    # rich's cell widths count wide characters (CJK, emoji) as the terminal draws them; loaded only here
    from rich.cells import cell_len

    cells = [[_line_cell(r.get(c)) for c in cols] for r in rows]
    numeric = [any(r.get(c) is not None for r in rows) and all(
        isinstance(r.get(c), (int, float)) and not isinstance(r.get(c), bool) for r in rows if r.get(c) is not None)
        for c in cols]
    widths = [max([cell_len(c)] + [cell_len(row[i]) for row in cells]) for i, c in enumerate(cols)]

    def line(values):
        padded = [" " * (w - cell_len(v)) + v if right else v + " " * (w - cell_len(v))
                  for v, w, right in zip(values, widths, numeric)]
        return "  ".join(padded).rstrip()

    if title:
        out.write(title + "\n")
    out.write(line(cols) + "\n")
    for row in cells:
        out.write(line(row) + "\n")
    out.flush()


def _line_cell(v) -> str:
    """A value on one line: `-` for none, line breaks and tabs written as escapes."""
    text = _cell(v)
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t") if text else "-"


def _is_message(r: dict) -> bool:
    return "properties" in r and "bodyEncoding" in r


def message_line(r: dict) -> dict:
    """A message's line: where it is, when it was stored, its queue, and what finds it (tags, keys, ids);
    the body and the other fields are in `--long`'s block."""
    props = r.get("properties") or {}
    return {"commitLogOffset": r.get("commitLogOffset"), "storeTime": ms_text(r["storeTimestamp"])
            if isinstance(r.get("storeTimestamp"), int) else None, "topic": r.get("topic"), "queueId": r.get("queueId"),
            "queueOffset": r.get("queueOffset"), "storeSize": r.get("storeSize"), "tags": props.get("TAGS"),
            "keys": props.get("KEYS"), "msgId": r.get("msgId"), "uniqKey": r.get("uniqKey")}


def _blocks(rows: list[dict], out, columns: list[str] | None = None):
    """Each record as `key: value` lines, a blank line between records. A message's properties come one per
    line and its body as text when it is UTF-8, else as a short hex/ASCII preview with its length. On a
    terminal, long values fold at word boundaries under their column; a value with no space is shown whole."""
    width = shutil.get_terminal_size().columns if _is_terminal(out) else None
    for n, r in enumerate(rows):
        if n:
            out.write("\n")
        message = _is_message(r)
        keys = [k for k in MESSAGE_FIRST if k in r] + [k for k in r if k not in MESSAGE_FIRST] if message \
            else [k for k in (columns or r) if k in r]
        pad = max((len(k) for k in keys), default=0) + 2

        def line(text, indent):
            out.write((_fold(text, width, indent) if width else text) + "\n")

        for k in keys:
            v = r[k]
            if message and k == "properties" and isinstance(v, dict):
                line("properties:", 0)
                for name, value in v.items():
                    line(f"  {name} = {value}", 4)
            elif message and k == "body":
                head, text = _body_block(r)
                line(f"{'body:':<{pad}}{head}", pad)
                for body_line in text:
                    out.write((_fold(body_line, width, 2, hard=True) if width else body_line) + "\n")
            elif message and k == "magicCode" and isinstance(v, int):
                line(f"{k + ':':<{pad}}0x{v & 0xFFFFFFFF:08x} ({S.MAGIC_NAMES.get(v, 'unknown')})", pad)
            elif message and k.endswith("Timestamp") and isinstance(v, int):
                line(f"{k + ':':<{pad}}{v} ({ms_text(v)})", pad)
            elif not (message and k == "bodyEncoding"):
                line(f"{k + ':':<{pad}}{_cell(v)}", pad)
    out.flush()


def _fold(text: str, width: int, indent: int, hard: bool = False) -> str:
    """Fold at spaces to `width`, continuations indented. The label and the first word stay on one line, and a
    word is never split (`hard`: body text, which may be)."""
    if hard:
            return textwrap.fill(text, width, subsequent_indent=" " * indent, drop_whitespace=False,
                             replace_whitespace=False) or text
    head = re.match(r"\s*\S+\s*\S*", text).group(0)
    lines, current = [], head
    for word in text[len(head):].split():
        if len(current) + 1 + len(word) <= width:
            current += " " + word
        else:
            lines.append(current)
            current = " " * indent + word
    return "\n".join(lines + [current])


def _body_block(r: dict) -> tuple[str, list[str]]:
    """The body's heading (length, encoding) and its lines: the text, or a hex/ASCII preview."""
    body, encoding = r.get("body"), r.get("bodyEncoding")
    if body is None:
        return "(not shown)", []
    if encoding == "utf8":
        return f"({len(body.encode())} bytes, UTF-8)", [f"  {line}" for line in body.splitlines() or [""]]
    raw = base64.b64decode(body) if encoding == "base64" else bytes.fromhex(body) if encoding == "hex" else body.encode()
    lines = []
    for at in range(0, min(len(raw), PREVIEW), 16):
        chunk = raw[at:at + 16]
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"  {at:08x}  {chunk.hex(' '):<47}  {text}")
    return f"({len(raw)} bytes, not UTF-8; first {min(len(raw), PREVIEW)} shown)", lines


PREVIEW = 64  # bytes of a binary body shown in a message block
MESSAGE_FIRST = ("msgId", "uniqKey", "topic", "queueId", "queueOffset", "commitLogOffset", "file", "position")


def write_blocks(blocks: Iterable[bytes], out=None):
    """Write ready-made JSON Lines (bytes) to stdout as they come."""
    out = out or sys.stdout.buffer
    for block in blocks:
        out.write(block)
    out.flush()


def _columns(rows: list[dict]) -> list[str]:
    cols: list[str] = []
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)
    return cols


def _cell(v) -> str:
    """Empty for none, yes/no for booleans, compact JSON for nested values; never shortened."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (dict, list)):
        return dumps(v)
    return str(v)


def echo_err(msg: str):
    click.echo(msg, err=True)


def prepare_kernels(*kernels, what: str = "decoder"):
    """Ready the compiled kernels a command calls: the ahead-of-time module (engine.aot) where it covers them,
    built on the first run that needs it; else numba's, whose first run compiles them. A first run takes
    seconds: on a terminal, one line says so (naming `what` is compiled) rather than a silent pause."""
    from ..engine import ready_kernels  # numba loads only in the commands that run kernels

    def say_so():
        if sys.stderr.isatty():
            echo_err(f"rmqctl: compiling the {what} once (a few seconds)")

    ready_kernels(kernels, say_so)


def progress(total: int, desc: str):
    """A tqdm bar on stderr only when stderr is a terminal."""
    from tqdm import tqdm  # start-up time: loaded only when a bar is drawn

    return tqdm(total=total, desc=desc, unit="B", unit_scale=True, file=sys.stderr, disable=not sys.stderr.isatty(),
                leave=False)


def parse_int(value: str, what: str) -> int:
    try:
        return int(value, 0)
    except ValueError:
        raise UsageError(f"{what}: {value!r} is not an integer") from None


def parse_time_ms(text: str, what: str) -> int:
    """Epoch milliseconds, or an ISO 8601 date-time (local time without a zone)."""
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        when = dt.datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
    except ValueError:
        raise UsageError(f"{what} {text!r} is neither epoch milliseconds nor an ISO date-time "
                         "(e.g. 2026-11-22T03:13:00+00:00)") from None
    if when.tzinfo is None:
        when = when.astimezone()
    return round(when.timestamp() * 1000)


class TimeType(click.ParamType):
    """A time option: ISO 8601 with or without a zone (local time without), or epoch milliseconds."""

    name = "TIME"

    def convert(self, value, param, ctx):
        return value if isinstance(value, int) else parse_time_ms(value, f"--{param.name}" if param else "TIME")


class OffsetType(click.ParamType):
    """An offset option: decimal or 0x hex, as `locate` takes it."""

    name = "OFFSET"

    def convert(self, value, param, ctx):
        if isinstance(value, int):
            return value
        try:
            return int(value, 0)
        except ValueError:
            self.fail(f"{value!r} is neither a decimal nor a 0x hex offset", param, ctx)


class MemoryType(click.ParamType):
    """A memory size as `sort -S` takes it: 256M, 1G, 65536 (budget.parse_size)."""

    name = "SIZE"

    def convert(self, value, param, ctx):
        if isinstance(value, int):
            return value
        try:
            size = parse_size(value)
        except ValueError as e:
            self.fail(str(e), param, ctx)
        if size < MIN_CLI_MEMORY:
            self.fail(f"{value!r}: at least {MIN_CLI_MEMORY >> 20}M", param, ctx)
        return size


TIME = TimeType()
OFFSET = OffsetType()


def memory_option(note: str) -> Callable:
    """--memory SIZE, the working-memory budget of the commands that walk the whole store (budget.py); `note`
    says what the budget does not change."""
    return click.option("--memory", type=MemoryType(), default=DEFAULT_MEMORY,
                        help=f"Working memory, like sort -S (e.g. 512M, 2G; default {DEFAULT_MEMORY >> 20}M): the "
                             f"store is taken in batches of records that fit it, so it does not grow with the store. {note}")


def wait_option(fn: Callable) -> Callable:
    """--wait SECONDS on the commands that write: wait that long for the broker's lock (as `flock -w`) instead of
    refusing a held lock at once, so a cron job can run after a broker's stop or another rmqctl's run."""

    @click.option("--wait", "wait_seconds", type=click.FloatRange(min=0), default=0, show_default=True,
                  metavar="SECONDS", help="Wait up to SECONDS for the store's lock (as flock -w) before refusing.")
    @functools.wraps(fn)
    def wrapper(ctx, wait_seconds, **kwargs):
        with waiting_for_lock(wait_seconds):
            return fn(ctx, **kwargs)

    return wrapper


def note_live_dry_run(store: Store):
    """A dry run beside a running broker plans from the store's snapshot: say that the plan may change."""
    live = store.live
    if live is not None:
        echo_err(f"rmqctl: live: {live.holder} is running: this dry run planned from the store as it "
                 f"was when it began; the plan may change before the broker stops")
