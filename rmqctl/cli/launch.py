"""The `rmqctl` console command: no OpenBLAS pool, its threads set to share one heap (budget.one_heap),
rmqctl.cli.main loaded with the cyclic garbage collector paused, then run.

Loading the CLI, numba and the compiled kernels makes some 10^5 long-lived objects and no garbage worth a
collection, yet the collector walked them again at every threshold, at start-up and through the run
(docs/performance.md; benchmarks/bench_dump.py measures it). Once loaded they are
frozen (later collections skip them): the CLI's modules here, numba when the first kernel loads it
(engine.when_loaded); the collector runs as usual for the command itself. A library user's process is
left alone, its allocator too."""

from __future__ import annotations

import gc
import importlib
import os
import signal
import sys

# numpy's OpenBLAS starts a pool of threads when it loads (one per core) that spin before they sleep: tens
# of milliseconds of CPU at every start, on the cores the command's own threads need. No command does linear algebra;
# a setting the user made is kept. Set before anything loads numpy.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# Ctrl-C must reach the main thread: a SIGINT the kernel hands to another thread (a pool a library starts, such
# as OpenBLAS's where the user asks for one) only sets Python's flag, and a main thread blocked in a read (a
# FIFO or pipe as its config, a full pipe) never sees it. The threads the imports start inherit this mask;
# main() unblocks it in the main thread.
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})

from ..budget import one_heap  # noqa: E402 (after the mask: see above)
from ..engine import when_loaded  # noqa: E402


# the command modules (rmqctl.cli.main's) each top-level command's commands come from: `rmqctl append ...` loads
# its own, not the eleven others, a part of the start-up every run pays. tests/test_imports.py holds this to
# what main.py registers.
COMMAND_MODULES = {
    "append": ("append_cmds",),
    "clean": ("clean_cmds",),
    "config": ("offsets_cmds",),
    "consumers": ("offsets_cmds",),
    "convert": ("rebuild_cmds",),
    "delay-offsets": ("offsets_cmds",),
    "diff": ("offsets_cmds",),
    "dump": ("dump_cmds", "timer_cmds"),
    "info": ("info_cmds",),
    "locate": ("dump_cmds",),
    "metaq": ("metaq_cmds",),
    "msgid": ("lookup_cmds",),
    "offset-by-time": ("offsets_cmds",),
    "query": ("lookup_cmds",),
    "rebuild": ("rebuild_cmds",),
    "repair": ("rebuild_cmds",),
    "restore": ("restore_cmds",),
    "spark": ("spark_cmds",),
    "verify": ("verify_cmds",),
}


def main():
    one_heap()
    gc.disable()
    run = command(sys.argv[1:2])  # (start-up: loaded with the collector paused)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    gc.freeze()
    gc.enable()
    when_loaded(gc.freeze)
    run()


def command(first: list[str]):
    """The root group's run with the modules of the command named `first` loaded (COMMAND_MODULES), or with
    every command module (rmqctl.cli.main) for anything else: --help, --version, a misspelt name."""
    modules = COMMAND_MODULES.get(first[0]) if first else None
    if modules is None:
        from .main import main as run  # every command module

        return run
    for name in modules:
        importlib.import_module(f".{name}", __package__)  # registers its commands on the groups of `app`
    from .app import cli  # (after the modules: the root group with their commands)

    return lambda: cli(prog_name="rmqctl")
