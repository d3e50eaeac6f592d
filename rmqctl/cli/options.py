"""The options every command shares and the click types of their values: --store, --broker-config, --format,
--long and --rocketmq-version resolved into a StoreContext; --memory, --wait; times and offsets as a user writes them.
"""

from __future__ import annotations

import functools
import os
import sys
from typing import Callable

import click

from ..brokerversion import CHOICES as VERSION_CHOICES, BrokerVersion
from ..budget import DEFAULT_MEMORY, MIN_CLI_MEMORY, parse_size
from ..config import BrokerConfig, load_config
from ..errors import UsageError
from ..javacompat import TIME_FORMS, parse_time_ms as java_time_ms
from ..lock import waiting_for_lock
from ..store import Store
from .app import FAILED
from .render import FORMATS, LONG, echo_err, echo_moved


class StoreContext:
    """What the shared options resolve to: the store, its config, and the chosen output format."""

    def __init__(
        self,
        store_dir: str | None,
        broker_config: str | None,
        fmt: str | None,
        explicit_store: bool,
        writes: bool = False,
        long: bool = False,
        rocketmq_version: str | None = None,
    ):
        if long and fmt not in (None, "table"):
            raise UsageError(f"--long shows records as key: value blocks; it does not go with --format {fmt}")
        self.writes = writes
        self.config: BrokerConfig = load_config(broker_config, rocketmqVersion=rocketmq_version)
        for note in self.config.notes:
            echo_err(f"rmqctl: note: {broker_config}: {note}")
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


def store_options(fn: Callable | None = None, *, writes: bool = False) -> Callable:
    """--store, --broker-config and --format, accepted after every command's name. `writes`: a writing
    command (it refuses a store holding a part not read, rather than naming that part after its output)."""
    if fn is None:
        return functools.partial(store_options, writes=writes)

    @click.option(
        "--store",
        "store_dir",
        envvar="ROCKETMQ_STORE",
        type=DIRECTORY,
        help="Store root (storePathRootDir). Env ROCKETMQ_STORE; default ~/store.",
    )
    @click.option(
        "--broker-config", type=FILE, help="broker.conf to read geometry and settings from (key=value lines)."
    )
    @click.option(
        "--format",
        "fmt",
        type=click.Choice(FORMATS),
        help="Output format: table (one line per record) on a terminal, jsonl otherwise.",
    )
    @click.option(
        "--long",
        "-l",
        "long",
        is_flag=True,
        help="Each record as a block of key: value lines with every field, instead of one line.",
    )
    @click.option(
        "--rocketmq-version",
        type=click.Choice(VERSION_CHOICES),
        help="The rules of the broker that owns the store, where they differ: 4 (4.9), 5 (5.x) or 5.5 "
        "(5.5.0's recovery). Default: what the store's files tell (see `info`).",
    )
    @functools.wraps(fn)
    def wrapper(store_dir, broker_config, fmt, long, rocketmq_version, **kwargs):
        explicit = store_dir is not None
        ctx = StoreContext(store_dir, broker_config, fmt, explicit, writes, long, rocketmq_version)
        try:
            return fn(ctx, **kwargs)
        finally:
            ctx.report_moved()

    return wrapper


def parse_int(value: str, what: str) -> int:
    try:
        return int(value, 0)
    except ValueError:
        raise UsageError(f"{what}: {value!r} is not an integer") from None


def parse_time_ms(text: str, what: str) -> int:
    """Epoch milliseconds from a time option (javacompat.parse_time_ms: ms, ISO 8601, or mqadmin's form)."""
    ms = java_time_ms(text)
    if ms is None:
        raise UsageError(f"{what} {text!r} is not a time: {TIME_FORMS}")
    return ms


class TimeType(click.ParamType):
    """A time option: epoch milliseconds, ISO 8601 with or without a zone (local time without), or mqadmin's
    yyyy-MM-dd#HH:mm:ss:SSS (javacompat.parse_time)."""

    name = "TIME"

    def convert(self, value, param, ctx):
        return value if isinstance(value, int) else parse_time_ms(value, f"--{param.name}" if param else "TIME")


class ParsedType(click.ParamType):
    """An option value parsed by `parse` (text to value); its ValueError is click's usage error for the option."""

    def __init__(self, name: str, parse: Callable[[str], int]):
        self.name = name
        self.parse = parse

    def convert(self, value, param, ctx):
        if isinstance(value, int):
            return value
        try:
            return self.parse(value)
        except ValueError as e:
            self.fail(str(e), param, ctx)


def parse_offset(text: str) -> int:
    """An offset as `locate` takes it: decimal or 0x hex."""
    try:
        return int(text, 0)
    except ValueError:
        raise ValueError(f"{text!r} is neither a decimal nor a 0x hex offset") from None


def parse_memory(text: str) -> int:
    """A memory size as `sort -S` takes it: 256M, 1G, 65536 (budget.parse_size), at least MIN_CLI_MEMORY."""
    size = parse_size(text)
    if size < MIN_CLI_MEMORY:
        raise ValueError(f"{text!r}: at least {MIN_CLI_MEMORY >> 20}M")
    return size


TIME = TimeType()
OFFSET = ParsedType("OFFSET", parse_offset)
MEMORY = ParsedType("SIZE", parse_memory)
# an option naming a file (a directory there is a usage error), one naming a directory, a file or '-' for stdin
FILE = click.Path(dir_okay=False)
DIRECTORY = click.Path(file_okay=False)
FILE_OR_STDIN = click.Path(dir_okay=False, allow_dash=True)


def memory_option(note: str) -> Callable:
    """--memory SIZE, the working-memory budget of the commands that walk the whole store (budget.py); `note`
    says what the budget does not change."""
    return click.option(
        "--memory",
        type=MEMORY,
        default=DEFAULT_MEMORY,
        help=f"Working memory, like sort -S (e.g. 512M, 2G; default {DEFAULT_MEMORY >> 20}M): the "
        f"store is taken in batches of records that fit it, so it does not grow with the store. {note}",
    )


def body_option(help_text: str) -> Callable:
    """--body, how the commands that print messages render each body: utf8 (the default), base64, hex or
    none; `help_text` says what it renders there."""
    return click.option(
        "--body",
        type=click.Choice(["utf8", "base64", "hex", "none"]),
        default="utf8",
        show_default=True,
        help=help_text,
    )


def time_range_options(since_help: str, until_help: str) -> Callable:
    """--since and --until TIME: the store times (inclusive) of the messages a command takes; each command's
    help says how it finds them."""

    def add(fn: Callable) -> Callable:
        fn = click.option("--until", type=TIME, help=until_help)(fn)
        return click.option("--since", type=TIME, help=since_help)(fn)

    return add


def wait_option(fn: Callable) -> Callable:
    """--wait SECONDS on the commands that write: wait that long for the broker's lock (as `flock -w`) instead of
    refusing a held lock at once, so a cron job can run after a broker's stop or another rmqctl's run."""

    @click.option(
        "--wait",
        "wait_seconds",
        type=click.FloatRange(min=0),
        default=0,
        show_default=True,
        metavar="SECONDS",
        help="Wait up to SECONDS for the store's lock (as flock -w) before refusing.",
    )
    @functools.wraps(fn)
    def wrapper(ctx, wait_seconds, **kwargs):
        with waiting_for_lock(wait_seconds):
            return fn(ctx, **kwargs)

    return wrapper
