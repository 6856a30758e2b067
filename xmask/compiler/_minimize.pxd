from libc.stdint cimport int32_t, int64_t

from xmask.compiler._ivec cimport IVec

ctypedef Py_ssize_t isz


cdef inline isz merged_runs(const int32_t* col, const int32_t* tgt, isz k0, isz k1,
                            const int32_t* blk, int32_t base, int32_t* out_col,
                            int32_t* out_tgt, isz stride) noexcept nogil:
    # A row's runs k0 .. k1 (first class, target or -1) with each target replaced by its
    # block (+ base; -1 stays), adjacent runs whose blocks are equal merged into one: written
    # at out_col[j * stride], out_tgt[j * stride]; returns how many.  The minimizer's
    # signatures and the quotient DFA's rows are both this.  Branch-free: every run is
    # stored, the position advances only where the block changes (so up to k1 - k0 slots).
    cdef isz k, j = 0
    cdef int32_t t, prev = -2
    for k in range(k0, k1):
        t = tgt[k]
        t = blk[t] + base if t >= 0 else -1
        out_col[j * stride] = col[k]
        out_tgt[j * stride] = t
        j += t != prev
        prev = t
    return j


cdef struct Moore:
    # partition: block ids, and each block's members as a doubly linked list
    int32_t* block
    int32_t* head
    int32_t* nxt
    int32_t* prv
    # predecessors (CSR), per-round marks
    int32_t* rev_off
    int32_t* rev_src
    int32_t* dmark      # state -> round it is dirty in
    int32_t* bmark      # block -> round it is affected in
    int32_t* bkeep      # block -> round its id was handed out
    int32_t* bbest      # block -> leader of the group keeping its id (this round)
    IVec dirty
    IVec newid
    IVec spos           # signature offsets: dirty states, then block representatives
    IVec blocks         # affected blocks
    IVec reps           # representative (a clean member) per affected block, -1 none
    IVec changed
    IVec sig
    IVec slots
    IVec gsize          # per signature group: dirty members, then its new id


cdef struct MinWork:
    # minimize_dfa's buffers, kept from one call to the next (zero it before the first)
    IVec callees
    IVec arena          # the per-state int arrays, carved per call
    IVec rev_src
    Moore mo


cdef void minwork_free(MinWork* w) noexcept nogil

cdef isz minimize_dfa(isz n, isz nc, const int32_t* run_off, const int32_t* run_col,
                      const int32_t* run_tgt, const int32_t* finals, const int32_t* call_src,
                      const int32_t* call_rule, const int32_t* call_dst, isz ncal, int64_t budget,
                      int32_t* blk_out, MinWork* wk) noexcept nogil
