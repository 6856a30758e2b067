# Small int32-sequence helpers shared by the compile-time kernels and the classifier
# (inline, nogil).
from libc.stdlib cimport qsort

from xmask.runtime._types cimport int32_t, int64_t, uint32_t, uint64_t, intp_t as isz


cdef inline int cmp_i32(const void* a, const void* b) noexcept nogil:
    cdef int32_t x = (<const int32_t*>a)[0], y = (<const int32_t*>b)[0]
    return (x > y) - (x < y)


cdef inline int cmp_i64(const void* a, const void* b) noexcept nogil:
    cdef int64_t x = (<const int64_t*>a)[0], y = (<const int64_t*>b)[0]
    return (x > y) - (x < y)


ctypedef fused sortable:
    int32_t
    int64_t


cdef inline void insertion_sort(sortable* a, isz n) noexcept nogil:
    """Sort ``a[:n]`` ascending in place: for the handful of items the kernels usually sort
    (and nearly sorted ones), where qsort's calls cost more."""
    cdef isz i, j
    cdef sortable x
    for i in range(1, n):
        x = a[i]
        j = i
        while j > 0 and a[j - 1] > x:
            a[j] = a[j - 1]
            j -= 1
        a[j] = x


cdef inline isz sort_unique(int32_t* a, isz n) noexcept nogil:
    """Sort ``a[:n]`` ascending and drop duplicates; returns the new length."""
    cdef isz i, k
    if n < 2:
        return n
    if n <= 16:
        insertion_sort(a, n)
    else:
        qsort(a, n, sizeof(int32_t), cmp_i32)
    k = 1
    for i in range(1, n):
        if a[i] != a[k - 1]:
            a[k] = a[i]
            k += 1
    return k



cdef inline uint64_t seq_hash(const int32_t* k, isz n) noexcept nogil:
    cdef uint64_t h = 0x9E3779B97F4A7C15ULL ^ <uint64_t>n
    cdef isz i
    for i in range(n):
        h = (h ^ <uint32_t>k[i]) * 0x100000001B3ULL
        h ^= h >> 31
    return h


cdef inline isz first_at_least(const int32_t* a, isz n, int32_t x) noexcept nogil:
    """Index of the first of the ascending ``a[:n]`` that is >= ``x`` (``n`` if none)."""
    cdef isz lo = 0, hi = n, mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


cdef inline isz key_slot(int64_t key, isz mask) noexcept nogil:
    """The first slot of ``key`` in an open-addressing table of ``mask + 1`` slots (a power of
    two): Fibonacci hashing, whose high bits mix small consecutive keys well."""
    return <isz>(((<uint64_t>key) * 0x9E3779B97F4A7C15ULL) >> 32) & mask
