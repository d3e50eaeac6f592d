"""verify in windows of commitlog offsets finds exactly what the whole-store pass finds: every fixture and
randomly damaged copies (benchmarks/torture.py's mutators), checked with windows of 1, 3 and 7 records (a
boundary after every record, and at spacings prime to each other) against one window holding every record (the
differential proof of checks/windows.py)."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from rmqctl import schema as S
from rmqctl.config import load_config
from rmqctl.errors import StoreError
from rmqctl.checks.verify import verify
from rmqctl.store import Store

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import torture  # noqa: E402

ROCKETMQ = [name for name in torture.fixtures() if name != "g-metaq"]
WINDOWS = (1, 3, 7)
WHOLE = 1 << 40


def _findings(root: Path, conf, window: int, **kw) -> list[tuple]:
    store = Store(root, load_config(str(conf)) if conf else None)
    result = verify(store, window=window, jobs=1, **kw)
    return [(f.kind, f.severity, f.file, f.position, f.commitLogOffset, f.detail) for f in result.findings]


def _same(root: Path, conf, **kw) -> bool:
    """Windows find what the whole-store pass finds, or refuse with its very words when it refuses. Whether
    the whole pass answered (False: it refused)."""
    try:
        whole = _findings(root, conf, WHOLE, **kw)
    except StoreError as refused:
        for window in WINDOWS:
            with pytest.raises(StoreError) as in_windows:
                _findings(root, conf, window, **kw)
            assert str(in_windows.value) == str(refused), f"window of {window} record(s)"
        return False
    for window in WINDOWS:
        assert _findings(root, conf, window, **kw) == whole, f"window of {window} record(s)"
    return True


@pytest.mark.parametrize("name", ROCKETMQ)
def test_fixture_windows_find_the_same(name, tmp_path):
    root = torture.copy_store(name, tmp_path / "store")
    conf = torture.conf_of(name)
    assert _same(root, conf, deep=True)
    # a store whose queues this version does not read (RocksDB) refuses a consumequeue-only verify, in windows too
    queues_read = Store(root, load_config(str(conf)) if conf else None).parts.queues_read
    assert _same(root, conf, only="consumequeue") == queues_read


@pytest.mark.parametrize("name", ["b-mixed", "d-crashed"])
@pytest.mark.parametrize("limits", [dict(start=3000), dict(end=9000), dict(start=2000, end=20000, deep=True)])
def test_ranges_windows_find_the_same(name, limits, tmp_path):
    root = torture.copy_store(name, tmp_path / "store")
    assert _same(root, torture.conf_of(name), **limits)


@pytest.mark.parametrize("seed", range(12))
def test_damaged_copy_windows_find_the_same(seed, tmp_path):
    rng = random.Random(seed)
    name = ROCKETMQ[seed % len(ROCKETMQ)]
    root = torture.copy_store(name, tmp_path / "store")
    outside = tmp_path / "outside"
    outside.mkdir()
    torture.mutate(root, rng, outside, torture.Profile(name))
    _same(root, torture.conf_of(name), deep=True)


@pytest.mark.parametrize("seed", range(4))
def test_damaged_copy_index_checked_a_block_at_a_time(seed, tmp_path, monkeypatch):
    """A window's index entries are checked a block at a time (their columns never all held at once): with
    blocks of 3 entries, windows of a few records find what one window with whole-file blocks finds, on
    damaged copies whose index files mostly still go forward (the slice found by binary search)."""
    import rmqctl.checks.links as links

    rng = random.Random(100 + seed)
    name = ROCKETMQ[seed % len(ROCKETMQ)]
    root = torture.copy_store(name, tmp_path / "store")
    outside = tmp_path / "outside"
    outside.mkdir()
    torture.mutate(root, rng, outside, torture.Profile(name))
    base = S.INDEX_HEADER_SIZE + torture.Profile(name).slots * S.HASH_SLOT_SIZE
    for path in sorted((root / "index").iterdir()):  # the first entries' timeDiffs off: some open a block
        data = bytearray(path.read_bytes())
        for k in range(1, 9):
            at = base + k * S.INDEX_ENTRY_SIZE + S.INDEX_ENTRY_AT["timeDiff"]
            data[at : at + 4] = (int.from_bytes(data[at : at + 4], "big") + 1000).to_bytes(4, "big")
        path.write_bytes(bytes(data))
    try:
        whole = _findings(root, torture.conf_of(name), WHOLE, deep=True)
    except StoreError:
        return
    assert any(f[0] == "index-entry-mismatch" and "timeDiff" in f[5] for f in whole)
    monkeypatch.setattr(links, "ENTRY_BLOCK", 3)
    for window in (*WINDOWS, WHOLE):
        assert _findings(root, torture.conf_of(name), window, deep=True) == whole, f"window of {window} record(s)"


def test_memory_sizes_the_window():
    from rmqctl.checks.windows import BYTES_PER_RECORD, FIXED_BYTES, MIN_WINDOW_RECORDS, window_records

    assert window_records(256 << 20) == ((256 << 20) - FIXED_BYTES) // BYTES_PER_RECORD
    # below the fixed part and a floor of records: as much as the floor (a window of one record at a time took
    # a 537 MB store's verify from 2 s to past 400 s: each window is a pass over every queue and index file)
    assert window_records(1 << 20) == window_records(FIXED_BYTES) == MIN_WINDOW_RECORDS


def test_memory_option_on_the_command_line(tmp_path):
    import subprocess

    root = torture.copy_store("a-basic", tmp_path / "store")
    conf = str(torture.conf_of("a-basic"))
    small = subprocess.run(
        ["rmqctl", "verify", "--store", str(root), "--broker-config", conf, "--memory", "1M", "--format", "jsonl"],
        capture_output=True,
        text=True,
    )
    default = subprocess.run(
        ["rmqctl", "verify", "--store", str(root), "--broker-config", conf, "--format", "jsonl"],
        capture_output=True,
        text=True,
    )
    assert (small.returncode, small.stdout) == (default.returncode, default.stdout)
    bad = subprocess.run(["rmqctl", "verify", "--store", str(root), "--memory", "lots"], capture_output=True, text=True)
    assert bad.returncode == 2 and "--memory" in bad.stderr


def _damage_links(root: Path, rng: random.Random, slots: int):
    """Index entries and consumequeue units swapped (the files no longer go forward), links and slots
    rewritten: the files whose check passes over every entry rather than a window's slice."""
    for path in rng.sample(sorted(p for p in (root / "consumequeue").rglob("*") if p.is_file()), 2):
        data = bytearray(path.read_bytes())
        units = [k for k in range(len(data) // S.CQ_UNIT_SIZE) if any(data[k * S.CQ_UNIT_SIZE :][: S.CQ_UNIT_SIZE])]
        if len(units) >= 2:
            _swap(data, *(k * S.CQ_UNIT_SIZE for k in rng.sample(units, 2)), S.CQ_UNIT_SIZE)
            path.write_bytes(bytes(data))
    for path in rng.sample(sorted((root / "index").iterdir()), 2):
        data = bytearray(path.read_bytes())
        count = int.from_bytes(data[torture.INDEX_COUNT_AT : torture.INDEX_COUNT_AT + 4], "big")
        base = S.INDEX_HEADER_SIZE + slots * S.HASH_SLOT_SIZE
        if count < 4:
            continue
        _swap(data, *(base + k * S.INDEX_ENTRY_SIZE for k in rng.sample(range(1, count), 2)), S.INDEX_ENTRY_SIZE)
        k = rng.randrange(1, count)
        prev_at = base + k * S.INDEX_ENTRY_SIZE + torture.PREV_INDEX_AT
        data[prev_at : prev_at + 4] = rng.choice([0, k, count + 3]).to_bytes(4, "big")
        slot_at = S.INDEX_HEADER_SIZE + rng.randrange(slots) * S.HASH_SLOT_SIZE
        data[slot_at : slot_at + 4] = rng.randrange(count).to_bytes(4, "big")
        path.write_bytes(bytes(data))


def _swap(data: bytearray, a: int, b: int, size: int):
    data[a : a + size], data[b : b + size] = data[b : b + size], data[a : a + size]


@pytest.mark.parametrize("seed", range(4))
def test_damaged_links_windows_find_the_same_a_block_at_a_time(seed, tmp_path, monkeypatch):
    """A damaged index or consumequeue file is read a block at a time, each block masked to the window (not
    every entry of the file held per window), and an index file's links replayed per slot: with blocks of 3
    entries and 2 units, windows of a few records find what one window with whole-file blocks finds, and
    no mask is longer than a block or a window."""
    import rmqctl.checks.consumequeue as cq
    import rmqctl.checks.links as links
    import rmqctl.checks.windows as windows

    name = ["a-basic", "b-mixed"][seed % 2]
    root = torture.copy_store(name, tmp_path / "store")
    _damage_links(root, random.Random(seed), torture.Profile(name).slots)
    whole = _findings(root, torture.conf_of(name), WHOLE, deep=True)
    assert any(f[0] in ("index-order", "index-chain") for f in whole)
    blocks = []
    real = links.index_entries
    monkeypatch.setattr(links, "ENTRY_BLOCK", 3)
    monkeypatch.setattr(cq, "UNIT_BLOCK", 2)
    monkeypatch.setattr(links, "index_entries", lambda u8, at, n, slots: blocks.append(n - 1) or real(u8, at, n, slots))
    masks = []
    holds = windows.Window.holds
    monkeypatch.setattr(windows.Window, "holds", lambda w, offsets: masks.append(len(offsets)) or holds(w, offsets))
    for window in WINDOWS:
        assert _findings(root, torture.conf_of(name), window, deep=True) == whole, f"window of {window} record(s)"
    assert blocks and max(blocks) == 3 and masks and max(masks) <= max(WINDOWS)


def test_a_chunk_walked_again_holds_arrays_the_size_of_its_records():
    """verify's windows walk a chunk again knowing how many records it holds: the walk's arrays are sized to
    them, not to the first walk's guess of a 512-byte record (the chunks walked ahead are held meanwhile)."""
    from rmqctl.checks import commitlog as verify_commitlog
    from rmqctl.checks.verify import start_run
    from rmqctl.checks.scan import scan_chunk
    from rmqctl.checks.windows import with_columns

    store = Store(torture.FIXTURES / "b-mixed" / "store", load_config(str(torture.conf_of("b-mixed"))))
    ctx = start_run(store, None, None, None, False, 1)
    results, _, kept = verify_commitlog.scan(ctx, verify_commitlog.plan(ctx), keep=0)
    dropped = [r for rs in results for r in rs if r.count]
    assert not kept and dropped and all(len(r.pos) == 0 for r in dropped)
    for r in dropped:
        again = with_columns(scan_chunk, r)
        assert again.count == len(again.pos) == r.count
        first_walk = scan_chunk(r.task)
        assert again.pos.base.shape[1] == r.count + 1 < first_walk.pos.base.shape[1]
        assert all((getattr(again, c) == getattr(first_walk, c)).all() for c in verify_commitlog.COLUMNS)


def test_a_window_is_freed_before_the_next_is_checked(monkeypatch):
    """Nothing of a run keeps a window's records once the checks are done with it (a cache on the run held
    them while the next window was made: two windows at a time)."""
    import gc
    import weakref

    from rmqctl.checks.consumequeue import ConsumeQueueCheck

    earlier, alive = [], []
    check = ConsumeQueueCheck.window

    def window(self, w):  # the first check each window meets
        gc.collect()
        alive.append(sum(r() is not None for r in earlier))
        earlier.append(weakref.ref(w.rec))
        return check(self, w)  # (its findings)

    monkeypatch.setattr(ConsumeQueueCheck, "window", window)
    store = Store(torture.FIXTURES / "b-mixed" / "store", load_config(str(torture.conf_of("b-mixed"))))
    verify(store, window=50, jobs=2, deep=True)
    assert len(alive) > 3 and not any(alive)
