"""Rendering what a command returns: records as table, jsonl, json or csv (or key: value blocks), plain lines
folded to the terminal, notes on stderr, progress bars, and the one-line notice of a first run's compilation.
"""

from __future__ import annotations

import base64
import contextlib
import csv
import json
import re
import shutil
import sys
import textwrap
from typing import Iterable

import click
import orjson

from .. import schema as S
from ..errors import EXIT_REFUSED, where
from ..store import Store
from ..views.inspect import ms_text

FORMATS = ("table", "jsonl", "json", "csv")
LONG = "long"  # --long: the table format with every record as a key: value block


def _json_default(o):
    if isinstance(o, (bytes, bytearray, memoryview)):
        return bytes(o).hex()
    if hasattr(o, "item"):  # numpy scalars
        return o.item()
    raise TypeError(f"cannot serialise {type(o).__name__}")


def dumps(obj) -> str:
    """Compact JSON, UTF-8 text as is. orjson: JSON encoding was most of dump's time per record."""
    return orjson.dumps(obj, default=_json_default, option=orjson.OPT_NON_STR_KEYS).decode()


def render(
    rows: Iterable[dict],
    fmt: str,
    columns: list[str] | None = None,
    title: str | None = None,
    out=None,
    blocks: bool = False,
) -> int:
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
        click.echo(
            textwrap.fill(line, width, subsequent_indent=" " * indent, break_long_words=False, break_on_hyphens=False)
        )


def _is_terminal(out) -> bool:
    return bool(getattr(out, "isatty", None) and out.isatty())


def _lines(rows: list[dict], cols: list[str], title: str | None, out):
    """One line per record under a header line, columns two spaces apart, numbers right-aligned, an empty
    value shown as `-`: never cut and never folded (a line wider than the terminal wraps there, `less -S`
    scrolls it), so `awk '{print $3}'` and `sort -k` see one field per column."""
    # rich's cell widths count wide characters (CJK, emoji) as the terminal draws them; loaded only here
    from rich.cells import cell_len

    cells = [[_line_cell(r.get(c)) for c in cols] for r in rows]
    numeric = [
        any(r.get(c) is not None for r in rows)
        and all(
            isinstance(r.get(c), (int, float)) and not isinstance(r.get(c), bool) for r in rows if r.get(c) is not None
        )
        for c in cols
    ]
    widths = [max([cell_len(c)] + [cell_len(row[i]) for row in cells]) for i, c in enumerate(cols)]

    def line(values):
        padded = [
            " " * (w - cell_len(v)) + v if right else v + " " * (w - cell_len(v))
            for v, w, right in zip(values, widths, numeric)
        ]
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
    return {
        "commitLogOffset": r.get("commitLogOffset"),
        "storeTime": ms_text(r["storeTimestamp"]) if isinstance(r.get("storeTimestamp"), int) else None,
        "topic": r.get("topic"),
        "queueId": r.get("queueId"),
        "queueOffset": r.get("queueOffset"),
        "storeSize": r.get("storeSize"),
        "tags": props.get("TAGS"),
        "keys": props.get("KEYS"),
        "msgId": r.get("msgId"),
        "uniqKey": r.get("uniqKey"),
    }


def _blocks(rows: list[dict], out, columns: list[str] | None = None):
    """Each record as `key: value` lines, a blank line between records. A message's properties come one per
    line and its body as text when it is UTF-8, else as a short hex/ASCII preview with its length. On a
    terminal, long values fold at word boundaries under their column; a value with no space is shown whole."""
    width = shutil.get_terminal_size().columns if _is_terminal(out) else None
    for n, r in enumerate(rows):
        if n:
            out.write("\n")
        message = _is_message(r)
        keys = (
            [k for k in MESSAGE_FIRST if k in r] + [k for k in r if k not in MESSAGE_FIRST]
            if message
            else [k for k in (columns or r) if k in r]
        )
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
        return (
            textwrap.fill(text, width, subsequent_indent=" " * indent, drop_whitespace=False, replace_whitespace=False)
            or text
        )
    head = re.match(r"\s*\S+\s*\S*", text).group(0)
    lines, current = [], head
    for word in text[len(head) :].split():
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
    raw = (
        base64.b64decode(body) if encoding == "base64" else bytes.fromhex(body) if encoding == "hex" else body.encode()
    )
    lines = []
    for at in range(0, min(len(raw), PREVIEW), 16):
        chunk = raw[at : at + 16]
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


@contextlib.contextmanager
def damage_exits():
    """A `warn` for a read that goes on past damage: each line goes to stderr as it is found, and once the
    read is done, any makes the exit code 2 (everything readable was printed; the exit code still tells
    scripts the store is damaged). An error that ends the read is its own answer."""
    damage: list[str] = []

    def warn(msg: str):
        damage.append(msg)
        echo_err(f"rmqctl: {msg}")

    yield warn
    if damage:
        raise click.exceptions.Exit(EXIT_REFUSED)


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
    """A tqdm bar on stderr when stderr is a terminal; else a NoBar."""
    if not sys.stderr.isatty():
        return NoBar()
    from tqdm import tqdm  # start-up time: loaded only when a bar is drawn

    return tqdm(total=total, desc=desc, unit="B", unit_scale=True, file=sys.stderr, leave=False)


class NoBar:
    """A bar's interface that draws nothing and takes no lock. tqdm takes a lock shared with the processes a
    process forks even for a disabled bar: one killed while it held it (the torture suite's SIGKILL of a writer
    run in a forked child) hung every later one."""

    n = 0

    def update(self, n: int = 1):
        self.n += n

    def refresh(self):
        pass

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def echo_moved(moved: list):
    """One line per (file, position, what) that moved under a read of a running broker's store."""
    for f, pos, what in moved:
        path = getattr(f, "path", f)  # a mapped file, or the path of a file deleted before it was mapped
        echo_err(f"rmqctl: live: {where(path, position=pos) if pos else path}: {what}")


def note_live_dry_run(store: Store):
    """A dry run beside a running broker plans from the store's snapshot: say that the plan may change."""
    live = store.live
    if live is not None:
        echo_err(
            f"rmqctl: live: {live.holder} is running: this dry run planned from the store as it "
            f"was when it began; the plan may change before the broker stops"
        )
