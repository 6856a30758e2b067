# Atomic flags, pointer publication and counters shared by the runtime and the compile
# kernels (inline C, no Python objects):
# * xm_flag_try / xm_flag_release: a test-and-set flag (a matcher's busy flag, the mask
#   cache's spin lock), so two threads taking it at once cannot both succeed, GIL or not;
# * xm_load_acquire / xm_store_release: a writer fills a structure, then stores its pointer
#   with release order; a reader loading with acquire order sees NULL or the whole structure;
# * xm_yield: give up the CPU while waiting on a flag;
# * xm_fetch_add(p, k): ``old = *p; *p += k; return old`` at once, acquire-release (the shared
#   work counters of the warm-up pool and of the compile helpers: each piece taken once).
from xmask.runtime._types cimport int64_t


cdef extern from *:
    """
    #include <stdint.h>
    #if defined(_MSC_VER)
    #include <intrin.h>
    static __inline void* xm_load_acquire(void* volatile* p) { void* v = *p; _ReadWriteBarrier(); return v; }
    static __inline void xm_store_release(void* volatile* p, void* v) { _ReadWriteBarrier(); *p = v; }
    static __inline int xm_flag_try(volatile char* f) { return _InterlockedCompareExchange8(f, 1, 0) == 0; }
    static __inline void xm_flag_release(volatile char* f) { _InterlockedExchange8(f, 0); }
    static __inline void xm_yield(void) {}
    static __inline int64_t xm_fetch_add(volatile int64_t* p, int64_t k) { return _InterlockedExchangeAdd64(p, k); }
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
    static inline int64_t xm_fetch_add(volatile int64_t* p, int64_t k) {
        return __atomic_fetch_add(p, k, __ATOMIC_ACQ_REL);
    }
    #endif
    """
    void* xm_load_acquire(void** p) noexcept nogil
    void xm_store_release(void** p, void* v) noexcept nogil
    bint xm_flag_try(char* f) noexcept nogil
    void xm_flag_release(char* f) noexcept nogil
    void xm_yield() noexcept nogil
    int64_t xm_fetch_add(int64_t* p, int64_t k) noexcept nogil
