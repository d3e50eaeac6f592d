"""`info`: one screen about a store."""
from __future__ import annotations

import click

from ..ops import inspect
from ..ops.startup import estimate_startup
from .base import cli, dumps, render, store_options


@cli.command("info")
@store_options
def info(ctx):
    """Files and offset ranges per component, queues, checkpoint, abort/lock state, index files, oddities."""
    data = inspect.info(ctx.store)
    startup = estimate_startup(ctx.store)
    data["startup"] = startup.to_dict()
    if ctx.format in ("json", "jsonl"):
        click.echo(dumps(data))
        return
    if ctx.format == "csv":
        render(data["consumequeue"]["queues"], "csv")
        return
    _print_table(data, startup.line())


def _print_table(d: dict, startup: str):
    from rich.console import Console
    from rich.table import Table

    con = Console()
    cl = d["commitlog"]
    con.print(f"[bold]store[/bold] {d['store']}")
    if d["empty"]:
        con.print("[yellow]empty store:[/yellow] the commitlog directory holds no file (a broker started here, no "
                  "message was ever written)")
    con.print(f"commitlog  {cl['files']} file(s) of {cl['fileSize']} B ({cl['preallocatedEmptyFiles']} preallocated empty), "
              f"offsets {cl['minOffset']}..{cl['maxOffset']}  [{cl['firstFile']} .. {cl['lastFile']}]")
    cp = d["checkpoint"]
    if cp:
        con.print(f"checkpoint physic {cp['physicMsgTimestampText']}  logics {cp['logicsMsgTimestampText']}  "
                  f"index {cp['indexMsgTimestampText']}")
    con.print(f"abort      {'PRESENT (unclean exit)' if d['abort'] else 'absent'}    "
              f"lock {'held by pid ' + str(d['lockHeldBy']) if d['lockHeldBy'] else 'free'}")
    con.print(f"startup    {startup}")
    q = Table(title=f"consumequeues ({d['consumequeue']['topics']} topics, {d['consumequeue']['entries']} entries)")
    for c in ("topic", "queueId", "files", "minOffset", "maxOffset"):
        q.add_column(c)
    for row in d["consumequeue"]["queues"]:
        q.add_row(*(str(row[c]) for c in ("topic", "queueId", "files", "minOffset", "maxOffset")))
    con.print(q)
    ix = Table(title=f"index files ({d['index']['geometry']['maxHashSlotNum']} slots / {d['index']['geometry']['maxIndexNum']} entries)")
    for c in ("file", "entries", "beginTimestamp", "endTimestamp", "beginPhyOffset", "endPhyOffset"):
        ix.add_column(c)
    for row in d["index"]["files"]:
        ix.add_row(*(str(row[c]) for c in ("file", "entries", "beginTimestamp", "endTimestamp", "beginPhyOffset", "endPhyOffset")))
    con.print(ix)
    for line in d["odd"]:
        con.print(f"[yellow]odd:[/yellow] {line}")
