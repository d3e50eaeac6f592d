"""The click plumbing every command shares: the root group, the store/config/format options, rendering of
records (table, jsonl, json, csv), and errors as one line with an exit code instead of a traceback.

Command modules in this package import `cli` (or a subgroup) from here and decorate their commands; they
only parse options, call the library, and render what it returns.
"""
from __future__ import annotations

import csv
import functools
import json
import os
import sys
from typing import Callable, Iterable

import click
import orjson

from ..config import BrokerConfig, load_config
from ..errors import EXIT_REFUSED, RmqError, UsageError
from ..store import Store

FORMATS = ("table", "jsonl", "json", "csv")


class RmqGroup(click.Group):
    """A group whose commands turn library errors into `rmqctl: <file> at offset N: <what>` + exit 2, and
    an error of rmqctl's own into one line and exit 2 too: a crash must not read as exit 1 (findings) in
    cron. RMQCTL_DEBUG=1 shows its traceback instead."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except RmqError as e:
            click.echo(f"rmqctl: {e}", err=True)
            ctx.exit(e.exit_code)
        except BrokenPipeError:
            # `rmqctl dump ... | head`: the reader left; not an error of ours
            sys.stderr.close()
            ctx.exit(0)
        except OSError as e:
            where = f"{e.filename}: " if e.filename else ""
            click.echo(f"rmqctl: {where}{e.strerror or e}", err=True)
            ctx.exit(EXIT_REFUSED)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except Exception as e:
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

    def __init__(self, store_dir: str | None, broker_config: str | None, fmt: str | None, explicit_store: bool):
        self.config: BrokerConfig = load_config(broker_config)
        root = os.path.expanduser(store_dir or self.config.storePathRootDir or "~/store")
        if os.path.islink(root.rstrip("/") or "/"):
            # resolved once: a link re-pointed mid-run cannot move a writer to another store
            real = os.path.realpath(root)
            echo_err(f"rmqctl: note: store {root} is a symlink; using {real}")
            root = real
        self.store_dir = root
        self.explicit_store = explicit_store or bool(self.config.storePathRootDir)
        self.format = fmt or ("table" if sys.stdout.isatty() else "jsonl")
        self._store: Store | None = None

    @property
    def store(self) -> Store:
        if self._store is None:
            self._store = Store(self.store_dir, self.config)
        return self._store

    def writable_store(self) -> Store:
        """Writing commands refuse to guess the store: --store, ROCKETMQ_STORE or storePathRootDir only."""
        if not self.explicit_store:
            raise UsageError("this command writes: name the store with --store or ROCKETMQ_STORE")
        return self.store


def store_options(fn: Callable) -> Callable:
    """--store, --broker-config and --format, accepted after every command's name."""

    @click.option("--store", "store_dir", envvar="ROCKETMQ_STORE", type=click.Path(file_okay=False),
                  help="Store root (storePathRootDir). Env ROCKETMQ_STORE; default ~/store.")
    @click.option("--broker-config", type=click.Path(dir_okay=False),
                  help="broker.conf to read geometry and settings from (key=value lines).")
    @click.option("--format", "fmt", type=click.Choice(FORMATS),
                  help="Output format: table on a terminal, jsonl otherwise.")
    @functools.wraps(fn)
    def wrapper(store_dir, broker_config, fmt, **kwargs):
        explicit = store_dir is not None
        ctx = StoreContext(store_dir, broker_config, fmt, explicit)
        return fn(ctx, **kwargs)

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
           out=None) -> int:
    """Write records to stdout in the chosen format; returns how many. jsonl streams, so a pipe sees each
    record as soon as it is decoded; table and json collect first."""
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
    cols = columns or _columns(rows)
    if fmt == "csv":
        w = csv.writer(out)
        w.writerow(cols)
        for r in rows:
            w.writerow([_cell(r.get(c)) for c in cols])
        return len(rows)
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, show_lines=False)
    for c in cols:
        table.add_column(c, overflow="fold")
    for r in rows:
        table.add_row(*(_cell(r.get(c), 60) for c in cols))
    Console(file=out, soft_wrap=False).print(table)
    return len(rows)


def _columns(rows: list[dict]) -> list[str]:
    cols: list[str] = []
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)
    return cols


def _cell(v, width: int | None = None) -> str:
    if v is None:
        return ""
    if isinstance(v, (dict, list)):
        v = dumps(v)
    s = str(v)
    if width and len(s) > width:
        s = s[: width - 1] + "…"
    return s


def echo_err(msg: str):
    click.echo(msg, err=True)


def progress(total: int, desc: str):
    """A tqdm bar on stderr only when stderr is a terminal."""
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="B", unit_scale=True, file=sys.stderr, disable=not sys.stderr.isatty(),
                leave=False)


def parse_int(value: str, what: str) -> int:
    try:
        return int(value, 0)
    except ValueError:
        raise UsageError(f"{what}: {value!r} is not an integer") from None
