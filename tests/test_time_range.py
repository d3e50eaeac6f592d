"""`verify --since/--until` and the time range behind it (rmqctl.views.time_range), on real fixtures: the offset
range equals what a scan of every record gives, pruned files hold no message of the range, and the CLI's
exact output and exit codes."""

from __future__ import annotations

import datetime as dt

import pytest

from conftest import CLEAN_FIXTURES, broker_conf, fixture_dir, jsonl, one_line_error, run

from rmqctl import Store, load_config
from rmqctl.views.time_range import file_spans, narrow, offset_range


def store_of(name: str) -> Store:
    return Store(fixture_dir(name) / "store", load_config(broker_conf(name)))


def records(store: Store) -> list[tuple[int, int, int]]:
    """(offset, end, storeTimestamp) of every record (of its DLedger entry in a DLedger store), by the
    reference decoder."""
    out = []
    for f, m in store.scan().records():
        at, size = (m.dledger["entryFilePosition"], m.dledger["entrySize"]) if m.dledger else (m.position, m.storeSize)
        out.append((f.start + at, f.start + at + size, m.storeTimestamp))
    return out


@pytest.mark.parametrize("name", CLEAN_FIXTURES + ["d-crashed"])
def test_offset_range_is_the_scan_of_every_record(name):
    store = store_of(name)
    recs = records(store)
    stamps = sorted({t for _, _, t in recs})
    for lo, hi in [
        (stamps[len(stamps) // 4], stamps[len(stamps) // 2]),
        (None, stamps[0]),
        (stamps[-1], None),
        (stamps[-1] + 1, None),
        (None, stamps[0] - 1),
        (stamps[1], stamps[1]),
    ]:
        inside = [(o, e) for o, e, t in recs if (lo is None or t >= lo) and (hi is None or t <= hi)]
        assert offset_range(store, lo, hi) == ((inside[0][0], inside[-1][1]) if inside else None), (lo, hi)


def test_pruned_files_hold_no_message_of_the_range():
    """a-basic (40 files): a file the spans rule out holds no record stored in the range."""
    store = store_of("a-basic")
    recs = records(store)
    size = store.commitlog.file_size
    stamps = sorted(t for _, _, t in recs)
    lo, hi = stamps[800], stamps[1000]
    kept = [s.file.start for s in file_spans(store) if s.may_hold(lo, hi)]
    holding = sorted({o // size * size for o, _, t in recs if lo <= t <= hi})
    assert set(holding) <= set(kept) and len(kept) <= len(holding) + 1 < 40


def test_narrow_within_from_to():
    store = store_of("b-mixed")
    recs = records(store)
    lo, hi = recs[100][2], recs[200][2]
    first, end = offset_range(store, lo, hi)
    assert narrow(store, None, None, 5, 9) == (5, 9)
    assert narrow(store, lo, hi) == (first, end)
    assert narrow(store, lo, hi, first + 1, end - 1) == (first + 1, end - 1)
    assert narrow(store, lo, hi, end, None) == (0, 0)  # nothing of the range after --from
    assert narrow(store, recs[-1][2] + 1, None) == (0, 0)


def iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).isoformat(timespec="milliseconds")


def test_verify_since_until_on_the_cli():
    """d-crashed: the flipped body byte is found in a range holding its message (ISO with a zone, or epoch ms),
    not after it; the summary counts the records of the range; bad ranges are one line and exit 2."""
    import json

    from conftest import FIXTURES

    name = "d-crashed"
    args = ["verify", "--store", fixture_dir(name) / "store", "--broker-config", broker_conf(name), "--format", "jsonl"]
    flipped = json.loads((FIXTURES / name / "corruption.json").read_text())["flippedBodyByte"]["messageCommitLogOffset"]
    recs = records(store_of(name))
    at = next(t for o, _, t in recs if o == flipped)
    r = run(*args, "--since", iso(at), "--until", at)
    assert r.exit_code == 1
    assert [(f["kind"], f["commitLogOffset"]) for f in jsonl(r.stdout)] == [
        ("body-crc", flipped),
        ("abnormal-recovery", 655360),
    ]
    same_ms = sum(t == at for _, _, t in recs)
    assert r.stderr.startswith(f"verify: {same_ms} records, ") and r.stderr.endswith(
        "1 error(s), 1 info(s) — body-crc 1, abnormal-recovery 1\n"
    )
    r = run(*args, "--since", at + 1)
    assert r.exit_code == 0 and [f["kind"] for f in jsonl(r.stdout)] == ["abnormal-recovery"]
    assert r.stderr.startswith(f"verify: {sum(t > at for _, _, t in recs)} records, ")
    r = run(*args, "--until", recs[0][2] - 1)
    assert r.exit_code == 0 and r.stderr.startswith("verify: 0 records, 0.0 MB of commitlog")
    one_line_error(run(*args, "--since", at, "--until", at - 1), "--until is before --since")
    one_line_error(
        run(*args, "--since", "yesterday"), "--since 'yesterday' is not a time: epoch milliseconds, an ISO date-time"
    )


def test_verify_since_on_a_dledger_store():
    """e-dledger: the range is found by walking its entries; every record in it is checked, and sound."""
    name = "e-dledger"
    recs = records(store_of(name))
    r = run(
        "verify",
        "--store",
        fixture_dir(name) / "store",
        "--broker-config",
        broker_conf(name),
        "--since",
        recs[100][2],
        "--until",
        recs[199][2],
    )
    assert (r.exit_code, r.stdout) == (0, "")  # sound: no finding, and only the one-line summary on stderr
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("verify: ") and r.stderr.endswith(": sound\n")
    from rmqctl.checks.verify import verify

    store = store_of(name)
    start, end = narrow(store, recs[100][2], recs[199][2])
    result = verify(store, start=start, end=end)
    assert (result.exit_code, result.stats["records"]) == (
        0,
        sum(recs[100][2] <= t <= recs[199][2] for _, _, t in recs),
    )


ZONES = ["UTC", "Asia/Shanghai", "America/New_York", "Australia/Lord_Howe"]
# mqadmin's form: a plain day, the hour New York's clocks repeat (2024-11-03 01:xx) and skip (2024-03-10 02:xx),
# Lord Howe's half-hour shifts, a leap day
MQADMIN_TIMES = [
    "2024-06-01#00:00:30:000",
    "2024-11-03#01:30:00:250",
    "2024-11-03#00:59:59:999",
    "2024-11-03#02:00:00:000",
    "2024-03-10#02:30:00:000",
    "2024-03-10#03:00:00:000",
    "2024-04-07#01:45:00:000",
    "2024-10-06#02:15:00:000",
    "2024-02-29#23:59:59:999",
    "1717200030000",
]


@pytest.fixture
def zone(request):
    """The process's local zone set to request.param for the test (TZ, time.tzset), and set back after it."""
    import os
    import time

    before = os.environ.get("TZ")
    os.environ["TZ"] = request.param
    time.tzset()
    yield request.param
    if before is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = before
    time.tzset()


@pytest.mark.parametrize("zone", ZONES, indirect=True)
def test_a_time_without_a_zone_reads_as_mqadmin_reads_it(zone, java_oracle, tmp_path):
    """mqadmin's own parse (tests/java/ParseDate.java: Long.parseLong, else UtilAll.parseDate in the JVM's
    default zone), run in each zone, against rmqctl's: the same instant, the repeated and the skipped hour too
    (rmqctl took the earlier reading of a repeated hour, an hour before mqadmin's), and the ISO form of the same
    wall time alike."""
    import subprocess
    from pathlib import Path

    from rmqctl.javacompat import epoch_ms, parse_time
    from test_batchcq import oracle_classpath

    java = subprocess.run(
        ["java", f"-Duser.timezone={zone}", "-cp", oracle_classpath(java_oracle)]
        + [str(Path(__file__).parent / "java" / "ParseDate.java"), *MQADMIN_TIMES],
        capture_output=True,
        text=True,
        check=True,
    )
    want = [int(line) for line in java.stdout.splitlines()]
    assert [epoch_ms(parse_time(t)) for t in MQADMIN_TIMES] == want
    iso = [t.replace("#", "T").rsplit(":", 1)[0] + "." + t.rsplit(":", 1)[1] for t in MQADMIN_TIMES if "#" in t]
    assert [epoch_ms(parse_time(t)) for t in iso] == want[: len(iso)]


def test_every_time_option_takes_the_same_forms(store_copy):
    """clean --at took ISO alone (epoch milliseconds were a usage error) where every other time option takes
    both: one parser (javacompat.parse_time) now serves them all, mqadmin's form too."""
    root = store_copy("a-basic")
    conf = broker_conf("a-basic")
    for at in ("1717200030000", "2024-06-01T00:00:30+00:00", "2024-06-01#00:00:30:000"):
        res = run("clean", "--store", root, "--broker-config", conf, "--at", at, "--format", "jsonl")
        assert res.exit_code in (0, 1), res.stderr
    one_line_error(run("clean", "--store", root, "--at", "yesterday"), "--at 'yesterday' is not a time: epoch")
    # a long over its whole range, as mqadmin's Long.parseLong (Long.MAX_VALUE overflowed datetime), decimal digits only
    latest = run("offset-by-time", "TopicTest", "0", str(2**63 - 1), "--store", root, "--format", "jsonl")
    assert latest.exit_code == 0 and jsonl(latest.stdout)[0]["timestamp"] == 2**63 - 1
    one_line_error(run("offset-by-time", "TopicTest", "0", "\u00b2", "--store", root), "is not a time")
    rows = jsonl(run("offset-by-time", "TopicTest", "0", "2024-06-01#00:00:30:000", "--store", root).stdout)
    assert rows[0]["timestamp"] == int(dt.datetime(2024, 6, 1, 0, 0, 30).astimezone().timestamp() * 1000)
