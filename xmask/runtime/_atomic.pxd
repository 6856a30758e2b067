# Atomic flags and pointer publication shared by the runtime (inline C, no Python objects):
# * xm_flag_try / xm_flag_release: a test-and-set flag (a matcher's busy flag, the mask
#   cache's spin lock), so two threads taking it at once cannot both succeed, GIL or not;
# * xm_load_acquire / xm_store_release: a writer fills a structure, then stores its pointer
#   with release order; a reader loading with acquire order sees NULL or the whole structure;
# * xm_yield: give up the CPU while waiting on a flag.
cdef extern from *:
    """
    #if defined(_MSC_VER)
    #include <intrin.h>
    static __inline void* xm_load_acquire(void* volatile* p) { void* v = *p; _ReadWriteBarrier(); return v; }
    static __inline void xm_store_release(void* volatile* p, void* v) { _ReadWriteBarrier(); *p = v; }
    static __inline int xm_flag_try(volatile char* f) { return _InterlockedCompareExchange8(f, 1, 0) == 0; }
    static __inline void xm_flag_release(volatile char* f) { _InterlockedExchange8(f, 0); }
    static __inline void xm_yield(void) {}
    #else
    #include <sched.h>
    static inline void* xm_load_acquire(void* volatile* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
    static inline void xm_store_release(void* volatile* p, void* v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
    static inline int xm_flag_try(volatile char* f) {
        char expected = 0;
        return __atomic_compare_exchange_n(f, &expected, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
    }
    static inline void xm_flag_release(volatile char* f) { __atomic_store_n(f, 0, __ATOMIC_RELEASE); }
    static inline void xm_yield(void) { sched_yield(); }
    #endif
    """
    void* xm_load_acquire(void** p) noexcept nogil
    void xm_store_release(void** p, void* v) noexcept nogil
    bint xm_flag_try(char* f) noexcept nogil
    void xm_flag_release(char* f) noexcept nogil
    void xm_yield() noexcept nogil
