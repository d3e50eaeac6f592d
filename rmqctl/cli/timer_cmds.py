"""`dump timerlog` and `dump timerwheel`: the 5.x timer files."""

from __future__ import annotations

import functools

import click

from ..views import timer
from .app import dump
from .options import store_options
from .render import damage_exits, render

UNIT_COLUMNS = ["pos", "prevPos", "magic", "delayedTimeMs", "offsetPy", "sizePy", "realTopic", "realQueueId", "problem"]
SLOT_COLUMNS = ["slotIndex", "timeMs", "firstPos", "lastPos", "num", "chain", "chainProblem"]


def filters(fn):
    """--slot, --begin and --end, passed on as one timer.SlotFilter (`which`)."""

    @click.option("--slot", type=int, help="Only wheel slot N ((timeMs / timerPrecisionMs) % 1209600).")
    @click.option("--begin", type=int, metavar="MS", help="Earliest delivery (slot) time, epoch ms inclusive.")
    @click.option("--end", type=int, metavar="MS", help="Latest delivery (slot) time, epoch ms inclusive.")
    @functools.wraps(fn)
    def wrapper(ctx, slot, begin, end, **kwargs):
        return fn(ctx, timer.SlotFilter(slot, begin, end), **kwargs)

    return wrapper


@dump.command("timerlog")
@store_options
@filters
@click.option("--no-resolve", is_flag=True, help="Do not read each unit's commitlog record.")
def dump_timerlog(ctx, which, no_resolve):
    """Decode the 52-byte units of timerlog/ (5.x timer messages), each with the record it points at.

    \b
    rmqctl dump timerlog --store /data/store --broker-config broker.conf
    """
    with damage_exits() as warn:
        rows = timer.dump_timerlog(ctx.store, which, resolve=not no_resolve, warn=warn)
        if ctx.format == "table":  # the record's real queue instead of the whole record
            rows = ({**r, **{k: (r.get("message") or {}).get(k) for k in ("realTopic", "realQueueId")}} for r in rows)
        render(rows, ctx.format, UNIT_COLUMNS if ctx.format == "table" else None)


@dump.command("timerwheel")
@store_options
@filters
def dump_timerwheel(ctx, which):
    """Decode the used slots of timerwheel, each with the unit chain followed from lastPos through prevPos.

    \b
    rmqctl dump timerwheel --store /data/store --broker-config broker.conf
    """
    render(timer.dump_timerwheel(ctx.store, which), ctx.format, SLOT_COLUMNS if ctx.format == "table" else None)
