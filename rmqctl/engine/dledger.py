"""verify's record checks over a DLedger data file: the record of each entry body goes through verify's own
walk (engine/checks.py), one record per entry, so every check and flag is the plain commitlog's. Only the
stepping differs: from entry body to entry body (positions from the entry walk of rmqctl.dledger), not by
TOTALSIZE, since a 48-byte entry header sits before every record.
"""

from __future__ import annotations

from .. import schema as S
from .kernels import be32, kernel, prefetch
from .checks import ENDED, S_POS, walk

ENTRY_HEAD = S.DLEDGER_ENTRY_HEADER.size


def _field_at(schema, name: str) -> int:
    fields = S.fixed_fields(schema)
    return sum(S.struct.calcsize(">" + code[1:]) for _, code in fields[: [n for n, _ in fields].index(name)])


MAGIC_AT, SIZE_AT = (_field_at(S.DLedgerEntryHeader, name) for name in ("magic", "size"))
# the walk reads both from the head it stands at before knowing which it is: the BLANK's are at the same place
assert (MAGIC_AT, SIZE_AT) == tuple(_field_at(S.DLedgerBlank, name) for name in ("magic", "size"))
# how an entry walk ends (dledger.walk_entries words each one)
REACHED, FILE_END, BLANK, ZERO_SIZE, SHORT_HEAD, ILLEGAL_MAGIC, SMALL_SIZE, PAST_END = range(8)


@kernel
def entry_heads(u8, limit, start, stop, out):
    """The entries of a data file from `start` (an entry start) by their size fields, as MmapFileList's
    readers and DLedgerMmapFileStore.recover step: each entry's position into `out` while entries start
    before `stop` and `out` has room. Returns (entries, where the walk ended, why): REACHED (at or past
    `stop`, or `out` full), FILE_END (less than a BLANK's 8 bytes left), BLANK (the BLANK that ends a full
    file), ZERO_SIZE (a size of 0: the end of the data), or what keeps the next entry from being located (a
    header that does not fit, a magic other than DLedger's, a size smaller than the header or running past
    the file)."""
    n, p = 0, start
    while p + S.DLEDGER_MIN_BLANK <= limit:
        if p >= stop or n == len(out):
            return n, p, REACHED
        magic, size = be32(u8, p + MAGIC_AT), be32(u8, p + SIZE_AT)
        if magic == S.DLEDGER_BLANK_MAGIC:
            return n, p, BLANK
        if size == 0:
            return n, p, ZERO_SIZE
        if p + ENTRY_HEAD > limit:
            return n, p, SHORT_HEAD
        if magic != S.DLEDGER_MAGIC:
            return n, p, ILLEGAL_MAGIC
        if size < ENTRY_HEAD:
            return n, p, SMALL_SIZE
        if p + size > limit:
            return n, p, PAST_END
        prefetch(u8, p + size)
        out[n] = p
        n += 1
        p += size
    return n, p, FILE_END


@kernel
def walk_bodies(u8, starts, ends, first, claim_from, file_start, options, records, keys, topics, table, state):
    """Check the record at starts[i] (inside the entry body that ends at ends[i]) for i = first, first + 1, ...
    Returns (ENDED, len(starts)) when all are done, (BROKEN, i) when read_record refuses the record of
    entry i, (FULL, i) when an output must grow before entry i is checked again."""
    for i in range(first, len(starts)):
        state[S_POS] = starts[i]
        status = walk(u8, ends[i], starts[i] + 1, claim_from, file_start, options, records, keys, topics, table, state)
        if status != ENDED:
            return status, i
    return ENDED, len(starts)
