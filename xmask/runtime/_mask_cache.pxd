# The token-mask cache of one compiled grammar (implemented in _mask_cache.pyx): per automaton
# state a published CacheEntryC, classified lazily by the first fill that needs it or eagerly by
# precompute; shared read-mostly by every matcher and thread of the grammar.
from xmask.runtime._types cimport int32_t, int64_t, uint8_t, intp_t
from xmask.runtime._tables cimport AutomatonC, VocabC
from xmask.runtime._classify cimport CacheEntryC

cdef extern from *:
    """
    /* Publication of cache entries: a writer fills an entry, then stores its pointer with
       release order; a reader loads with acquire order, so it sees a NULL (not classified
       yet) or a complete entry, never a half-built one. */
    #if defined(_MSC_VER)
    #include <intrin.h>
    static __inline void* xm_load_acquire(void* volatile* p) { void* v = *p; _ReadWriteBarrier(); return v; }
    static __inline void xm_store_release(void* volatile* p, void* v) { _ReadWriteBarrier(); *p = v; }
    static __inline int xm_spin_try(volatile char* f) { return _InterlockedCompareExchange8(f, 1, 0) == 0; }
    static __inline void xm_spin_release(volatile char* f) { _InterlockedExchange8(f, 0); }
    #else
    static inline void* xm_load_acquire(void* volatile* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
    static inline void xm_store_release(void* volatile* p, void* v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
    static inline int xm_spin_try(volatile char* f) {
        char expected = 0;
        return __atomic_compare_exchange_n(f, &expected, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
    }
    static inline void xm_spin_release(volatile char* f) { __atomic_store_n(f, 0, __ATOMIC_RELEASE); }
    #endif
    """
    void* xm_load_acquire(void** p) noexcept nogil
    void xm_store_release(void** p, void* v) noexcept nogil
    bint xm_spin_try(char* f) noexcept nogil
    void xm_spin_release(char* f) noexcept nogil


ctypedef struct MaskCacheC:
    intp_t n_states
    CacheEntryC** entry          # [n_states] published entry, NULL = not classified (yet)
    const int32_t* state_rule    # [n_states]
    const int64_t* ctx_off       # [n_rules + 1] range of a rule's return states in ctx_states
    const int32_t* ctx_states
    const uint8_t* follow        # [n_rules * 256] bytes that can follow a rule's callers
    # distinct entries (deduplicated), guarded by the spin lock `lock`
    char lock
    CacheEntryC** table          # open addressing by entry hash, NULL = empty slot
    intp_t table_cap             # power of two
    CacheEntryC** owned          # distinct entries in publication order (freed with the cache)
    intp_t n_owned
    intp_t owned_cap
    intp_t n_classified          # states with a published entry
    int64_t entry_bytes          # payload bytes of the distinct entries


cdef const CacheEntryC* cache_classify(MaskCacheC* c, const AutomatonC* a, const VocabC* v,
                                       int32_t state) except NULL nogil


cdef inline const CacheEntryC* cache_entry(MaskCacheC* c, const AutomatonC* a, const VocabC* v,
                                           int32_t state) except NULL nogil:
    # The state's entry, classifying it first if no thread has yet.
    cdef const CacheEntryC* e = <const CacheEntryC*>xm_load_acquire(<void**>&c.entry[state])
    if e != NULL:
        return e
    return cache_classify(c, a, v, state)


cdef inline const CacheEntryC* cache_peek(MaskCacheC* c, int32_t state) noexcept nogil:
    # The state's entry if classified, else NULL.
    return <const CacheEntryC*>xm_load_acquire(<void**>&c.entry[state])


cdef class MaskCache:
    cdef MaskCacheC c
    cdef readonly object arrays      # ctx / follow / state_rule arrays the C struct points into
    cdef int _check_states(self, const int32_t[::1] st) except -1
