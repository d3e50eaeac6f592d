"""Bad input and bad stores: a one-line message naming the file (and offset), exit 2, never a traceback."""

from __future__ import annotations

import os

import pytest

from conftest import FIXTURES, broker_conf, run


def assert_one_line_error(res, *needles):
    assert res.exit_code == 2, res.stdout + res.stderr
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert "Traceback" not in res.stderr
    assert any(all(n in line for n in needles) for line in lines), res.stderr
    return lines


def test_missing_store(tmp_path):
    res = run("dump", "commitlog", "--store", tmp_path / "nope")
    lines = assert_one_line_error(res, str(tmp_path / "nope"), "does not exist")
    assert len(lines) == 1


def test_wrong_geometry_is_refused_not_guessed():
    res = run(
        "dump", "commitlog", "--store", FIXTURES / "a-basic" / "store", "--broker-config", broker_conf("c-v5-features")
    )
    assert_one_line_error(res, "00000000000000000000", "mappedFileSizeCommitLog=131072")


def test_short_file_without_config_is_read_with_the_geometry_its_names_give(store_copy):
    """Every command infers the geometry as verify does (store.infer_file_size): a short last file is damage at
    its offset, not a store dump refuses."""
    store = store_copy("a-basic")
    last = sorted((store / "commitlog").iterdir())[-1]
    os.truncate(last, 5000)
    res = run("dump", "commitlog", "--store", store, "--body", "none")
    assert_one_line_error(res, last.name, "at commitlog offset")
    assert res.stdout.count("\n") > 1900


def _commitlog_of(store, keep: dict[int, int | None]) -> None:
    """Keep only the commitlog files numbered in `keep` (by their order), each cut to its length (None: as is)."""
    files = sorted((store / "commitlog").iterdir())
    for k, f in enumerate(files):
        if k not in keep:
            f.unlink()
        elif keep[k] is not None:
            os.truncate(f, keep[k])


@pytest.mark.parametrize(
    "keep",
    [
        {0: None, 1: None, 3: 1000},  # a short last file, and a file gone before it
        {0: None, 2: 5000},  # the names spaced 2 files apart, no file of that length: file 1 is missing
        {0: 5000, 1: 0},  # the one length with data is the short one; the names say 65536
    ],
)
def test_inconsistent_file_sizes_without_config(store_copy, keep):
    """Lengths and names that do not agree on one size are refused in every command, verify included: never a size
    that neither a file's length nor the names back (a false file-size finding on a sound file, a repair that
    leaves files the broker's load refuses)."""
    store = store_copy("a-basic")
    _commitlog_of(store, keep)
    for command in (["dump", "commitlog"], ["verify"], ["info"]):
        res = run(*command, "--store", store)
        assert_one_line_error(res, "inconsistent commitlog file sizes", "--broker-config")


def test_a_missing_file_between_full_ones_is_a_gap_not_a_refusal(store_copy):
    store = store_copy("a-basic")
    _commitlog_of(store, {k: None for k in range(40) if k != 2})
    res = run("verify", "--store", store, "--only", "commitlog")
    assert res.exit_code == 1, res.stderr
    assert '"kind":"file-gap"' in res.stdout


def test_truncated_last_file_names_file_and_offset(store_copy):
    store = store_copy("a-basic")
    last = sorted((store / "commitlog").iterdir())[-1]
    os.truncate(last, 5000)
    res = run("dump", "commitlog", "--store", store, "--broker-config", broker_conf("a-basic"), "--body", "none")
    assert_one_line_error(res, last.name, "at commitlog offset")
    assert res.stdout.count("\n") > 1900  # everything readable was still printed


def test_garbage_mid_file(store_copy):
    store = store_copy("a-basic")
    f = sorted((store / "commitlog").iterdir())[3]
    with open(f, "r+b") as fh:
        fh.seek(0)  # a record start: the header itself is garbage
        fh.write(b"\x13\x37" * 32)
    res = run("dump", "commitlog", "--store", store, "--broker-config", broker_conf("a-basic"), "--body", "none")
    assert_one_line_error(res, f.name, "at commitlog offset")


def test_zeroed_region_mid_commitlog_is_damage_not_the_end(store_copy):
    store = store_copy("a-basic")
    f = sorted((store / "commitlog").iterdir())[2]
    with open(f, "r+b") as fh:
        fh.seek(0)
        fh.write(bytes(65536))
    res = run("dump", "commitlog", "--store", store, "--broker-config", broker_conf("a-basic"), "--body", "none")
    assert_one_line_error(res, f.name, "at commitlog offset 131072")


def test_short_index_file(store_copy):
    store = store_copy("a-basic")
    ix = sorted((store / "index").iterdir())[0]
    os.truncate(ix, 20)
    res = run("dump", "index", "--store", store, "--broker-config", broker_conf("a-basic"))
    assert_one_line_error(res, ix.name)


def test_bad_broker_config_value(tmp_path):
    """A number the broker cannot parse keeps its default (properties2Object ignores the failure): said in a
    note, then read with the broker's 1 GiB files, which a-basic's are not."""
    conf = tmp_path / "broker.conf"
    conf.write_text("mappedFileSizeCommitLog=lots\n")
    res = run("dump", "commitlog", "--store", FIXTURES / "a-basic" / "store", "--broker-config", conf)
    assert res.exit_code == 2 and "Traceback" not in res.stderr
    note, error = res.stderr.splitlines()
    assert (
        note
        == f"rmqctl: note: {conf}: mappedFileSizeCommitLog='lots' is not a number to the broker, which keeps its default 1073741824"
    )
    assert error.endswith(
        "file is 65536 bytes but mappedFileSizeCommitLog=1073741824; wrong broker config for this store?"
    )


def test_missing_consumequeue():
    res = run("dump", "consumequeue", "NoSuchTopic", "0", "--store", FIXTURES / "a-basic" / "store")
    assert_one_line_error(res, "NoSuchTopic", "no such consumequeue")


@pytest.mark.parametrize("args", [["locate", "99999999999"], ["msgid", "lookup", "C0A8000A00002A9F7FFFFFFFFFFFFFFF"]])
def test_offsets_outside_the_store_do_not_crash(args):
    res = run(
        *args, "--store", FIXTURES / "a-basic" / "store", "--broker-config", broker_conf("a-basic"), "--format", "jsonl"
    )
    assert res.exit_code in (0, 1) and "Traceback" not in res.stderr


def test_an_internal_error_is_one_line_and_exit_2_not_a_finding(monkeypatch):
    """A bug of rmqctl's own (here: info's library call failing) must not exit 1, which verify uses for
    findings, nor print a traceback; RMQCTL_DEBUG=1 lets it through for a bug report."""
    from rmqctl.views import inspect

    def broken(store, *_):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(inspect, "info", broken)
    store = FIXTURES / "a-basic" / "store"
    r = run("info", "--store", store)
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr.splitlines() == [
        "rmqctl: internal error (ZeroDivisionError: division by zero): a bug in rmqctl, "
        "not a finding about the store; please report it with the command line "
        "(RMQCTL_DEBUG=1 shows where)"
    ]
    monkeypatch.setenv("RMQCTL_DEBUG", "1")
    with pytest.raises(ZeroDivisionError):
        run("info", "--store", store)
