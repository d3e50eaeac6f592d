"""info's commitlog end (views.inspect.commitlog_end): past COMPILED_END_FROM bytes of records in the last file
it is read on the compiled walk, which must answer exactly what the reference's record walk answers, damage
included."""

from __future__ import annotations

import json

import pytest
from bench_rebuild import generate

from conftest import patch, run
from rmqctl.config import BrokerConfig
from rmqctl.store import Store, offset_to_name
from rmqctl.views import inspect

FILE_SIZE = 20 << 20


@pytest.fixture(scope="module")
def big_store(tmp_path_factory):
    root = tmp_path_factory.mktemp("end") / "store"
    generate(root, FILE_SIZE)
    return root


def both_ends(root, monkeypatch) -> tuple:
    store = Store(root, BrokerConfig(mappedFileSizeCommitLog=FILE_SIZE))
    assert inspect.end_kernels(store)
    compiled = inspect.commitlog_end(store)
    with monkeypatch.context() as m:
        m.setattr(inspect, "COMPILED_END_FROM", 1 << 40)
        assert not inspect.end_kernels(store)
        reference = inspect.commitlog_end(store)
    store.close()
    return compiled, reference


def summary(answer) -> tuple:
    end, errors = answer
    return end, [(f.name, pos, type(e).__name__, e.detail) for f, pos, e in errors]


@pytest.mark.parametrize(
    "damage",
    [
        None,
        (18 << 20, b"\x00\x00\x00\x07"),  # a TOTALSIZE no record has, past the threshold
        (17 << 20, b"\xff" * 64),  # bytes that are no record, then records again
    ],
)
def test_the_compiled_end_is_the_references(big_store, tmp_path, monkeypatch, damage):
    root = tmp_path / "store"
    (root / "commitlog").mkdir(parents=True)
    path = root / "commitlog" / offset_to_name(0)
    path.write_bytes((big_store / "commitlog" / offset_to_name(0)).read_bytes())
    if damage is not None:
        # the damage lands on the first record at or after the offset
        store = Store(root, BrokerConfig(mappedFileSizeCommitLog=FILE_SIZE))
        at = next(m.position for _, m in store.scan().records(start=damage[0]))
        store.close()
        patch(path, at, damage[1])
    compiled, reference = both_ends(root, monkeypatch)
    assert summary(compiled) == summary(reference)
    assert (summary(compiled)[1] != []) == (damage is not None)


def test_a_short_last_file_is_read_by_the_reference(tmp_path):
    """A store with little data (examples/store) is read without the kernels: `info` starts without numba."""
    store = Store("examples/store", BrokerConfig())
    assert inspect.end_kernels(store) == ()
    store.close()


def test_info_reads_the_end_on_the_compiled_walk(big_store, tmp_path, monkeypatch):
    conf = tmp_path / "broker.conf"
    conf.write_text(f"mappedFileSizeCommitLog={FILE_SIZE}\n")
    res = run("info", "--store", str(big_store), "--format", "json", "--broker-config", str(conf))
    assert res.exit_code == 0, res.output
    info = json.loads(res.stdout)
    (end, _), _ = both_ends(big_store, monkeypatch)
    assert inspect.COMPILED_END_FROM < end < FILE_SIZE  # the BLANK closing the file is no record
    assert info["commitlog"]["maxOffset"] == end
    assert info["startup"]["commitlogBytes"] == end
