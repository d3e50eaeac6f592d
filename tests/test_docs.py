"""Every command has help text and a README section, sqlite-utils style: a new command without docs fails."""
from __future__ import annotations

from pathlib import Path

import click
import pytest

from conftest import run
from rmqctl.cli.main import cli

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def all_commands(group: click.Group = cli, prefix: tuple = ()):
    for name, cmd in sorted(group.commands.items()):
        path = prefix + (name,)
        if isinstance(cmd, click.Group):
            yield from all_commands(cmd, path)
        else:
            yield path, cmd


COMMANDS = list(all_commands())


@pytest.mark.parametrize("path,cmd", COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_command_has_help(path, cmd):
    assert cmd.help and len(cmd.help.strip()) > 20, f"rmqctl {' '.join(path)} has no help text"
    res = run(*path, "--help")
    assert res.exit_code == 0 and "Usage:" in res.stdout
    for param in cmd.params:
        if isinstance(param, click.Option) and not param.hidden and param.name not in ("help",):
            assert param.help, f"rmqctl {' '.join(path)} {param.opts[0]} has no help"


@pytest.mark.parametrize("path", [p for p, _ in COMMANDS], ids=[" ".join(p) for p, _ in COMMANDS])
def test_command_is_documented_in_readme(path):
    assert f"rmqctl {' '.join(path)}" in README, f"README.md does not document `rmqctl {' '.join(path)}`"


def test_contract_options_on_every_command():
    """--store, --broker-config and --format are accepted after every command's name (cli-contract)."""
    for path, cmd in COMMANDS:
        if path[0] == "spark":
            continue  # spark commands take several --store; checked in test_spark
        names = {o for p in cmd.params for o in getattr(p, "opts", [])}
        assert {"--store", "--broker-config", "--format"} <= names, " ".join(path)
