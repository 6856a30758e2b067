# Growable int32 / int64 arrays for the compile-time kernels (malloc'd; the owner frees ``d``).
# Zero-initialize the struct before use; the functions return -1 when out of memory.
from libc.stdint cimport int32_t, int64_t
from libc.stdlib cimport realloc

ctypedef Py_ssize_t isz


cdef struct IVec:
    int32_t* d
    isz n
    isz cap

cdef struct LVec:
    int64_t* d
    isz n
    isz cap


cdef inline int iv_reserve(IVec* v, isz need) noexcept nogil:
    cdef isz cap
    cdef int32_t* p
    if need <= v.cap:
        return 0
    cap = v.cap * 2 if v.cap else 64
    while cap < need:
        cap *= 2
    p = <int32_t*>realloc(v.d, cap * sizeof(int32_t))
    if p == NULL:
        return -1
    v.d = p
    v.cap = cap
    return 0


cdef inline int iv_push(IVec* v, int32_t x) noexcept nogil:
    if v.n == v.cap and iv_reserve(v, v.n + 1):
        return -1
    v.d[v.n] = x
    v.n += 1
    return 0


cdef inline int lv_reserve(LVec* v, isz need) noexcept nogil:
    cdef isz cap
    cdef int64_t* p
    if need <= v.cap:
        return 0
    cap = v.cap * 2 if v.cap else 64
    while cap < need:
        cap *= 2
    p = <int64_t*>realloc(v.d, cap * sizeof(int64_t))
    if p == NULL:
        return -1
    v.d = p
    v.cap = cap
    return 0


cdef inline int lv_push(LVec* v, int64_t x) noexcept nogil:
    if v.n == v.cap and lv_reserve(v, v.n + 1):
        return -1
    v.d[v.n] = x
    v.n += 1
    return 0


