"""The mask kernel: one next-token bitmask row from a persistent parse stack (see _fill.pxd).

``fill_job`` ORs the cached accepted sets of the current tops, then checks only the cached
*uncertain* tokens against the real stack, in byte-sorted order so shared prefixes are parsed
once; tops with a token edge (``Token(...)`` elements) add their token set with one bitset OR.
``accept_token_id`` is the one token step (bytes UNION token edges) of accept_token, draft
trees and the slow reference.  Near the recursion bound (``xmask.set_max_recursion_depth``) the
cache may allow a token that would need a stack deeper than the bound, so there every token is
checked on the real stack (``FillJob.exact``).  With token budgets (``rule[max_tokens=n]`` over
text) a token that spends a budget must leave that rule by its end: ``accept_token_id`` drops
the paths that did not (``stack_budget_filter``), and a fill whose next token ends a budget
checks candidates instead of trusting cached sets (_fill_spent.pyx).  Everything here runs
without the GIL; the only GIL use is raising MemoryError when the stack arena cannot grow.

GIL policy (``nogil_min_cost``): releasing and re-taking the GIL costs ~5 us when no other
Python thread runs, but up to a whole switch interval (5 ms by default) when one does, because
the re-take waits for that thread to drop the GIL.  ``fill_cost`` estimates a fill's work in
uncertain tokens to check (plus row-wide passes, see ``fill_cost``), scaled up when the matcher's
byte steps cost much more than a plain grammar's (``FillJob.byte_work``: ambiguous grammars).  bench/bench_batch.py
measured on Llama-3 (JSON and MaskBench schemas, 2 cores): 3-10 ns of kernel time per unit, and
single fills along real documents estimate at most ~2,000 units (~4 us).  With a spinning Python
thread, a fill that releases the GIL took 5.1-5.2 ms at p90 instead of 7-13 us.  So below 20,000
units (~60-200 us of work, <= 4% of the hand-off it could cost) a call keeps the GIL: nearly every
single fill; larger batches (and exact fills near the recursion bound) release it once, where the
other threads gain more from running than the caller risks waiting.
The environment variable XMASK_NOGIL_MIN_COST overrides the threshold (0: always release), for
benchmarks.
"""

from libc.string cimport memset, memcpy
from libc.stdlib cimport malloc, calloc, free
from libc.stdint cimport int64_t

from xmask.runtime._types cimport XM_KIND_ACCEPTED, XM_KIND_BITSET
from xmask.runtime._types cimport XM_FLAG_HAS_BYTES, XM_FLAG_TOKEN
from xmask.runtime._bitset cimport bitset_set, bitset_clear, bitset_test, bitset_or_into
from xmask.runtime._stack cimport stack_truncate, stack_budget_token, stack_find
from xmask.runtime._stack_budget cimport stack_budget_filter, stack_budget_alive
from xmask.runtime._guard cimport GuardC, guarded_step, guarded_token_step
from xmask.runtime._cache_entry cimport CacheEntryC
from xmask.runtime._mask_cache cimport (
    MaskCacheC, cache_entry, cache_peek, cache_pair_slot, cache_ret_slot, cache_pair_peek,
    cache_pair_entry,
)
from xmask.runtime._fill_spent cimport (
    SpentScratch, spent_top, spent_fast_usable, spent_fast_top_memo, spent_scratch_free,
    entry_positions, token_lcp,
)

cdef extern from *:
    int __builtin_ctz(unsigned int x) nogil

cdef intp_t _nogil_min_cost = 20000
# Work units a fill whose token budget ends may spend per vocabulary token beyond the cap:
# walking dense text from a few tops measured ~8-9 per token (Llama-3, Qwen2.5: any_text).
cdef intp_t _SPENT_WORK_PER_TOKEN = 16
# Work units a fill may spend per cached uncertain token it checks, beyond the cap: the
# uncertain tokens of one fill are at most the vocabulary, each walked once on the real stack
# (shared prefixes once).  Where a chunked repeat ends (maxLength beyond the one-state chain,
# counting.py) nearly every token crosses the end and is uncertain: ~10 units each (Llama-3,
# Qwen2.5), ~1.4M for one fill, which the cap alone would turn into a sticky error.  An
# ambiguous grammar's steps cost far more than this per token, so the cap still stops it.
cdef intp_t _UNC_WORK_PER_TOKEN = 16
# Work units (RuntimeLimits) of one byte step in JSON-like grammars (1-6 on Llama-3): a fill whose
# matcher's steps cost more (an ambiguous grammar's closure through thousands of frames) checks
# each uncertain token that many times slower, which fill_cost scales by.
cdef intp_t _PLAIN_BYTE_WORK = 16

# Per-thread fill buffers: a row-sized scratch (contents undefined between fills) and the
# position bitset of the uncertain tokens (all-zero between fills), shared by every matcher
# that fills on the thread, so a matcher holds nothing vocabulary-sized.  Grown on demand,
# freed when the thread exits (POSIX; on Windows they live until the process ends).  `dirty`
# marks a fill that did not finish (an exception mid-fill): the next one clears the bitset.
cdef extern from *:
    """
    #include <stdlib.h>
    #include <string.h>
    typedef struct {
        uint32_t* scratch; size_t scratch_cap; uint32_t* pos; size_t pos_cap; int dirty;
    } xm_fill_tls;
    #if defined(_WIN32)
    static __declspec(thread) xm_fill_tls xm_fill_tls_v;
    static xm_fill_tls* xm_fill_tls_get(void) { return &xm_fill_tls_v; }
    #else
    #include <pthread.h>
    static pthread_key_t xm_fill_key;
    static pthread_once_t xm_fill_once = PTHREAD_ONCE_INIT;
    static int xm_fill_key_ok = 0;
    static void xm_fill_tls_free(void* p) {
        xm_fill_tls* t = (xm_fill_tls*)p;
        free(t->scratch); free(t->pos); free(t);
    }
    static void xm_fill_key_make(void) {
        xm_fill_key_ok = pthread_key_create(&xm_fill_key, xm_fill_tls_free) == 0;
    }
    static xm_fill_tls* xm_fill_tls_get(void) {
        xm_fill_tls* t;
        pthread_once(&xm_fill_once, xm_fill_key_make);
        if (!xm_fill_key_ok) return NULL;
        t = (xm_fill_tls*)pthread_getspecific(xm_fill_key);
        if (t == NULL) {
            t = (xm_fill_tls*)calloc(1, sizeof(xm_fill_tls));
            if (t == NULL) return NULL;
            if (pthread_setspecific(xm_fill_key, t) != 0) { free(t); return NULL; }
        }
        return t;
    }
    #endif
    /* This thread's buffers: scratch of n words, pos of m all-zero words; NULL on failure. */
    static xm_fill_tls* xm_fill_acquire(size_t n, size_t m) {
        xm_fill_tls* t = xm_fill_tls_get();
        void* p;
        if (t == NULL) return NULL;
        if (n < 1) n = 1;
        if (m < 1) m = 1;
        if (t->scratch_cap < n) {
            p = realloc(t->scratch, n * sizeof(uint32_t));
            if (p == NULL) return NULL;
            t->scratch = (uint32_t*)p; t->scratch_cap = n;
        }
        if (t->pos_cap < m) {
            p = calloc(m, sizeof(uint32_t));
            if (p == NULL) return NULL;
            free(t->pos); t->pos = (uint32_t*)p; t->pos_cap = m; t->dirty = 0;
        }
        if (t->dirty) memset(t->pos, 0, t->pos_cap * sizeof(uint32_t));
        t->dirty = 1;
        return t;
    }
    """
    ctypedef struct xm_fill_tls:
        word_t* scratch
        word_t* pos
        int dirty
    xm_fill_tls* xm_fill_acquire(size_t n, size_t m) noexcept nogil


def _cost_from_env():
    global _nogil_min_cost
    import os

    value = os.environ.get("XMASK_NOGIL_MIN_COST")
    if value is not None and value.strip().isdigit():
        _nogil_min_cost = int(value)


_cost_from_env()


cdef intp_t nogil_min_cost() noexcept nogil:
    return _nogil_min_cost


# Process-wide bound on the parse-stack depth (frames), see xmask.set_max_recursion_depth.
cdef intp_t _max_depth = 10000


cdef intp_t current_max_depth() noexcept nogil:
    return _max_depth


cdef void set_max_depth(intp_t n) noexcept nogil:
    global _max_depth
    _max_depth = n


cdef intp_t max_top_depth(const StackC* st) noexcept nogil:
    # Deepest stack among the newest top set.
    cdef intp_t i, best = 0
    cdef int32_t node
    for i in range(st.set_start[st.depth - 1], st.set_start[st.depth]):
        node = st.tops[i]
        if st.node_depth[node] > best:
            best = st.node_depth[node]
    return best


cdef void update_exact(FillJob* j) noexcept nogil:
    # The cached sets are exact unless one token could push the stack past the bound.
    j.exact = j.st.max_depth > 0 and max_top_depth(j.st) + j.margin >= j.st.max_depth


cdef int accept_bytes(StackC* st, const AutomatonC* a, const uint8_t* data,
                      intp_t n, GuardC* g) except -1 nogil:
    # Feed bytes; on rejection (or a crossed runtime limit, see g.crossed) restore the history
    # and return 0, else return 1.
    cdef intp_t base = st.depth
    cdef intp_t i
    for i in range(n):
        if g != NULL and (i & 4095) == 4095:
            g.work = 0  # long input: the work limit applies per 4 KiB (see RuntimeLimits)
        if guarded_step(st, a, data[i], g) == 0:
            stack_truncate(st, base)
            return 0
    return 1


cdef int accept_token_id(StackC* st, const AutomatonC* a, const VocabC* v,
                         intp_t tid, GuardC* g) except -1 nogil:
    # Advance by token `tid` (not a stop token: callers handle those): its bytes, when it is a
    # grammar-eligible token, UNION the token edges that name it, from the same top set.  On
    # rejection (or a crossed runtime limit) the history is unchanged and 0 is returned, else 1.
    cdef intp_t base = st.depth, pos = v.id_pos[tid]
    cdef int64_t off
    cdef int walked = 0
    stack_budget_token(st, 1)
    if pos >= 0:
        off = v.tok_offsets[pos]
        walked = accept_bytes(st, a, v.tok_bytes + off, v.tok_offsets[pos + 1] - off, g)
    if a.n_token_sets == 0 or (g != NULL and g.crossed):
        return budget_end(st, base, walked)
    if guarded_token_step(st, a, base, <int32_t>tid, walked, g) > 0:
        return budget_end(st, base, 1)
    if g != NULL and g.crossed:
        stack_truncate(st, base)
        return 0
    return budget_end(st, base, walked)


cdef int budget_end(StackC* st, intp_t base, int ok) except -1 nogil:
    # After a token: drop the paths whose token budget it spent; none left rejects the token.
    if ok and st.node_live != NULL and stack_budget_filter(st, st.tok_index) == 0:
        stack_truncate(st, base)
        return 0
    return ok


cdef int or_token_sets(const StackC* st, const AutomatonC* a, word_t* row,
                       intp_t n_words) except -1 nogil:
    # OR into row the token sets of the newest top set's token edges.
    cdef intp_t i, k
    cdef int32_t node
    if a.n_token_sets == 0 or a.token_words != n_words:
        return 0
    for i in range(st.set_start[st.depth - 1], st.set_start[st.depth]):
        node = st.tops[i]
        if node < 2:
            continue
        k = a.token_set_of[st.node_state[node]]
        if k >= 0:
            bitset_or_into(row, a.token_bits + k * n_words, n_words)
    return 0


cdef inline bint _bytes_top(const AutomatonC* a, const StackC* st, int32_t node) noexcept nogil:
    # Whether a (non-BOTTOM) top reads bytes: a token-edge-only top has no cache entry.
    return (a.flags[st.node_state[node]] & XM_FLAG_HAS_BYTES) != 0


cdef inline intp_t _many_pair_slot(MaskCacheC* c, const StackC* st, int32_t node) noexcept nogil:
    # The pair slot of a top in a rule whose callers the cache does not walk (a long bounded
    # string's shared character tail) over a plain frame, else -1.
    cdef int32_t parent = st.node_parent[node]
    if not c.has_many or parent < 2 or st.node_state[parent] < 0:
        return -1
    return cache_pair_slot(c, st.node_state[node], st.node_state[parent])


cdef inline intp_t _gated_pair_slot(MaskCacheC* c, const StackC* st, int32_t node,
                                    const CacheEntryC* own) noexcept nogil:
    # The pair slot of a top over a plain frame whose own entry `own` leaves at least
    # pair_min_unc tokens uncertain, in a rule whose callers the cache walks (the others' pairs
    # are whole entries: _many_pair_slot), else -1 (MaskCacheC.pair_blocks).
    cdef int32_t parent = st.node_parent[node]
    cdef int32_t r = c.state_rule[st.node_state[node]]
    if (own == NULL or c.pair_min_unc < 0 or own.n_unc < c.pair_min_unc or parent < 2
            or st.node_state[parent] < 0 or c.ctx_off[r + 1] - c.ctx_off[r] > c.max_ctx_walk):
        return -1
    return cache_ret_slot(c, st.node_state[node], st.node_state[parent])


cdef inline const CacheEntryC* _top_entry(MaskCacheC* c, const AutomatonC* a, const VocabC* v,
                                          const StackC* st, int32_t node,
                                          double* deadline) except NULL nogil:
    # The entry a fill uses for top `node` (classified first if needed): a many-caller pair's
    # or the state's own (a gated pair only overlays it: _top_overlay).
    cdef intp_t slot = _many_pair_slot(c, st, node)
    if slot >= 0:
        return cache_pair_entry(c, a, v, st.node_state[node], st.node_state[st.node_parent[node]],
                                slot, deadline)
    return cache_entry(c, a, v, st.node_state[node], deadline)


cdef inline const CacheEntryC* _top_peek(MaskCacheC* c, const StackC* st,
                                         int32_t node) noexcept nogil:
    # The entry a fill uses for top `node` if classified, else NULL.
    cdef intp_t slot = _many_pair_slot(c, st, node)
    if slot >= 0:
        return cache_pair_peek(c, st.node_state[node], slot)
    return cache_peek(c, st.node_state[node])


cdef inline const CacheEntryC* _top_overlay(MaskCacheC* c, const AutomatonC* a, const VocabC* v,
                                            const StackC* st, int32_t node,
                                            const CacheEntryC* own,
                                            double* deadline) except? NULL nogil:
    # The overlay of top `node` on its entry `own` (a gated pair: ids own leaves uncertain that
    # the frame under the top accepts, and the tokens still uncertain; classified first if
    # needed, see _classify.classify_pair_from), or NULL: own alone.
    cdef intp_t slot = _gated_pair_slot(c, st, node, own)
    if slot < 0:
        return NULL
    return cache_pair_entry(c, a, v, st.node_state[node], st.node_state[st.node_parent[node]],
                            slot, deadline, own)


cdef inline const CacheEntryC* _unc_source(MaskCacheC* c, const StackC* st, int32_t node,
                                           const CacheEntryC* own, bint* pending) noexcept nogil:
    # The entry whose uncertain tokens a fill checks for top `node` with entry `own`: its
    # overlay if classified, else own (`pending`: an overlay is due but not classified yet).
    cdef intp_t slot = _gated_pair_slot(c, st, node, own)
    cdef const CacheEntryC* ov
    pending[0] = False
    if slot < 0:
        return own
    ov = cache_pair_peek(c, st.node_state[node], slot)
    if ov == NULL:
        pending[0] = True
        return own
    return ov


cdef enum:
    MAX_COVERED = 32         # covered tops one fill looks for (more: the rest use their entries)


cdef intp_t _covered_tops(const StackC* st, const AutomatonC* a, int32_t* out) noexcept nogil:
    # The tops of the newest set that another top's entry already covers: a callee's start
    # (c over (r over P)) pushed by the closure of a byte-reading top (x over P) whose state
    # calls c returning to r.  x's entry classified the tokens of every stack of its closure,
    # so c's entry adds nothing (and a shared callee, e.g. a bounded string's character tail,
    # would add its context-dependent tokens to every fill).  The coverer is one frame less
    # deep, so covering never goes round in a circle.  Returns how many were stored in out.
    cdef intp_t i, k, n = 0
    cdef int32_t x, parent, ret, t
    if st.set_start[st.depth] - st.set_start[st.depth - 1] < 2:
        return 0
    for i in range(st.set_start[st.depth - 1], st.set_start[st.depth]):
        x = st.tops[i]
        if x < 2 or not _bytes_top(a, st, x):
            continue
        parent = st.node_parent[x]
        for k in range(a.call_offsets[st.node_state[x]], a.call_offsets[st.node_state[x] + 1]):
            if a.call_ret[k] < 0 or (a.call_budget != NULL and a.call_budget[k] >= 0):
                continue  # tail calls (not deeper) and budget markers are left alone
            ret = stack_find(st, a.call_ret[k], parent)
            if ret < 0:
                continue
            t = stack_find(st, a.call_target[k], ret)
            if t >= 2:
                out[n] = t
                n += 1
                if n == MAX_COVERED:
                    return n
    return n


cdef inline bint _listed(const int32_t* ids, intp_t n, int32_t x) noexcept nogil:
    cdef intp_t i
    for i in range(n):
        if ids[i] == x:
            return True
    return False


cdef bint _any_spent(const StackC* st) noexcept nogil:
    # Whether a top of the newest set is _spent.  Then no cached accepted set is trusted: a
    # state's entry covers the rules it calls, whose frames (called at this boundary, their
    # budget counted from the last token) are tops of their own, maybe spent ones.
    cdef intp_t i
    if st.node_live == NULL:
        return False
    for i in range(st.set_start[st.depth - 1], st.set_start[st.depth]):
        if st.tops[i] != 0 and spent_top(st, st.tops[i]):
            return True
    return False


cdef intp_t fill_cost(FillJob* j) noexcept nogil:
    # Estimated work of fill_job, in uncertain tokens to check (see the module docstring).
    # Units: one uncertain token to check; a row-wide pass (memset, bitset OR) counts as
    # n_words / 16 (word operations are that much cheaper than a token check).  A top whose
    # state is not classified yet costs a walk of the vocabulary (its classification).
    cdef const StackC* st = j.st
    cdef intp_t i, row_pass = j.v.n_words >> 4
    cdef intp_t cost = row_pass
    cdef int32_t node
    cdef const CacheEntryC* e
    cdef int32_t covered[MAX_COVERED]
    cdef intp_t n_cov
    cdef bint pending
    if j.exact or (st.node_live != NULL and _any_spent(st)):
        return (j.v.n_sorted + row_pass) * _work_scale(j)  # (every candidate is walked)
    n_cov = _covered_tops(st, j.a, covered)
    for i in range(st.set_start[st.depth - 1], st.set_start[st.depth]):
        node = st.tops[i]
        if n_cov and _listed(covered, n_cov, node):
            continue
        if node != 0 and not _bytes_top(j.a, st, node):
            cost += row_pass  # a token edge: one bitset OR
        elif node != 0:
            e = _top_peek(j.c, st, node)
            if e == NULL:
                cost += j.v.n_sorted
                continue
            if e.kind != XM_KIND_ACCEPTED:
                cost += row_pass
            e = _unc_source(j.c, st, node, e, &pending)  # (pending: a walk of e's uncertain)
            cost += e.n_unc + 16
    return cost * _work_scale(j)


cdef inline intp_t _work_scale(const FillJob* j) noexcept nogil:
    # How much slower than a plain grammar's this matcher's byte steps are (>= 1).
    return j.byte_work // _PLAIN_BYTE_WORK if j.byte_work > _PLAIN_BYTE_WORK else 1


cdef bint fill_classifies(FillJob* j) noexcept nogil:
    # Whether fill_job will classify a state first (a top whose state has no cache entry yet):
    # only such a fill can end in a compile-limit error (GrammarLimitError) besides MemoryError.
    cdef const StackC* st = j.st
    cdef intp_t i, n_cov = 0
    cdef int32_t node
    cdef int32_t covered[MAX_COVERED]
    cdef const CacheEntryC* e
    cdef bint pending = False
    if not j.exact and not (st.node_live != NULL and _any_spent(st)):
        n_cov = _covered_tops(st, j.a, covered)
    for i in range(st.set_start[st.depth - 1], st.set_start[st.depth]):
        node = st.tops[i]
        if node == 0 or not _bytes_top(j.a, st, node):
            continue
        e = _top_peek(j.c, st, node)
        if e != NULL:
            _unc_source(j.c, st, node, e, &pending)  # (an overlay to classify)
        # (with token budgets a spent fill uses the state's own entry: either may be classified)
        if (e == NULL or pending
                or (st.node_live != NULL and cache_peek(j.c, st.node_state[node]) == NULL)):
            if n_cov and _listed(covered, n_cov, node):
                continue
            return True
    return False


cdef int fill_job(FillJob* j) except -1 nogil:
    # The mask for the newest top set, written to j.row[0:n_words].  Leaves the history unchanged.
    cdef StackC* st = j.st
    cdef const VocabC* v = j.v
    cdef MaskCacheC* c = j.c
    cdef word_t* row = j.row
    cdef word_t* scratch
    cdef word_t* pos_bits
    cdef intp_t n_words = v.n_words
    cdef intp_t base = st.depth
    cdef intp_t top_begin = st.set_start[base - 1]
    cdef intp_t top_end = st.set_start[base]
    cdef intp_t i, k, n_real = 0, n_spent = 0
    cdef bint spent, fast = False
    cdef SpentScratch sp
    cdef int32_t node
    cdef const int32_t* ids
    cdef const CacheEntryC* e
    cdef const CacheEntryC* ov
    cdef const CacheEntryC* single = NULL
    cdef bint can_end = False, pending
    cdef double deadline = 0.0  # of the lazy classifications this fill makes (one for all)
    cdef intp_t pos_words = (v.n_sorted + 31) >> 5
    cdef xm_fill_tls* tls
    cdef int32_t covered[MAX_COVERED]
    cdef intp_t n_cov = 0
    cdef intp_t n_unc = 0  # uncertain tokens of the entries used (with repeats)
    memset(row, 0, <size_t>n_words * sizeof(word_t))
    if j.guard != NULL and j.guard.crossed:
        return 0  # the sticky error state: nothing is allowed
    tls = xm_fill_acquire(<size_t>n_words, <size_t>pos_words)
    if tls == NULL:
        with gil:
            raise MemoryError("xmask: no memory for the fill's per-thread buffers")
    scratch = tls.scratch
    pos_bits = tls.pos
    spent = False
    if st.node_live != NULL:
        stack_budget_token(st, 1)  # (the walks below read the next token)
        spent = _any_spent(st)
    if spent and not j.exact:
        memset(&sp, 0, sizeof(SpentScratch))
        fast = spent_fast_usable(st, j.a, v, &sp)
    if spent and not fast and j.guard != NULL:
        # every cached candidate is walked (~an exact fill through dense text): allow it the
        # work of walking the vocabulary on top of the per-call cap (RuntimeLimits, README)
        j.guard.work -= v.n_sorted * _SPENT_WORK_PER_TOKEN

    if j.exact:
        for i in range(top_begin, top_end):
            if st.tops[i] == 0:
                can_end = True
        for k in range(v.n_sorted >> 5):
            pos_bits[k] = <word_t>0xFFFFFFFF
        for k in range(v.n_sorted & ~(<intp_t>31), v.n_sorted):
            bitset_set(pos_bits, k)
        _check_uncertain(st, j.a, v, row, NULL, 0, pos_bits, pos_words, j.guard)
    else:
        if not spent:
            n_cov = _covered_tops(st, j.a, covered)
        # 1. cached accepted sets
        for i in range(top_begin, top_end):
            node = st.tops[i]
            if node == 0:
                can_end = True
                continue
            if not _bytes_top(j.a, st, node):
                continue  # a token edge only: step 3
            if n_cov and _listed(covered, n_cov, node):
                continue  # another top's entry answers for it
            if spent:  # (the spent-top memos are keyed by state: the state's own entry)
                e = cache_entry(c, j.a, v, st.node_state[node], &deadline)
            else:
                e = _top_entry(c, j.a, v, st, node, &deadline)
            if spent and not fast:  # walked on the real stack instead
                _spent_positions(v, e, pos_bits, n_words)
                n_spent += 1
                continue
            if fast and spent_top(st, node):
                spent_fast_top_memo(c, st, j.a, v, &sp, node, e, row, pos_bits, j.guard)
                n_spent += 1
                continue
            n_real += 1
            # (a spent fill keeps to own entries, as its second pass below)
            ov = NULL if spent else _top_overlay(c, j.a, v, st, node, e, &deadline)
            single = e if ov == NULL else ov  # (whose uncertain tokens are checked)
            n_unc += single.n_unc
            if ov != NULL:
                for k in range(ov.n_data):  # (own's uncertain tokens the frame accepts)
                    bitset_set(row, ov.data[k])
            ids = e.data
            if e.kind == XM_KIND_ACCEPTED:
                for k in range(e.n_data):
                    bitset_set(row, ids[k])
            elif e.kind == XM_KIND_BITSET:
                bitset_or_into(row, <const word_t*>ids, n_words)
            else:
                memcpy(scratch, v.eligible, <size_t>n_words * sizeof(word_t))
                for k in range(e.n_data):
                    bitset_clear(scratch, ids[k])
                for k in range(e.n_unc):
                    bitset_clear(scratch, v.sorted_ids[e.unc[k]])
                bitset_or_into(row, scratch, n_words)

        # 2. uncertain tokens, in sorted order (merged through a position bitset if several tops)
        if j.guard != NULL and n_unc > 0:
            j.guard.work -= (n_unc if n_unc < v.n_sorted else v.n_sorted) * _UNC_WORK_PER_TOKEN
        if n_real == 1 and n_spent == 0:
            _check_uncertain(st, j.a, v, row, single.unc, single.n_unc, NULL, 0, j.guard)
        elif n_real + n_spent > 0:
            for i in range(top_begin, top_end):
                node = st.tops[i]
                if node == 0 or not _bytes_top(j.a, st, node) or (
                        spent and (not fast or spent_top(st, node))) or (
                        n_cov and _listed(covered, n_cov, node)):
                    continue
                # classified by the pass above (overlays included)
                e = cache_peek(c, st.node_state[node]) if spent else _unc_source(
                    c, st, node, _top_peek(c, st, node), &pending)
                for k in range(e.n_unc):
                    bitset_set(pos_bits, e.unc[k])
            _check_uncertain(st, j.a, v, row, NULL, 0, pos_bits, pos_words, j.guard)
    stack_truncate(st, base)
    if fast:
        spent_scratch_free(&sp)
    tls.dirty = 0  # _check_uncertain left pos_bits all-zero
    if j.guard != NULL and j.guard.crossed:
        memset(row, 0, <size_t>n_words * sizeof(word_t))
        return 0

    # 3. stop tokens: never by their bytes (even if one is also a normal token); where the
    # grammar can end, always (they end the output); elsewhere only as a token edge: a
    # literal spelling a special stop token's text (special_literals.StopLiteralToken)
    for k in range(j.n_stop):
        bitset_clear(row, j.stop_ids[k])

    # 4. whole tokens named by the grammar (token edges)
    if st.node_live != NULL:
        _budget_token_sets(st, j.a, v, row, n_words)
    else:
        or_token_sets(st, j.a, row, n_words)
    if can_end:
        for k in range(j.n_stop):
            bitset_set(row, j.stop_ids[k])
    return 0


cdef int _check_uncertain(StackC* st, const AutomatonC* a, const VocabC* v, word_t* row,
                          const int32_t* unc_list, intp_t unc_n,
                          word_t* pos_bits, intp_t pos_words, GuardC* g) except -1 nogil:
    # Try each uncertain position (from unc_list, or from the set bits of pos_bits, which are
    # cleared on the way, also when a runtime limit stops the loop) on the real stack, sharing
    # work between consecutive tokens.
    cdef intp_t base = st.depth
    cdef intp_t idx = 0, w = 0, pos, d, k, length, lcp, reached = 0, dead_at = -1
    cdef intp_t prev_off = 0, prev_len = 0
    cdef int64_t off
    cdef word_t bits
    cdef int32_t tid
    cdef bint ok
    cdef int32_t last = st.tok_index  # (the fill set it: the token being checked)
    cdef bint budgets = st.node_live != NULL
    bits = 0
    while True:
        # next position in ascending order
        if unc_list != NULL or pos_bits == NULL:
            if idx >= unc_n:
                break
            pos = unc_list[idx]
            idx += 1
        else:
            while bits == 0 and w < pos_words:
                bits = pos_bits[w]
                pos_bits[w] = 0
                w += 1
            if bits == 0:
                break
            pos = ((w - 1) << 5) + __builtin_ctz(bits)
            bits &= bits - 1
        tid = v.sorted_ids[pos]
        if g != NULL:
            g.work += 1  # one token checked (an exact fill visits the whole vocabulary)
        if bitset_test(row, tid):
            continue
        off = v.tok_offsets[pos]
        length = v.tok_offsets[pos + 1] - off
        # real common-prefix length with the previous token checked
        lcp = token_lcp(v, prev_off, prev_len, off, length)
        if dead_at >= 0 and lcp > dead_at:
            continue  # shares the prefix that already killed every path
        prev_off = off
        prev_len = length
        k = lcp if lcp < reached else reached
        stack_truncate(st, base + k)
        ok = True
        d = k
        while d < length:
            if guarded_step(st, a, v.tok_bytes[off + d], g) == 0:
                ok = False
                break
            d += 1
        if g != NULL and g.crossed:
            if pos_bits != NULL and unc_list == NULL:
                memset(pos_bits, 0, <size_t>pos_words * sizeof(word_t))
            break
        if ok:
            reached = length
            dead_at = -1
            if not budgets or stack_budget_alive(st, last):
                bitset_set(row, tid)
        else:
            reached = d
            dead_at = d
    stack_truncate(st, base)
    return 0


cdef int _spent_positions(const VocabC* v, const CacheEntryC* e, word_t* pos_bits,
                          intp_t n_words) except -1 nogil:
    # Mark for a real walk every sorted position the entry accepts or leaves uncertain.
    cdef intp_t k
    entry_positions(v, e, pos_bits)
    for k in range(e.n_unc):
        bitset_set(pos_bits, e.unc[k])
    return 0


cdef int _budget_token_sets(StackC* st, const AutomatonC* a, const VocabC* v, word_t* row,
                            intp_t n_words) except -1 nogil:
    # Step 4 with token budgets: a top whose budget the next token may spend adds only the ids
    # of its token set that pass accept_token_id (budget filter included); the others OR theirs.
    cdef intp_t i, w, base = st.depth
    cdef intp_t begin = st.set_start[base - 1], end = st.set_start[base]
    cdef int32_t node, k, tid
    cdef word_t x
    cdef const word_t* bits
    if a.n_token_sets == 0 or a.token_words != n_words:
        return 0
    for i in range(begin, end):
        node = st.tops[i]
        if node < 2:
            continue
        k = a.token_set_of[st.node_state[node]]
        if k < 0:
            continue
        bits = a.token_bits + k * n_words
        if not spent_top(st, node):
            bitset_or_into(row, bits, n_words)
            continue
        for w in range(n_words):
            x = bits[w] & ~row[w]
            while x:
                tid = <int32_t>((w << 5) + __builtin_ctz(x))
                x &= x - 1
                if accept_token_id(st, a, v, tid, NULL):
                    bitset_set(row, tid)
                    stack_truncate(st, base)
    return 0
