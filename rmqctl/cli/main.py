"""Entry point: the root group of `app` with every command module's commands on it, then run it."""

from __future__ import annotations

# Every command module, named here: importing one registers its commands on the groups of `app`. A new
# module goes into this list (tests/test_imports.py fails on a module of this package left out).
from . import (
    append_cmds,
    clean_cmds,
    dump_cmds,
    info_cmds,
    lookup_cmds,
    metaq_cmds,
    offsets_cmds,
    rebuild_cmds,
    restore_cmds,
    spark_cmds,
    timer_cmds,
    verify_cmds,
)
from .app import cli


def main():
    cli(prog_name="rmqctl")
