# cython: language_level=3
"""Token-mask cache entries: built from a classification's token sets, in the smallest of
three forms (accepted ids, rejected ids, accepted bitset), hashed and compared for
deduplication.  See _cache_entry.pxd for the layout."""

from libc.stdlib cimport malloc
from libc.string cimport memcpy, memset

from xmask.runtime._types cimport int32_t, uint8_t, uint32_t, uint64_t, word_t, intp_t
from xmask.runtime._types cimport XM_KIND_ACCEPTED, XM_KIND_REJECTED, XM_KIND_BITSET
from xmask.runtime._tables cimport VocabC
from xmask.runtime._bitset cimport bitset_set

cdef extern from *:
    int __builtin_ctz(unsigned int x) nogil


cdef CacheEntryC* entry_new(uint8_t kind, intp_t n_data, intp_t n_unc, intp_t n_acc,
                            intp_t n_rej) except NULL nogil:
    """An unsealed entry with room for its data and unc arrays (fill them, then entry_seal)."""
    cdef size_t header = (sizeof(CacheEntryC) + 7) & ~(<size_t>7)
    cdef CacheEntryC* e = <CacheEntryC*>malloc(header + <size_t>(n_data + n_unc + 1)
                                               * sizeof(int32_t))
    if e == NULL:
        with gil:
            raise MemoryError()
    e.kind = kind
    e.n_data = n_data
    e.n_unc = n_unc
    e.n_acc = n_acc
    e.n_rej = n_rej
    e.hash = 0
    e.data = <const int32_t*>((<char*>e) + header)
    e.unc = e.data + n_data
    return e


cdef void entry_seal(CacheEntryC* e) noexcept nogil:
    # FNV-1a over the kind and both arrays: the dedup key
    cdef uint64_t h = 0xCBF29CE484222325ULL ^ e.kind
    cdef intp_t k
    h = (h ^ <uint64_t>e.n_data) * 0x100000001B3ULL
    h = (h ^ <uint64_t>e.n_unc) * 0x100000001B3ULL
    for k in range(e.n_data):
        h = (h ^ <uint32_t>e.data[k]) * 0x100000001B3ULL
    for k in range(e.n_unc):
        h = (h ^ <uint32_t>e.unc[k]) * 0x100000001B3ULL
    e.hash = h


cdef bint entry_equal(const CacheEntryC* x, const CacheEntryC* y) noexcept nogil:
    cdef intp_t k
    if (x.hash != y.hash or x.kind != y.kind or x.n_data != y.n_data or x.n_unc != y.n_unc):
        return False
    for k in range(x.n_data):
        if x.data[k] != y.data[k]:
            return False
    for k in range(x.n_unc):
        if x.unc[k] != y.unc[k]:
            return False
    return True


cdef void _ids_of_marks(word_t* marks, const word_t* eligible, intp_t n_words,
                        int32_t* out) noexcept nogil:
    # The ids of the bits of `marks` (eligible NULL) or of `eligible` but `marks`, ascending,
    # into `out`; clears `marks`.
    cdef intp_t w, m = 0
    cdef word_t bits
    for w in range(n_words):
        bits = marks[w] if eligible == NULL else eligible[w] & ~marks[w]
        marks[w] = 0
        while bits:
            out[m] = <int32_t>((w << 5) + __builtin_ctz(bits))
            m += 1
            bits &= bits - 1


cdef CacheEntryC* entry_from_sets(const VocabC* v, const int32_t* acc, intp_t n_list,
                                  word_t* marks, intp_t n_bits, const int32_t* unc,
                                  intp_t n_unc) except NULL nogil:
    """The sealed entry of a state whose accepted tokens are the sorted positions
    ``acc[0:n_list]`` and the ``n_bits`` ids set in ``marks`` (a scratch bitset of n_words,
    all-zero when n_bits is 0; cleared here), and whose uncertain ones are the ascending sorted
    positions ``unc[0:n_unc]``; every other eligible token is rejected."""
    cdef intp_t n_acc = n_list + n_bits, n_words = v.n_words, k
    cdef intp_t n_rej = v.n_sorted - n_acc - n_unc
    cdef CacheEntryC* e
    cdef int32_t* data
    if n_acc <= n_rej and n_acc <= n_words:
        e = entry_new(XM_KIND_ACCEPTED, n_acc, n_unc, n_acc, n_rej)
        for k in range(n_list):
            bitset_set(marks, v.sorted_ids[acc[k]])
        _ids_of_marks(marks, NULL, n_words, <int32_t*>e.data)
    elif n_rej <= n_words:
        e = entry_new(XM_KIND_REJECTED, n_rej, n_unc, n_acc, n_rej)
        # rejected = eligible minus accepted minus uncertain, enumerated in id order
        for k in range(n_list):
            bitset_set(marks, v.sorted_ids[acc[k]])
        for k in range(n_unc):
            bitset_set(marks, v.sorted_ids[unc[k]])
        _ids_of_marks(marks, v.eligible, n_words, <int32_t*>e.data)
    else:
        e = entry_new(XM_KIND_BITSET, n_words, n_unc, n_acc, n_rej)
        data = <int32_t*>e.data
        memcpy(data, marks, <size_t>n_words * sizeof(word_t))
        memset(marks, 0, <size_t>n_words * sizeof(word_t))
        for k in range(n_list):
            bitset_set(<word_t*>data, v.sorted_ids[acc[k]])
    if n_unc:
        memcpy(<int32_t*>e.unc, unc, <size_t>n_unc * sizeof(int32_t))
    entry_seal(e)
    return e


cdef void entry_accepted_bits(const CacheEntryC* e, const VocabC* v, word_t* marks) noexcept nogil:
    """Set the ids ``e`` accepts in ``marks`` (n_words, all-zero before)."""
    cdef intp_t k
    if e.kind == XM_KIND_ACCEPTED:
        for k in range(e.n_data):
            bitset_set(marks, e.data[k])
    elif e.kind == XM_KIND_BITSET:
        memcpy(marks, e.data, <size_t>v.n_words * sizeof(word_t))
    else:  # eligible, less the rejected and the uncertain
        memcpy(marks, v.eligible, <size_t>v.n_words * sizeof(word_t))
        for k in range(e.n_data):
            marks[e.data[k] >> 5] &= ~((<word_t>1) << (e.data[k] & 31))
        for k in range(e.n_unc):
            marks[v.sorted_ids[e.unc[k]] >> 5] &= ~((<word_t>1) << (v.sorted_ids[e.unc[k]] & 31))
