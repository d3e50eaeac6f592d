"""verify's record checks over a DLedger data file: the record of each entry body goes through verify's own
walk (native/verify.py), one record per entry, so every check and flag is the plain commitlog's. Only the
stepping differs: from entry body to entry body (positions from the entry walk of rmqctl.dledger), not by
TOTALSIZE, since a 48-byte entry header sits before every record.
"""
from __future__ import annotations

from . import kernel
from .verify import ENDED, S_POS, walk


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
