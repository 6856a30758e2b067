# Inline bitset helpers over word_t arrays (no .pyx).  Bit i lives in word i >> 5 at i & 31.
from xmask.runtime._types cimport word_t, intp_t


cdef inline void bitset_set(word_t* words, intp_t i) noexcept nogil:
    words[i >> 5] |= (<word_t>1) << (i & 31)


cdef inline void bitset_clear(word_t* words, intp_t i) noexcept nogil:
    words[i >> 5] &= ~((<word_t>1) << (i & 31))


cdef inline bint bitset_test(const word_t* words, intp_t i) noexcept nogil:
    return (words[i >> 5] >> (i & 31)) & 1


cdef inline void bitset_or_into(word_t* dst, const word_t* src, intp_t n_words) noexcept nogil:
    cdef intp_t w
    for w in range(n_words):
        dst[w] |= src[w]
