"""The CLI reference page (docs/reference.md) is generated from the click commands' own help, and this
test fails when it is stale, as sqlite-utils checks its cog-generated docs. Regenerate it with
`python tests/test_reference.py`. Shell completion is click's own; a test completes a command name."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import click

PAGE = Path(__file__).resolve().parents[1] / "docs" / "reference.md"
HEADER = """# rmqctl command reference

Generated from the commands' own `--help` by `python tests/test_reference.py`; `tests/test_reference.py` fails
when this page is stale. Every command also accepts `--store`, `--broker-config` and `--format` after its name
(spark commands take several `--store`). Exit codes: 0 success (sound), 1 findings or nothing found, 2 usage
error, not a store, unreadable store or refused operation, 130 interrupted (Ctrl-C). The [guide](guide.md) says
what each command is for, by task.
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
    root_settings = {"terminal_width": 110, "max_content_width": 110, **cli.context_settings}
    for path, cmd in _commands(cli):
        # each command under its groups' contexts, as when it runs: the root's -h reaches it (click caches a
        # command's help option, so a context without that parent would make the page depend on test order)
        ctx, group = click.Context(cli, info_name="rmqctl", **root_settings), cli
        for part in path:
            group = group.commands[part]
            ctx = click.Context(group, info_name=part, parent=ctx, terminal_width=110, max_content_width=110)
        parts.append(f"\n## rmqctl {' '.join(path)}\n\n```\n{cmd.get_help(ctx).rstrip()}\n```\n")
    return "".join(parts)


def test_reference_page_is_current():
    assert PAGE.exists(), "run `python tests/test_reference.py` to write docs/reference.md"
    assert PAGE.read_text() == render_reference(), "docs/reference.md is stale: run `python tests/test_reference.py`"


def test_shell_completion_completes_a_command_name():
    env = {**os.environ, "_RMQCTL_COMPLETE": "bash_complete", "COMP_WORDS": "rmqctl veri", "COMP_CWORD": "1"}
    p = subprocess.run(
        [sys.executable, "-c", "from rmqctl.cli.main import main; main()"], env=env, capture_output=True, text=True
    )
    assert "plain,verify" in p.stdout.splitlines()
    env.update(COMP_WORDS="rmqctl dump ", COMP_CWORD="2")
    p = subprocess.run(
        [sys.executable, "-c", "from rmqctl.cli.main import main; main()"], env=env, capture_output=True, text=True
    )
    assert {"plain,commitlog", "plain,checkpoint"} <= set(p.stdout.splitlines())


if __name__ == "__main__":
    PAGE.write_text(render_reference())
    print(f"wrote {PAGE}")


def test_every_help_ends_with_examples_that_parse():
    """Every command's --help ends with one or two example lines, and each example names that command with
    options and arguments it accepts (parsed by click, not run)."""
    import shlex

    from rmqctl.cli.main import cli

    for path, cmd in _commands(cli):
        if isinstance(cmd, click.Group):
            continue
        lines = (cmd.help or "").rstrip().splitlines()
        examples = []
        while lines and lines[-1].strip().startswith("rmqctl "):
            examples.insert(0, lines.pop().strip())
        name = "rmqctl " + " ".join(path)
        assert 1 <= len(examples) <= 3 and lines[-1].strip() == "\b", f"{name}: --help ends without examples"
        for example in examples:  # the command may be any stage of a pipeline
            stages = [shlex.split(stage) for stage in re.split(r" \|\|? ", example)]
            words = next((w for w in stages if w[: len(path) + 1] == ["rmqctl", *path]), None)
            assert words is not None, f"{name}: example does not run it: {example}"
            cmd.make_context(name, words[len(path) + 1 :], **cli.context_settings)
