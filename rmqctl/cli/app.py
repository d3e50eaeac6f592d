"""The root click group and its subgroups, and the error mapping every command shares: a library error, a
Ctrl-C or a crash becomes one line on stderr and an exit code (cli-contract.md) instead of a traceback.

Command modules in this package import `cli` (or a subgroup) from here and decorate their commands; they
only parse options (options.py), call the library, and render what it returns (render.py).
"""

from __future__ import annotations

import os
import sys

import click

from ..errors import EXIT_INTERRUPTED, EXIT_REFUSED, RmqError

FAILED = "rmqctl.failed"  # click context meta: the command ended in an error line (no notes after it)


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
            click.echo(
                f"rmqctl: internal error ({type(e).__name__}: {e}): a bug in rmqctl, not a finding about the "
                "store; please report it with the command line (RMQCTL_DEBUG=1 shows where)",
                err=True,
            )
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
