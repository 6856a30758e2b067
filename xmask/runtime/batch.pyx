"""BatchGrammarMatcher: masks for a whole batch of matchers in one call, on C threads.

One call validates everything with the GIL held (bitmask, row indices, that no matcher appears
twice, that none has terminated) and raises before any row is written; then it releases the GIL
once and spreads the rows over OpenMP threads (``prange``), each row running the same nogil
kernel as ``GrammarMatcher.fill_next_token_bitmask`` on its own matcher's stack and scratch
buffers.  Distinct matchers share only the read-only compiled tables, so rows never race.  As
for single fills, a batch whose estimated work is below the GIL hand-off cost (nogil_min_cost(),
see _fill.pyx) runs on the calling thread with the GIL held.

Accepting and rolling back are a few microseconds per row, far less than a GIL hand-off, so the
batch versions run row by row with the GIL held, after validating every row first.
"""

import os

from cython.parallel cimport prange
from libc.stdlib cimport malloc, calloc, free
from libc.stdint cimport uintptr_t
from cpython.ref cimport PyObject

from xmask.runtime._types cimport word_t, intp_t
from xmask.runtime._fill cimport FillJob, fill_job, fill_cost, fill_classifies, nogil_min_cost
from xmask.runtime.matcher cimport GrammarMatcher

from xmask.errors import BitmaskError, InvalidTokenError, XmaskError
from xmask.runtime.bitmask_rows import bitmask_rows, row_address, row_index
from xmask.runtime.matcher import as_count, as_input_bytes, as_token_id


cdef void _fill_noexcept(FillJob* job, char* failed) noexcept nogil:
    # fill_job for a worker thread, never raising inside the parallel loop: the only possible
    # error (MemoryError growing the stack) is printed as unraisable, leaves failed[0] set and
    # is raised by the caller after the loop.
    failed[0] = 1
    fill_job(job)
    failed[0] = 0


cdef void _fill_collecting(FillJob* job, char* failed, PyObject* errors) noexcept with gil:
    # fill_job for a worker thread whose fill classifies a state first (milliseconds of work, so
    # the GIL hand-off around it is cheap): its error (a GrammarLimitError from the compile
    # limits, MemoryError) goes to the list `errors`, raised by the caller after the loop.
    failed[0] = 1
    try:
        with nogil:
            fill_job(job)
        failed[0] = 0
    except BaseException as e:
        (<list>errors).append(e)


def _auto_threads():
    # XGrammar's "auto": half the hardware threads, at least one.
    return max(1, (os.cpu_count() or 2) // 2)


def _check_matchers(matchers):
    """The matchers as a list of distinct, initialized GrammarMatcher objects (XmaskError
    otherwise)."""
    cdef GrammarMatcher gm
    ms = list(matchers)
    seen = {}
    for i, m in enumerate(ms):
        if not isinstance(m, GrammarMatcher):
            raise XmaskError(f"matchers[{i}] is a {type(m).__name__}, not a GrammarMatcher")
        gm = m
        try:
            gm._check_ready()
        except XmaskError as e:
            raise XmaskError(f"{e} (matchers[{i}])") from None
        j = seen.setdefault(id(m), i)
        if j != i:
            raise XmaskError(
                f"matchers[{j}] and matchers[{i}] are the same GrammarMatcher: a batch needs "
                "distinct matchers (one per sequence; use fork() to copy one)"
            )
    return ms


cdef int _enter_all(list ms, bint fill=False) except -1:
    # Enter every matcher (see GrammarMatcher._enter) before touching any, so a batch call
    # either runs on all rows or raises with nothing changed; _leave_all undoes it.  fill: a
    # fill's entry (a provisional matcher stays on its first part: GrammarMatcher._enter_fill).
    cdef GrammarMatcher m
    cdef Py_ssize_t i, j
    for i in range(len(ms)):
        m = ms[i]
        try:
            if fill:
                m._enter_fill()
            else:
                m._enter()
        except XmaskError as e:
            for j in range(i):
                (<GrammarMatcher>ms[j])._leave()
            raise XmaskError(f"{e} (matchers[{i}])") from None
    return 0


cdef void _leave_all(list ms) noexcept:
    cdef Py_ssize_t i
    for i in range(len(ms)):
        (<GrammarMatcher>ms[i])._leave()


def _check_len(what, values, n):
    values = list(values)
    if len(values) != n:
        raise XmaskError(f"{what} has {len(values)} entries for {n} matchers")
    return values


cdef class BatchGrammarMatcher:
    """Fills, accepts and rolls back for a batch of matchers in one call each.

    ``max_threads``: how many C threads ``batch_fill_next_token_bitmask`` may use ("auto": half
    the CPU count, at least 1, as XGrammar).

    Example::

        >>> import xmask
        >>> info = xmask.TokenizerInfo.from_huggingface(xmask.default_tokenizer())
        >>> compiled = xmask.GrammarCompiler(info).compile_builtin_json_grammar()
        >>> matchers = [xmask.GrammarMatcher(compiled) for _ in range(3)]
        >>> bitmask = xmask.allocate_token_bitmask(4, info.vocab_size)
        >>> batch = xmask.BatchGrammarMatcher(max_threads=2)
        >>> batch.batch_fill_next_token_bitmask(matchers, bitmask, indices=[0, 2, 3])
        >>> xmask.BatchGrammarMatcher.batch_accept_string(matchers, ["[", "{", "x"])
        [True, True, False]
        >>> xmask.BatchGrammarMatcher.batch_rollback(matchers, [1, 1, 0])
    """

    cdef readonly int max_threads

    def __init__(self, max_threads="auto"):
        if isinstance(max_threads, str) and max_threads == "auto":
            self.max_threads = _auto_threads()
            return
        if isinstance(max_threads, bool) or not isinstance(max_threads, int) or max_threads < 1:
            raise ValueError(f'max_threads must be a positive int or "auto", got {max_threads!r}')
        self.max_threads = max_threads

    def batch_fill_next_token_bitmask(self, matchers, bitmask, indices=None, debug_print=False):
        """Fill row ``indices[i]`` (default: row i) of ``bitmask`` with ``matchers[i]``'s mask.

        ``bitmask`` as for ``GrammarMatcher.fill_next_token_bitmask`` (int32 NumPy array or
        torch CPU tensor, rows of ceil(vocab_size / 32) words, rows may be strided); it may
        have more rows than the batch.  Every argument is checked before any row is written:
        ``BitmaskError`` for the bitmask or indices (out of range, repeated), ``XmaskError``
        for a matcher given twice, a terminated matcher or a length mismatch.  A matcher that
        crossed a runtime limit (``GrammarMatcher.limit_error``) gets an all-zero row and the
        other rows are filled as usual: one bad request never fails the batch.
        """
        cdef intp_t n, i, total = 0
        cdef GrammarMatcher m
        ms = _check_matchers(matchers)
        n = len(ms)
        if n == 0:
            return
        _enter_all(ms, True)
        try:
            total = self._fill(ms, bitmask, indices)
        finally:
            _leave_all(ms)
        for i in range(n):  # (the rows were checked by _fill)
            m = ms[i]
            if m.provisional:  # its first part's row is exact unless a walk met a stub
                m._after_provisional_fill(bitmask, i if indices is None else indices[i], False)
        if debug_print:
            print(f"BatchGrammarMatcher.batch_fill_next_token_bitmask: {n} rows, "
                  f"{min(self.max_threads, n)} threads, estimated work {total}")

    cdef intp_t _fill(self, list ms, bitmask, indices) except -1:
        # batch_fill_next_token_bitmask on entered matchers; returns the estimated work.
        cdef intp_t n = len(ms), i, nt, total = 0
        cdef FillJob* jobs
        cdef char* failed
        cdef char* classifies
        cdef GrammarMatcher m
        n_words = (<GrammarMatcher>ms[0]).vt.c.n_words
        for i in range(n):
            m = ms[i]
            if m.vt.c.n_words != n_words:
                raise BitmaskError(
                    f"matchers[{i}] has a vocabulary of {m.vt.c.n_words} words per row, "
                    f"matchers[0] of {n_words}: one bitmask cannot hold both"
                )
        rows = bitmask_rows(bitmask, n_words)
        if indices is None:
            idx = list(range(n))
            if n > rows.n_rows:
                raise BitmaskError(f"bitmask has {rows.n_rows} rows for {n} matchers")
        else:
            idx = [row_index(k) for k in _check_len("indices", indices, n)]
            if len(set(idx)) != n:
                raise BitmaskError(f"indices repeat a row (rows would race): {idx}")
        addrs = [row_address(rows, k) for k in idx]
        for i in range(n):
            m = ms[i]
            if m.terminated:
                raise XmaskError(
                    f"matchers[{i}] has terminated (a stop token was accepted): nothing can "
                    "follow; roll it back or reset it, or leave it out of the batch"
                )
        jobs = <FillJob*>malloc(n * sizeof(FillJob))
        failed = <char*>calloc(2 * n, 1)
        if jobs == NULL or failed == NULL:
            free(jobs)
            free(failed)
            raise MemoryError()
        classifies = failed + n
        errors = []
        try:
            for i in range(n):
                m = ms[i]
                m._make_job(&jobs[i], <word_t*><uintptr_t>addrs[i])
                total += fill_cost(&jobs[i])
            nt = min(<intp_t>self.max_threads, n)
            if total < nogil_min_cost():
                for i in range(n):
                    fill_job(&jobs[i])
            elif nt <= 1:
                with nogil:
                    for i in range(n):
                        fill_job(&jobs[i])
            else:
                # The loop body must not be able to raise: otherwise Cython makes every OpenMP
                # thread take the GIL on entry and exit, which is the very hand-off (up to a
                # switch interval per thread) this call exists to avoid.
                for i in range(n):
                    classifies[i] = fill_classifies(&jobs[i])
                for i in prange(n, nogil=True, num_threads=nt, schedule="dynamic"):
                    if classifies[i]:
                        _fill_collecting(&jobs[i], &failed[i], <PyObject*>errors)
                    else:
                        _fill_noexcept(&jobs[i], &failed[i])
                if errors:
                    raise errors[0]
                for i in range(n):
                    if failed[i]:
                        raise MemoryError(f"filling the mask of matchers[{i}] ran out of memory")
        finally:
            free(jobs)
            free(failed)
        return total

    @staticmethod
    def batch_fill_temperature(matchers, temperatures, indices=None):
        """Write each matcher's ``temperature`` (-1 for None) into ``temperatures[indices[i]]``
        (default: element i); ``temperatures`` is a 1-D float32 NumPy array or CPU tensor.
        xmask grammars never set temperatures, so this is each matcher's default_temperature."""
        ms = _check_matchers(matchers)
        dtype = str(getattr(temperatures, "dtype", ""))
        if dtype not in ("float32", "torch.float32") or len(getattr(temperatures, "shape", ())) != 1:
            raise XmaskError(
                f"temperatures must be a 1-D float32 array or tensor, got "
                f"{type(temperatures).__name__} {dtype} {tuple(getattr(temperatures, 'shape', ()))}"
            )
        if type(temperatures).__module__.startswith("torch") and temperatures.device.type != "cpu":
            raise XmaskError(f"temperatures must be on the CPU, got {temperatures.device}")
        if indices is None:
            idx = list(range(len(ms)))
        else:
            idx = [row_index(k) for k in _check_len("indices", indices, len(ms))]
        for k in idx:
            if not 0 <= k < temperatures.shape[0]:
                raise XmaskError(f"index {k} out of range for {temperatures.shape[0]} temperatures")
        for m, k in zip(ms, idx):
            t = m.temperature
            temperatures[k] = -1.0 if t is None else t

    @staticmethod
    def batch_accept_token(matchers, tokens, debug_print=False):
        """``matchers[i].accept_token(tokens[i])`` for every i; the list of results.

        Every token id is checked first (``InvalidTokenError`` naming the row, nothing accepted).
        """
        cdef GrammarMatcher m
        ms = _check_matchers(matchers)
        toks = _check_len("tokens", tokens, len(ms))
        ids = []
        for i, (m, t) in enumerate(zip(ms, toks)):
            t = as_token_id(t, f"tokens[{i}]")
            if not 0 <= t < m.vt.c.vocab_size:
                raise InvalidTokenError(
                    f"tokens[{i}] = {t} is outside the vocabulary [0, {m.vt.c.vocab_size})"
                )
            ids.append(t)
        _enter_all(ms)
        try:
            out = [bool(m._accept_id(t)) for m, t in zip(ms, ids)]
        finally:
            _leave_all(ms)
        if debug_print:
            print(f"BatchGrammarMatcher.batch_accept_token({ids}) -> {out}")
        return out

    @staticmethod
    def batch_accept_string(matchers, strings, debug_print=False):
        """``matchers[i].accept_string(strings[i])`` for every i (str or bytes); the results.

        Every argument is checked first (TypeError naming the row, nothing accepted).
        """
        cdef GrammarMatcher m
        ms = _check_matchers(matchers)
        strs = _check_len("strings", strings, len(ms))
        data = [as_input_bytes(s, f"strings[{i}]") for i, s in enumerate(strs)]
        _enter_all(ms)
        try:
            out = [bool(m._accept_data(d)) for m, d in zip(ms, data)]
        finally:
            _leave_all(ms)
        if debug_print:
            print(f"BatchGrammarMatcher.batch_accept_string -> {out}")
        return out

    @staticmethod
    def batch_rollback(matchers, num_tokens=1):
        """``matchers[i].rollback(num_tokens[i])`` (or the same integer for all; any integer
        type, as ``rollback``).  Every count is checked first: a bad one raises
        ``InvalidTokenError`` (a ValueError) naming the row and nothing is rolled back."""
        cdef GrammarMatcher m
        ms = _check_matchers(matchers)
        if isinstance(num_tokens, (str, bytes)) or not hasattr(num_tokens, "__iter__") or (
                getattr(num_tokens, "ndim", 1) == 0):
            counts = [as_count(num_tokens, "num_tokens")] * len(ms)
        else:
            counts = [as_count(k, f"num_tokens[{i}]")
                      for i, k in enumerate(_check_len("num_tokens", num_tokens, len(ms)))]
        _enter_all(ms)
        try:
            for i, (m, k) in enumerate(zip(ms, counts)):
                m._check_rollback(k, f"matchers[{i}] by ")
            for m, k in zip(ms, counts):
                m._rollback(k)
        finally:
            _leave_all(ms)
