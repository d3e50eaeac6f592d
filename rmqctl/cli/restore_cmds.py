"""`restore`: list the backups rebuild, repair and config restore kept, or put one back."""

from __future__ import annotations

import click

from .app import cli
from .options import store_options, wait_option
from .render import echo_err, note_live_dry_run, render
from .rebuild_cmds import DRY_RUN_HELP, NO_BACKUP_HELP, _interrupted


@cli.command("restore")
@store_options(writes=True)
@wait_option
@click.argument("backup", required=False)
@click.option("--dry-run", is_flag=True, help=DRY_RUN_HELP)
@click.option("--no-backup", is_flag=True, help=NO_BACKUP_HELP)
def restore_cmd(ctx, backup, dry_run, no_backup):
    """Put back what a rebuild, repair or config restore replaced, from BACKUP (a
    .rmqctl-backup-<time> directory of the store, by name or path), atomically and under the broker's lock;
    what it replaces is kept in a new backup. Without BACKUP, list the store's backups.

    \b
    rmqctl restore --store /data/store
    rmqctl restore .rmqctl-backup-20261122031300123 --store /data/store --dry-run
    """
    # loads the staging checks (and kernels): only for this command
    from ..maintenance.restore import list_backups, restore

    if backup is None:
        render(
            (
                {"backup": b.name, "command": b.command, "created": b.created, "items": b.items}
                for b in list_backups(ctx.store)
            ),
            ctx.format,
            columns=["backup", "command", "created", "items"],
        )
        return
    store = ctx.store if dry_run else ctx.writable_store()
    if dry_run:
        note_live_dry_run(store)
    r = restore(store, backup, dry_run=dry_run, keep_backup=not no_backup)
    _interrupted(r.interrupted)
    render(r.steps, ctx.format, columns=["action", "target", "from"])
    verb = "would put back" if dry_run else "put back"
    echo_err(
        f"rmqctl: {verb} what `{r.command}` replaced ({len(r.steps)} item(s)) from {r.backup}"
        + (f"; what it replaced is kept in {r.newBackup}" if r.newBackup else "")
        + ("; dry run: nothing written" if dry_run else "")
    )
