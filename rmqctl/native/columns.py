"""The engine's Arrow columns, built in machine code from the decode's spans: text and bytes gathered into
one buffer with Arrow's offsets, hosts and msgIds written as text, the properties as map entries (a name
given twice keeps its first place and its last value, as the reference's dict does) and the KEYS words
(IndexService.buildIndex: split on the separator, empty words skipped)."""
from __future__ import annotations

import numpy as np

from . import kernel, property_segment
from .jsonl import HEX_UPPER, put_int, put_ipv4
from .record import PHYSICAL_OFFSET_AT


@kernel
def gather(u8, lo, hi, out, offsets):
    """Copy the spans u8[lo[i]:hi[i]] (lo < 0 or hi <= lo: empty) one after another into `out`, writing
    len(lo) + 1 Arrow offsets. Returns the bytes written."""
    o = 0
    offsets[0] = 0
    for i in range(len(lo)):
        a, b = lo[i], hi[i]
        if a >= 0 and b > a:
            out[o:o + b - a] = u8[a:b]
            o += b - a
        offsets[i + 1] = o
    return o


@kernel
def host_texts(u8, ip_at, port, out, offsets):
    """"a.b.c.d:port" of each IPv4 host (the caller writes IPv6 hosts itself)."""
    o = 0
    offsets[0] = 0
    for i in range(len(ip_at)):
        o = put_ipv4(out, o, u8, ip_at[i], port[i])
        offsets[i + 1] = o
    return o


@kernel
def msgid_texts(u8, position, store_ip_at, store_ip_len, out, offsets):
    """MessageDecoder.createMessageId: store address, port and PHYSICALOFFSET as upper-case hex."""
    o = 0
    offsets[0] = 0
    for i in range(len(position)):
        a = store_ip_at[i]
        for k in range(store_ip_len[i] + 4):
            b = u8[a + k]
            out[o] = HEX_UPPER[b >> 4]
            out[o + 1] = HEX_UPPER[b & 15]
            o += 2
        p = position[i] + PHYSICAL_OFFSET_AT
        for k in range(8):
            b = u8[p + k]
            out[o] = HEX_UPPER[b >> 4]
            out[o + 1] = HEX_UPPER[b & 15]
            o += 2
        offsets[i + 1] = o
    return o


@kernel
def property_entries(u8, props_at, props_len, name_lo, name_hi, value_lo, value_hi, offsets):
    """The pairs of each record's property string as map entries (spans), in order, a repeated name keeping
    its first place and taking the later value. Returns the entries written."""
    n = 0
    offsets[0] = 0
    for r in range(len(props_at)):
        first = n
        i = props_at[r]
        hi = i + props_len[r]
        while i < hi:
            j, sep, _, _ = property_segment(u8, i, hi)
            if sep >= 0:
                seen = -1
                for e in range(first, n):
                    if name_hi[e] - name_lo[e] == sep - i:
                        same = True
                        for c in range(sep - i):
                            if u8[name_lo[e] + c] != u8[i + c]:
                                same = False
                                break
                        if same:
                            seen = e
                            break
                if seen >= 0:
                    value_lo[seen], value_hi[seen] = sep + 1, j
                else:
                    name_lo[n], name_hi[n], value_lo[n], value_hi[n] = i, sep, sep + 1, j
                    n += 1
            i = j + 1
        offsets[r + 1] = n
    return n


@kernel
def split_words(u8, lo, hi, separator, word_lo, word_hi, offsets):
    """The non-empty words of each span u8[lo[r]:hi[r]] split on `separator` (no span: no words).
    Returns the words written."""
    n = 0
    offsets[0] = 0
    for r in range(len(lo)):
        if lo[r] >= 0:
            start = lo[r]
            for i in range(lo[r], hi[r] + 1):
                if i == hi[r] or u8[i] == separator:
                    if i > start:
                        word_lo[n], word_hi[n] = start, i
                        n += 1
                    start = i + 1
        offsets[r + 1] = n
    return n


def most_entries(props_len: np.ndarray) -> int:
    """Room for every pair: a pair takes 3 bytes and a separator."""
    return int(props_len.sum()) // 3 + len(props_len) + 1
