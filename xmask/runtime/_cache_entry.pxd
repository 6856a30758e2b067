# One state's token sets in the token-mask cache (implemented in _cache_entry.pyx): how an entry
# is laid out, built from a classification's sets, hashed and compared for deduplication.
from xmask.runtime._types cimport int32_t, uint8_t, uint64_t, word_t, intp_t
from xmask.runtime._tables cimport VocabC


ctypedef struct CacheEntryC:
    # One state's context-independent token sets; immutable once published.  One malloc
    # block: this header, then data, then unc.
    uint8_t kind             # XM_KIND_*: data = accepted ids / rejected ids / accepted bitset
    intp_t n_data            # ids, or n_words bitset words
    intp_t n_unc             # uncertain sorted positions, ascending
    intp_t n_acc             # accepted / rejected token counts (for cache_stats)
    intp_t n_rej
    uint64_t hash            # of kind, data and unc (deduplication)
    const int32_t* data
    const int32_t* unc


cdef CacheEntryC* entry_new(uint8_t kind, intp_t n_data, intp_t n_unc, intp_t n_acc,
                            intp_t n_rej) except NULL nogil
cdef void entry_seal(CacheEntryC* e) noexcept nogil
cdef bint entry_equal(const CacheEntryC* x, const CacheEntryC* y) noexcept nogil
cdef CacheEntryC* entry_from_sets(const VocabC* v, const int32_t* acc, intp_t n_list,
                                  word_t* marks, intp_t n_bits, const int32_t* unc,
                                  intp_t n_unc) except NULL nogil
cdef void entry_accepted_bits(const CacheEntryC* e, const VocabC* v, word_t* marks) noexcept nogil
