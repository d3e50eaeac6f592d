"""`deleteWhen`: the Quartz cron expression (CronScheduleBuilder.cronSchedule) that fires the broker's DeleteJob,
in the JVM's local time zone. Fields: seconds, minutes, hours, day-of-month, month, day-of-week (1 = SUN ..
7 = SAT), optional year; `*`, `?`, lists, ranges, `/` steps and month/day names. Exactly one of day-of-month
and day-of-week is `?`, as Quartz requires. `L`, `W` and `#` are recognised but not evaluated: then the next
fire time is unknown (None) rather than guessed.
"""

from __future__ import annotations

import datetime as dt

from ..errors import UsageError

MONTHS = {m: i for i, m in enumerate("JAN FEB MAR APR MAY JUN JUL AUG SEP OCT NOV DEC".split(), 1)}
DAYS = {d: i for i, d in enumerate("SUN MON TUE WED THU FRI SAT".split(), 1)}
BOUNDS = [(0, 59), (0, 59), (0, 23), (1, 31), (1, 12), (1, 7), (1970, 2099)]
NAMES = [{}, {}, {}, {}, MONTHS, DAYS, {}]
WRAPS = [60, 60, 24, 31, 12, 7, None]  # where a range ending before it starts wraps to (a year's does not)


class Unsupported(Exception):
    pass


def _value(text: str, field: int) -> int:
    v = NAMES[field].get(text.upper()) if not text.isdigit() else int(text)
    lo, hi = BOUNDS[field]
    if v is None or not lo <= v <= hi:
        raise ValueError(text)
    return v


def _field(text: str, field: int) -> set[int] | None:
    """The values a field allows; None for `?`."""
    if text == "?":
        if field not in (3, 5):
            raise ValueError(text)
        return None
    bare = text.upper()
    for name in NAMES[field]:
        bare = bare.replace(name, "")
    if any(c in bare for c in "LW#"):
        raise Unsupported(text)
    out: set[int] = set()
    lo, hi = BOUNDS[field]
    for part in text.split(","):
        base, _, step = part.partition("/")
        if base == "*":
            a, b = lo, hi
        elif "-" in base:
            a, b = (_value(x, field) for x in base.split("-", 1))
        else:
            a = _value(base, field)
            b = hi if step else a
        n = int(step) if step else 1
        if n <= 0 or (a > b and WRAPS[field] is None):
            raise ValueError(part)
        out.update(_in_range(a, b, n, field))
    return out


def _in_range(a: int, b: int, step: int, field: int) -> list[int]:
    """CronExpression.addToSet: a range ending before it starts wraps past the field's end (22-2 in hours: 22,
    23, 0, 1, 2; FRI-MON), counted on and taken modulo the field's span, 0 read as the span in the 1-based
    fields (day of month, month, day of week); a year range cannot wrap (Quartz throws)."""
    if a <= b:
        return list(range(a, b + 1, step))
    span = WRAPS[field]
    return [i % span or (span if BOUNDS[field][0] == 1 else 0) for i in range(a, b + span + 1, step)]


def parse(expr: str) -> list[set[int] | None]:
    fields = expr.split()
    if len(fields) not in (6, 7):
        raise UsageError(f"deleteWhen {expr!r}: a Quartz cron expression has 6 or 7 fields")
    try:
        sets = [_field(f, i) for i, f in enumerate(fields)]
    except ValueError as e:
        raise UsageError(f"deleteWhen {expr!r}: {e} is not valid there (the broker fails to start with it)") from None
    if (sets[3] is None) == (sets[5] is None):
        raise UsageError(f"deleteWhen {expr!r}: exactly one of day-of-month and day-of-week must be '?'")
    return sets


def next_fire(expr: str, after: dt.datetime) -> dt.datetime | None:
    """The first time strictly after `after` (naive local time) at which `expr` fires; None when it uses
    L, W or # (not evaluated here) or never fires again."""
    try:
        sets = parse(expr)
    except Unsupported:
        return None
    secs, mins, hours, dom, months, dow = (sorted(s) if s is not None else None for s in sets[:6])
    years = sets[6] if len(sets) == 7 else None
    day = after.date()
    for _ in range(366 * 5):
        quartz_dow = day.isoweekday() % 7 + 1
        if (
            day.month in months
            and (years is None or day.year in years)
            and (dom is None or day.day in dom)
            and (dow is None or quartz_dow in dow)
        ):
            for h in hours:
                for m in mins:
                    for s in secs:
                        t = dt.datetime(day.year, day.month, day.day, h, m, s)
                        if t > after:
                            return t
        day += dt.timedelta(days=1)
    return None
