"""Entry point: the root group of `base` with every command module's commands on it, then run it."""
from __future__ import annotations

# Every command module, named here: importing one registers its commands on the groups of `base`. A new
# module goes into this list (tests/test_imports.py fails on a module of this package left out).
from . import (append_cmds, clean_cmds, dump_cmds, info_cmds, lookup_cmds, metaq_cmds, offsets_cmds,  # noqa: F401
               rebuild_cmds, spark_cmds, verify_cmds)
from .base import cli


def main():
    cli(prog_name="rmqctl")
