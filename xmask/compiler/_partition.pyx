"""Compile-time kernel: one round of Moore partition refinement, exact, O(states x columns).

A state's signature is its block followed by the blocks of its targets (one per column, -1 for
no target).  States are grouped by signature with an open-addressing hash table whose slots hold
a representative state; a probe compares the full signature with the representative's, so two
different signatures never share a block (the hash only picks the slot).  The pure-numpy twin is
``automaton.refine_partition_reference``; both number blocks differently but partition alike.
"""

import numpy as np

from libc.stdint cimport int32_t, int64_t, uint64_t
from libc.stdlib cimport malloc, free

from xmask.runtime._types cimport intp_t


cdef inline int64_t _target_block(const int64_t[::1] block, int32_t t) noexcept nogil:
    return -1 if t < 0 else block[t]


cdef inline bint _same(const int64_t[::1] block, const int32_t[:, ::1] table, intp_t a, intp_t b,
                       intp_t width) noexcept nogil:
    cdef intp_t c
    if block[a] != block[b]:
        return False
    for c in range(width):
        if _target_block(block, table[a, c]) != _target_block(block, table[b, c]):
            return False
    return True


def refine_round(const int64_t[::1] block, const int32_t[:, ::1] table):
    """New dense block ids (int64, numbered by first appearance) after one refinement round."""
    cdef intp_t n = table.shape[0], width = table.shape[1], s, c, cap = 1
    cdef uint64_t h
    cdef int64_t next_id = 0
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] ob = out
    if n == 0:
        return out
    while cap < 2 * n:
        cap <<= 1
    cdef intp_t* slots = <intp_t*>malloc(cap * sizeof(intp_t))
    if slots == NULL:
        raise MemoryError()
    try:
        with nogil:
            for s in range(cap):
                slots[s] = -1
            for s in range(n):
                h = <uint64_t>block[s] * 0x9E3779B97F4A7C15ULL
                for c in range(width):
                    h = (h ^ <uint64_t>(_target_block(block, table[s, c]) + 1)) * 0x100000001B3ULL
                    h ^= h >> 29
                h &= <uint64_t>(cap - 1)
                while True:
                    if slots[h] < 0:
                        slots[h] = s
                        ob[s] = next_id
                        next_id += 1
                        break
                    if _same(block, table, slots[h], s, width):
                        ob[s] = ob[slots[h]]
                        break
                    h = (h + 1) & <uint64_t>(cap - 1)
    finally:
        free(slots)
    return out
