"""The engine's Arrow columns, built in machine code from the decode's spans: text and bytes gathered into
one buffer with Arrow's offsets, hosts and msgIds written as text, the properties as map entries (a name
given twice keeps its first place and its last value, as the reference's dict does) and the KEYS words
(rules.next_key_word); and what `dump commitlog`'s content filters ask of the spans (any property's value,
a KEYS word)."""

from __future__ import annotations

import numpy as np

from .kernels import copy_span, find_name, kernel, property_segment, read_properties
from .jsonl_kernels import put_ipv4, put_msgid
from .record import next_key_word


@kernel
def gather(u8, lo, hi, out, offsets):
    """Copy the spans u8[lo[i]:hi[i]] (lo < 0 or hi <= lo: empty) one after another into `out`, writing
    len(lo) + 1 Arrow offsets. Returns the bytes written."""
    o = 0
    offsets[0] = 0
    for i in range(len(lo)):
        a, b = lo[i], hi[i]
        if a >= 0 and b > a:
            o = copy_span(out, o, u8, a, b - a)
        offsets[i + 1] = o
    return o


@kernel
def host_texts(u8, ip_at, port, out, offsets):
    """ "a.b.c.d:port" of each IPv4 host (the caller writes IPv6 hosts itself)."""
    o = 0
    offsets[0] = 0
    for i in range(len(ip_at)):
        o = put_ipv4(out, o, u8, ip_at[i], port[i])
        offsets[i + 1] = o
    return o


@kernel
def msgid_texts(u8, position, store_ip_at, store_ip_len, out, offsets):
    """Each record's msgId (put_msgid)."""
    o = 0
    offsets[0] = 0
    for i in range(len(position)):
        o = put_msgid(out, o, u8, position[i], store_ip_at[i], store_ip_len[i])
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
                seen = find_name(u8, name_lo, name_hi, first, n, i, sep)
                if seen >= 0:
                    value_lo[seen], value_hi[seen] = sep + 1, j
                else:
                    name_lo[n], name_hi[n], value_lo[n], value_hi[n] = i, sep, sep + 1, j
                    n += 1
            i = j + 1
        offsets[r + 1] = n
    return n


@kernel
def key_words(u8, lo, hi, word_lo, word_hi, offsets):
    """The words the broker indexes (rules.next_key_word) of each KEYS value u8[lo[r]:hi[r]] (lo < 0: no
    KEYS). Returns the words written."""
    n = 0
    offsets[0] = 0
    for r in range(len(lo)):
        if lo[r] >= 0:
            a, b = next_key_word(u8, lo[r], hi[r])
            while a < b:
                word_lo[n], word_hi[n] = a, b
                n += 1
                a, b = next_key_word(u8, b, hi[r])
        offsets[r + 1] = n
    return n


def most_entries(props_len: np.ndarray) -> int:
    """Room for every pair: a pair takes 3 bytes and a separator."""
    return int(props_len.sum()) // 3 + len(props_len) + 1


@kernel
def property_values(u8, props_at, props_len, names, name_lens, value_lo, value_hi):
    """The value span of each name (property_names) in each record's property string, as MessageDecoder
    parses it (a later pair wins): value_lo[r, k] / value_hi[r, k], -1 where record r has no name k."""
    lo = np.empty(len(name_lens), np.int64)
    hi = np.empty(len(name_lens), np.int64)
    for r in range(len(props_at)):
        read_properties(u8, props_at[r], props_at[r] + props_len[r], names, name_lens, lo, hi)
        value_lo[r, :] = lo
        value_hi[r, :] = hi


@kernel
def holds_word(u8, lo, hi, word, out):
    """Whether each KEYS value u8[lo[r]:hi[r]] (lo < 0: no KEYS) has `word` among the words the broker
    indexes (rules.next_key_word)."""
    for r in range(len(lo)):
        out[r] = False
        if lo[r] < 0:
            continue
        a, b = next_key_word(u8, lo[r], hi[r])
        while a < b and not out[r]:
            if b - a == len(word):
                out[r] = True
                for c in range(b - a):
                    if u8[a + c] != word[c]:
                        out[r] = False
                        break
            a, b = next_key_word(u8, b, hi[r])
