"""`info`: one screen about a store."""
from __future__ import annotations

import click

from ..ops import inspect
from ..ops.startup import estimate_startup
from .base import cli, dumps, echo_lines, render, store_options


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
    """Plain lines (a pager shows them as they are), then the queue and index tables at full width."""
    cl = d["commitlog"]
    lines = [f"store      {d['store']}",
             f"commitlog  {cl['files']} file(s) of {cl['fileSize']} B ({cl['preallocatedEmptyFiles']} preallocated empty), "
             f"offsets {cl['minOffset']}..{cl['maxOffset']}  [{cl['firstFile']} .. {cl['lastFile']}]"]
    cp = d["checkpoint"]
    if cp:
        lines.append(f"checkpoint physic {cp['physicMsgTimestampText']}  logics {cp['logicsMsgTimestampText']}  "
                     f"index {cp['indexMsgTimestampText']}")
    lines.append(f"abort      {'PRESENT (unclean exit)' if d['abort'] else 'absent'}    "
                 f"lock {'held by pid ' + str(d['lockHeldBy']) if d['lockHeldBy'] else 'free'}")
    lines.append(f"startup    {startup}")
    echo_lines(lines, indent=11)
    cq = d["consumequeue"]
    render(cq["queues"], "table", ["topic", "queueId", "files", "minOffset", "maxOffset"],
           title=f"consumequeues ({cq['topics']} topics, {cq['entries']} entries)")
    geometry = d["index"]["geometry"]
    render(d["index"]["files"], "table", ["file", "entries", "beginTimestamp", "endTimestamp", "beginPhyOffset", "endPhyOffset"],
           title=f"index files ({geometry['maxHashSlotNum']} slots / {geometry['maxIndexNum']} entries)")
    for line in d["odd"]:
        echo_lines([f"odd: {line}"], indent=5)
