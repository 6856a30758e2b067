"""Draft-tree traversal: one mask row per node of a speculative draft tree, in one call.

The tree is XGrammar's / SGLang's layout: ``nxt[i]`` is node i's first child, ``sib[i]`` its
next sibling (-1 = none), ``tok[i]`` the draft token at node i; node 0 is the root (its token is
already accepted).  Depth first, children before siblings: a node is visited if its token is
allowed by its parent's row, its row is filled with the mask after its path, then its children
follow.  The parser state of a node's path is the parent's history plus the node's bytes, so a
sibling just truncates the history back to the parent (the persistent stack makes that O(1)):
nothing is copied, nothing is re-parsed.
"""

from libc.string cimport memset

from xmask.runtime._types cimport word_t, int32_t
from xmask.runtime._bitset cimport bitset_test
from xmask.runtime._stack cimport stack_truncate, stack_has_bottom
from xmask.runtime._fill cimport fill_job, accept_token_id, update_exact, is_stop_id
from xmask.runtime._clock cimport monotonic_seconds


cdef intp_t check_tree(const int64_t* nxt, const int64_t* sib, intp_t n,
                       intp_t* work) noexcept nogil:
    # -1 if the links from node 0 form a tree over [0, n) (every node reached at most once,
    # every link in [-1, n)); else the first offending node.  work: [2 * n] scratch.
    cdef intp_t* seen = work + n
    cdef intp_t top = 0, x, i
    cdef int64_t y
    for i in range(n):
        seen[i] = 0
        if not (-1 <= nxt[i] < n and -1 <= sib[i] < n):
            return i
    if n == 0:
        return -1
    if sib[0] >= 0:
        return 0  # the root has no siblings: it is the one current state
    work[top] = 0
    top += 1
    seen[0] = 1
    while top > 0:
        top -= 1
        x = work[top]
        for i in range(2):
            y = nxt[x] if i == 0 else sib[x]
            if y < 0:
                continue
            if seen[y]:
                return y
            seen[y] = 1
            work[top] = y
            top += 1
    return -1


cdef int traverse_tree(FillJob* job, bint terminate_without_stop,
                       const int64_t* nxt, const int64_t* sib, const int64_t* tok, intp_t n,
                       char* row0, intp_t stride_words, intp_t* work,
                       double time_threshold) except -1 nogil:
    # Rows [0, n) are zeroed, then filled for every visited node.  Returns 1, or 0 if
    # time_threshold (> 0 seconds) ran out first.  The stack history is restored.  A crossed
    # runtime limit (job.guard, counted per node) leaves every row zero, as a single fill does.
    # work: [3 * n] (explicit DFS stack of (node, parent), history depth after each node).
    cdef intp_t* pending = work            # pairs (node, parent)
    cdef intp_t* after = work + 2 * n      # history depth after each visited node
    cdef intp_t top = 0, cur, par, t
    cdef intp_t base = job.st.depth
    cdef word_t* parent_row
    cdef double deadline = monotonic_seconds() + time_threshold if time_threshold > 0 else 0.0
    cdef int result = 1
    for cur in range(n):
        memset(row0 + cur * stride_words * 4, 0, <size_t>job.v.n_words * sizeof(word_t))
    if n == 0:
        return 1
    pending[0] = 0
    pending[1] = -1
    top = 1
    while top > 0:
        if deadline > 0 and monotonic_seconds() > deadline:
            result = 0
            break
        top -= 1
        cur = pending[2 * top]
        par = pending[2 * top + 1]
        if job.guard != NULL:
            job.guard.work = 0  # the limit is per node: its token and its mask
        if sib[cur] >= 0:  # visited after cur's subtree
            pending[2 * top] = sib[cur]
            pending[2 * top + 1] = par
            top += 1
        if par >= 0:
            t = tok[cur]
            parent_row = <word_t*>(row0 + par * stride_words * 4)
            if not bitset_test(parent_row, t):
                continue
            stack_truncate(job.st, after[par])
            if is_stop_id(job.stop_ids, job.n_stop, t) and stack_has_bottom(job.st, job.st.depth - 1):
                continue  # accepted: the sequence ends here, nothing to fill
            if not accept_token_id(job.st, job.a, job.v, t, job.guard):
                if job.guard != NULL and job.guard.crossed:
                    break
                continue
        after[cur] = job.st.depth
        if terminate_without_stop and stack_has_bottom(job.st, job.st.depth - 1):
            continue  # is_terminated() on this path: XGrammar fills nothing here
        job.row = <word_t*>(row0 + cur * stride_words * 4)
        update_exact(job)
        fill_job(job)
        if job.guard != NULL and job.guard.crossed:
            break
        if nxt[cur] >= 0:
            pending[2 * top] = nxt[cur]
            pending[2 * top + 1] = cur
            top += 1
    stack_truncate(job.st, base)
    if job.guard != NULL and job.guard.crossed:
        for cur in range(n):
            memset(row0 + cur * stride_words * 4, 0, <size_t>job.v.n_words * sizeof(word_t))
    return result
