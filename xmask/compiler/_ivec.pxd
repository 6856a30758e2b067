# Growable int32 / int64 arrays for the compile-time kernels (malloc'd; the owner frees ``d``).
# Zero-initialize the struct before use; the functions return -1 when out of memory.
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libc.stdlib cimport realloc
from libc.string cimport memcmp

from xmask.runtime._types cimport intp_t as isz


cdef struct IVec:
    int32_t* d
    isz n
    isz cap

cdef struct LVec:
    int64_t* d
    isz n
    isz cap


cdef inline int _reserve(void** d, isz* cap, isz need, size_t elem) noexcept nogil:
    # Grow d[0] (doubling from 64) to hold `need` elements of `elem` bytes; -1 if out of memory.
    cdef isz new_cap
    cdef void* p
    if need <= cap[0]:
        return 0
    new_cap = cap[0] * 2 if cap[0] else 64
    while new_cap < need:
        new_cap *= 2
    p = realloc(d[0], new_cap * elem)
    if p == NULL:
        return -1
    d[0] = p
    cap[0] = new_cap
    return 0


cdef inline int iv_reserve(IVec* v, isz need) noexcept nogil:
    return _reserve(<void**>&v.d, &v.cap, need, sizeof(int32_t))


cdef inline int iv_push(IVec* v, int32_t x) noexcept nogil:
    if v.n == v.cap and iv_reserve(v, v.n + 1):
        return -1
    v.d[v.n] = x
    v.n += 1
    return 0


cdef inline int lv_reserve(LVec* v, isz need) noexcept nogil:
    return _reserve(<void**>&v.d, &v.cap, need, sizeof(int64_t))


cdef inline int lv_push(LVec* v, int64_t x) noexcept nogil:
    if v.n == v.cap and lv_reserve(v, v.n + 1):
        return -1
    v.d[v.n] = x
    v.n += 1
    return 0




cdef inline uint64_t ints_hash(const int32_t* k, isz n) noexcept nogil:
    # Hash of an int sequence for the kernels' own open-addressing tables (never stored or
    # compared across builds): two lanes of two ints per multiply, mixed at the end.
    cdef uint64_t h1 = 0x9E3779B97F4A7C15ULL ^ <uint64_t>n, h2 = 0xC2B2AE3D27D4EB4FULL
    cdef isz i = 0
    while i + 3 < n:
        h1 = (h1 ^ (<uint64_t><uint32_t>k[i] | (<uint64_t><uint32_t>k[i + 1] << 32))) \
            * 0xFF51AFD7ED558CCDULL
        h2 = (h2 ^ (<uint64_t><uint32_t>k[i + 2] | (<uint64_t><uint32_t>k[i + 3] << 32))) \
            * 0xC4CEB9FE1A85EC53ULL
        i += 4
    while i < n:
        h1 = (h1 ^ <uint64_t><uint32_t>k[i]) * 0xFF51AFD7ED558CCDULL
        i += 1
    h1 ^= (h2 << 31) | (h2 >> 33)
    h1 ^= h1 >> 32
    h1 *= 0xC4CEB9FE1A85EC53ULL
    h1 ^= h1 >> 29
    return h1


cdef inline bint ints_eq(const int32_t* a, const int32_t* b, isz n) noexcept nogil:
    # Equal int sequences of length n: short ones compared inline (most signatures and
    # subsets are a few ints, where a call to memcmp costs more than the compare)
    cdef isz i
    if n > 16:
        return memcmp(a, b, n * sizeof(int32_t)) == 0
    for i in range(n):
        if a[i] != b[i]:
            return False
    return True
