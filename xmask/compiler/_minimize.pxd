from libc.stdint cimport int32_t, int64_t

ctypedef Py_ssize_t isz

cdef isz minimize_dfa(isz n, isz nc, const int32_t* trans, const int32_t* finals,
                      const int32_t* call_src, const int32_t* call_rule, const int32_t* call_dst,
                      isz ncal, int64_t budget, int32_t* blk_out,
                      isz budget_nc) noexcept nogil
