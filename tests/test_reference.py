"""The CLI reference page (rmqctl/cli/reference.md) is generated from the click commands' own help, and this
test fails when it is stale, as sqlite-utils checks its cog-generated docs. Regenerate it with
`python tests/test_reference.py`. Shell completion is click's own; a test completes a command name."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click

PAGE = Path(__file__).resolve().parents[1] / "rmqctl" / "cli" / "reference.md"
HEADER = """# rmqctl command reference

Generated from the commands' own `--help` by `python tests/test_reference.py`; `tests/test_reference.py` fails
when this page is stale. Every command also accepts `--store`, `--broker-config` and `--format` after its name
(spark commands take several `--store`). Exit codes: 0 success (sound), 1 findings or nothing found, 2 usage
error, unreadable store or refused operation.
"""


def _commands(group: click.Group, path: tuple = ()):
    for name in sorted(group.commands):
        cmd = group.commands[name]
        yield path + (name,), cmd
        if isinstance(cmd, click.Group):
            yield from _commands(cmd, path + (name,))


def render_reference() -> str:
    from rmqctl.cli.main import cli

    parts = [HEADER]
    for path, cmd in _commands(cli):
        name = "rmqctl " + " ".join(path)
        # the root's context settings (-h as well as --help), as every real invocation has them
        ctx = click.Context(cmd, info_name=name, terminal_width=110, **cli.context_settings)
        parts.append(f"\n## {name}\n\n```\n{cmd.get_help(ctx).rstrip()}\n```\n")
    return "".join(parts)


def test_reference_page_is_current():
    assert PAGE.exists(), "run `python tests/test_reference.py` to write rmqctl/cli/reference.md"
    assert PAGE.read_text() == render_reference(), "rmqctl/cli/reference.md is stale: run `python tests/test_reference.py`"


def test_shell_completion_completes_a_command_name():
    env = {**os.environ, "_RMQCTL_COMPLETE": "bash_complete", "COMP_WORDS": "rmqctl veri", "COMP_CWORD": "1"}
    p = subprocess.run([sys.executable, "-c", "from rmqctl.cli.main import main; main()"], env=env,
                       capture_output=True, text=True)
    assert "plain,verify" in p.stdout.splitlines()
    env.update(COMP_WORDS="rmqctl dump ", COMP_CWORD="2")
    p = subprocess.run([sys.executable, "-c", "from rmqctl.cli.main import main; main()"], env=env,
                       capture_output=True, text=True)
    assert {"plain,commitlog", "plain,checkpoint"} <= set(p.stdout.splitlines())


if __name__ == "__main__":
    PAGE.write_text(render_reference())
    print(f"wrote {PAGE}")
