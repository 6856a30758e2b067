"""GrammarMatcher: per-sequence parser state over a shared, immutable CompiledGrammar.

The state is a persistent stack (``_stack.pyx``): one top set per accepted byte, a list of history
depths per accepted token, rollback = truncation.  ``fill_next_token_bitmask`` runs the mask
kernel (``_fill.pyx``) straight into the caller's bitmask row (NumPy or torch, no copy); it keeps
the GIL for short fills and releases it for long ones (see ``_fill.pyx`` for why and where the
threshold comes from).  Also here: ``fork``, draft-tree traversal for speculative decoding and the
process-wide recursion bound (``set_max_recursion_depth``).
"""

import contextlib
import operator
import os
import warnings

cimport cython
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memset, memcpy
from libc.stdint cimport int64_t, uintptr_t

from xmask.runtime._types cimport int32_t, uint8_t, word_t, intp_t, XM_FLAG_TOKEN
from xmask.runtime._bitset cimport bitset_set, bitset_test
from xmask.runtime._stack cimport (
    stack_init, stack_free, stack_reset, stack_truncate, stack_clone, stack_has_bottom,
    stack_drop_front, stack_memory_bytes, stack_budget_token,
)
from xmask.runtime._stack_budget cimport stack_enable_budgets, stack_repeat_set
from xmask.runtime._stack_gss cimport stack_start
from xmask.runtime._guard cimport (
    GuardC, guarded_step, XM_LIMIT_NONE, XM_LIMIT_TOPS, XM_LIMIT_WORK, XM_LIMIT_DEPTH,
    XM_LIMIT_MEMORY,
)
from xmask.runtime._fill cimport (
    FillJob, fill_job, fill_cost, accept_bytes, accept_token_id, max_top_depth, update_exact,
    current_max_depth, is_stop_id, budget_end,
    set_max_depth, nogil_min_cost,
)
from xmask.runtime._draft_tree cimport check_tree, traverse_tree
from xmask.runtime._bitmask_view cimport RowsC, rows_fast, row_index_fast

from xmask.errors import InvalidTokenError, BitmaskError, XmaskError, RuntimeLimitError
from xmask.limits import DEFAULT_RUNTIME_LIMITS, RuntimeLimits
from xmask.runtime.bitmask_rows import bitmask_rows, row_address
from xmask.grammar.captures import capture_log_for

cdef intp_t _MAX_JUMP_FORWARD_BYTES = 4096
cdef word_t _EMPTY_ROW[1]  # the row of a vocabulary of 0 tokens (0 words are written)
# accept_string keeps the GIL for strings up to this many bytes (a few microseconds of work)
# unless the predicted work is large: an accept releases the GIL when the matcher's work per
# byte in its last accept (GrammarMatcher.byte_work) times the input's bytes reaches
# _ACCEPT_NOGIL_WORK units (~20-200 us at 10-100 ns a unit; the fill threshold, nogil_min_cost,
# is ~60-200 us too).  JSON takes 1-6 units a byte: its accepts keep the GIL; an ambiguous
# grammar's closure through thousands of frames costs thousands a byte and releases it.
cdef intp_t _ACCEPT_NOGIL_BYTES = 4096
cdef intp_t _ACCEPT_NOGIL_WORK = 2000


# The busy flag (see GrammarMatcher._enter) is an atomic test-and-set flag.
from xmask.runtime._atomic cimport xm_flag_try as _try_acquire, xm_flag_release as _release


# ---- recursion bound -------------------------------------------------------------------------

_DEPTH_LIMIT = 1 << 30


def set_max_recursion_depth(max_recursion_depth):
    """Set the process-wide bound on how deep a matcher's parse stack may get (in rule frames).

    XGrammar uses this setting to bound recursion; in xmask it bounds the nesting a matcher
    follows: a token that would need a stack deeper than the bound is rejected by
    ``accept_token`` / ``accept_string`` (they return False) and left out of every mask, so a
    pathological input can never exhaust memory.  Tail calls do not count; one level of JSON
    nesting costs one or two frames.  Default 10,000 (XGrammar's), or the
    ``XMASK_MAX_RECURSION_DEPTH`` environment variable.  Thread-safe; read at every call.

    Example::

        >>> import xmask
        >>> old = xmask.get_max_recursion_depth()
        >>> xmask.set_max_recursion_depth(500)
        >>> xmask.get_max_recursion_depth()
        500
        >>> xmask.set_max_recursion_depth(old)
    """
    n = as_token_id(max_recursion_depth, "max_recursion_depth")
    if not 1 <= n <= _DEPTH_LIMIT:
        raise ValueError(f"max_recursion_depth must be in [1, {_DEPTH_LIMIT}], got {n}")
    set_max_depth(n)


def get_max_recursion_depth():
    """The current bound set by ``set_max_recursion_depth`` (default 10,000).

    Example::

        >>> import xmask
        >>> xmask.get_max_recursion_depth() > 0
        True
    """
    return current_max_depth()


@contextlib.contextmanager
def max_recursion_depth(temp_depth):
    """Set the recursion bound for a ``with`` block, restoring the previous value after.

    Example::

        >>> import xmask
        >>> with xmask.max_recursion_depth(100):
        ...     xmask.get_max_recursion_depth()
        100
    """
    prev = get_max_recursion_depth()
    set_max_recursion_depth(temp_depth)
    try:
        yield
    finally:
        set_max_recursion_depth(prev)


def _depth_from_env():
    value = os.environ.get("XMASK_MAX_RECURSION_DEPTH")
    if value is None:
        return
    try:
        set_max_recursion_depth(int(value))
    except ValueError:
        warnings.warn(f"ignoring XMASK_MAX_RECURSION_DEPTH={value!r}: not an int in [1, 2**30]")


_depth_from_env()


def as_token_id(value, what="token id"):
    """An integer from an int, NumPy integer or 0-d integer tensor (``operator.index``; not a
    bool, float or string); InvalidTokenError otherwise.  Every integer argument of the matcher
    API (token ids, rollback counts, draft-tree links) goes through here, so all take the same
    types.

    Example::

        >>> import numpy as np
        >>> as_token_id(np.int64(7))
        7
    """
    if isinstance(value, bool) or "bool" in str(getattr(value, "dtype", "")):
        raise InvalidTokenError(f"{what} must be an integer, got {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise InvalidTokenError(
            f"{what} must be an integer, got {value!r} ({type(value).__name__})"
        ) from None


def as_input_bytes(value, what):
    """The bytes to accept: a str UTF-8 encoded, bytes-like as bytes; TypeError naming
    ``what`` otherwise, XmaskError for a str with a lone surrogate (no UTF-8 spells it)."""
    if isinstance(value, str):
        try:
            return value.encode("utf-8")
        except UnicodeEncodeError as e:
            raise XmaskError(f"{what} is not valid text: lone surrogate "
                             f"U+{ord(value[e.start]):04X} at index {e.start}") from None
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"{what} must be str or bytes, got {type(value).__name__}")


def as_count(value, what="num_tokens"):
    """A non-negative integer (as ``as_token_id``), e.g. a rollback count; InvalidTokenError
    (a ValueError) otherwise."""
    n = as_token_id(value, what)
    if n < 0:
        raise InvalidTokenError(f"{what} must be a non-negative integer, got {n}")
    if n >= 1 << 62:  # callers hold counts in C integers; no matcher has accepted that many
        raise InvalidTokenError(f"{what} {n} is more tokens than any matcher has accepted")
    return n


def _unusable_error(bint ready):
    # The error of _enter: a matcher that was never initialized, or one already in a call.
    if not ready:
        return XmaskError(
            "GrammarMatcher is not initialized: it was created without __init__ (e.g. "
            "GrammarMatcher.__new__); create it with GrammarMatcher(compiled_grammar, ...)"
        )
    return XmaskError(
        "GrammarMatcher is being used by another thread at the same time (or re-entered from "
        "inside one of its own calls): a matcher holds one sequence's state and must be used "
        "from one thread at a time; give each thread its own matcher (fork() copies one)"
    )


def _index_array(x, name):
    """A 1-D int64 NumPy copy of a draft-tree tensor / array / list (small: one per node);
    InvalidTokenError (a ValueError) if it is not one."""
    import numpy as np

    if type(x).__module__.startswith("torch") and x.device.type != "cpu":
        raise InvalidTokenError(f"{name} must be on the CPU, got {x.device}")
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError) as e:
        raise InvalidTokenError(f"{name} must be a 1-D integer tensor or array: {e}") from None
    if arr.dtype.kind not in "iu" and arr.size > 0:
        # Casting would silently truncate floats and turn bools into links.
        raise InvalidTokenError(f"{name} must hold integers, got dtype {arr.dtype}")
    arr = np.ascontiguousarray(arr, dtype=np.int64)
    if arr.ndim != 1:
        raise InvalidTokenError(f"{name} must be 1-D, got shape {arr.shape}")
    return arr


@cython.final
cdef class GrammarMatcher:
    """Matches one token sequence against a compiled grammar and produces next-token masks.

    Cheap to create (the compiled grammar is shared and immutable); one matcher per sequence.
    ``fork()`` (or ``copy.copy``) copies one.

    Threads: a matcher is used from one thread at a time, as in XGrammar; many threads may
    each use their own matchers of one ``CompiledGrammar``.  xmask *detects* two calls on one
    matcher overlapping (another thread calling while a fill runs without the GIL) and raises
    ``XmaskError`` in the second caller instead of corrupting the state; it does not lock, so
    correct single-thread use costs a flag check per call.  Calling ``__init__`` again
    re-initializes the matcher (the old state is freed); a failed ``__init__`` leaves the
    previous state intact.

    Example::

        >>> import xmask
        >>> info = xmask.TokenizerInfo.from_huggingface(xmask.default_tokenizer())
        >>> compiled = xmask.GrammarCompiler(info).compile_builtin_json_grammar()
        >>> matcher = xmask.GrammarMatcher(compiled)
        >>> bitmask = xmask.allocate_token_bitmask(1, info.vocab_size)
        >>> matcher.fill_next_token_bitmask(bitmask)
        True
        >>> matcher.accept_string('{"a": 1}')
        True
        >>> matcher.is_completed(), matcher.is_terminated()
        (True, False)
    """

    def __cinit__(self):
        # tp_alloc zeroes the object: every pointer is NULL, ready and busy are 0.
        self.st_ready = False
        self.ready = False
        self.busy = 0

    def __init__(self, compiled_grammar, override_stop_tokens=None,
                 bint terminate_without_stop_token=False, max_rollback_tokens=-1,
                 default_temperature=None, *, limits=None):
        from xmask.compiler.compiled import CompiledGrammar

        cdef GrammarMatcher fresh
        if self.busy:
            raise _unusable_error(True)
        # Validate everything, then build the new state in a fresh object and swap it in: a
        # failing call (bad argument, MemoryError) leaves this matcher as it was, and a
        # successful re-init hands the old buffers to `fresh`, whose __dealloc__ frees them.
        if not isinstance(compiled_grammar, CompiledGrammar):
            raise TypeError(
                f"GrammarMatcher needs a CompiledGrammar, got {type(compiled_grammar).__name__}"
            )
        vocab_size = compiled_grammar._vocab_tables.vocab_size
        if override_stop_tokens is None:
            stops = list(compiled_grammar.tokenizer_info.stop_token_ids)
        elif not hasattr(override_stop_tokens, "__iter__") or (
                getattr(override_stop_tokens, "ndim", 1) == 0):  # one id, 0-d array/tensor too
            stops = [override_stop_tokens]
        else:
            stops = list(override_stop_tokens)
        stops = [as_token_id(t, "stop token id") for t in stops]
        for t in stops:
            if not 0 <= t < vocab_size:
                raise InvalidTokenError(f"stop token id {t} is outside [0, {vocab_size})")
        temperature = None if default_temperature is None else _as_float(
            default_temperature, "default_temperature")
        # XGrammar 0.2.8 ignores max_rollback_tokens (with a DeprecationWarning); xmask keeps
        # only that many tokens' history, so a server's memory per sequence stays bounded.
        rollback = -1 if max_rollback_tokens is None else as_token_id(
            max_rollback_tokens, "max_rollback_tokens")
        if rollback < -1:
            raise ValueError(f"max_rollback_tokens must be -1 (unlimited) or >= 0, got {rollback}")
        if limits is None:
            limits = DEFAULT_RUNTIME_LIMITS
        elif not isinstance(limits, RuntimeLimits):
            raise TypeError(f"limits must be an xmask.RuntimeLimits, got {type(limits).__name__}")
        self._init_from(compiled_grammar, sorted(set(stops)), terminate_without_stop_token,
                        limits, rollback, temperature)

    cdef int _init_from(self, compiled_grammar, list stops, bint twst, limits,
                        intp_t max_rollback, temperature, bint whole=False) except -1:
        # A new state built in a fresh object, swapped in (the old one is freed with `fresh`).
        cdef GrammarMatcher fresh = GrammarMatcher.__new__(GrammarMatcher)
        fresh._default_temperature = temperature
        fresh._setup(compiled_grammar, stops, twst, limits, max_rollback, whole)
        fresh.st_ready = True  # stack_free is safe on the zeroed or partly built stack
        stack_init(&fresh.st)
        if fresh.at.c.call_budget != NULL:  # token budgets: deadlines on the stack
            stack_enable_budgets(&fresh.st)
        fresh._reset_state()
        fresh.ready = True
        # Python code ran above (__index__, warning filters, the allocator's GC): another
        # thread may have entered meanwhile, so take the flag for the swap itself.
        if not _try_acquire(&self.busy):
            raise _unusable_error(True)
        try:
            self._swap_state(fresh)
        finally:
            self._leave()
        return 0

    cdef int _materialize(self) except -1:
        # A provisional matcher (at the start of a lazy grammar's first part) moves to the
        # whole grammar, built now unless a thread built it already; it is still at the start,
        # so nothing but the tables changes.  The build's errors (a compile limit) propagate.
        if not self.ready or self.busy:
            raise _unusable_error(self.ready)
        self._init_from(self._grammar, self._stop_list, self.terminate_without_stop_token,
                        self._limits, self.max_rollback, self._default_temperature, True)
        return 0

    cdef int _enter_fill(self) except -1:
        # _enter for a fill: a provisional matcher stays on the first part (see
        # _after_provisional_fill)
        if not self.ready or not _try_acquire(&self.busy):
            raise _unusable_error(self.ready)
        return 0

    cdef int _enter(self) except -1:
        # Called first by every public method that reads or writes the state; the caller calls
        # _leave in a finally.  With the GIL held, test-and-set cannot interleave with another
        # thread's, and a call that releases the GIL (long fills and accepts) keeps `busy` set,
        # so a second thread's call raises instead of racing on the stack.  Detection, not a
        # lock: XGrammar matchers are single-threaded and callers should not pay for sharing.
        # The flag is taken with an atomic compare-and-swap so detection also holds on
        # free-threaded CPython (no GIL); uncontended, that is a few nanoseconds.
        if self.provisional:
            self._materialize()
        return self._enter_fill()

    cdef void _leave(self) noexcept:
        _release(&self.busy)

    cdef int _swap_state(self, GrammarMatcher other) except -1:
        # Exchange every field with `other` (used to install a freshly built state).
        cdef StackC st = self.st
        cdef GuardC g
        self.st = other.st
        other.st = st
        self.st_ready, other.st_ready = other.st_ready, self.st_ready
        self.ready, other.ready = other.ready, self.ready
        self._grammar, other._grammar = other._grammar, self._grammar
        self.at, other.at = other.at, self.at
        self.vt, other.vt = other.vt, self.vt
        self.ct, other.ct = other.ct, self.ct
        self.token_depth, other.token_depth = other.token_depth, self.token_depth
        self.n_tokens, other.n_tokens = other.n_tokens, self.n_tokens
        self.cap_tokens, other.cap_tokens = other.cap_tokens, self.cap_tokens
        self.max_rollback, other.max_rollback = other.max_rollback, self.max_rollback
        self.n_dropped, other.n_dropped = other.n_dropped, self.n_dropped
        g = self.guard
        self.guard = other.guard
        other.guard = g
        self.byte_work, other.byte_work = other.byte_work, self.byte_work
        self._limits, other._limits = other._limits, self._limits
        self.terminated, other.terminated = other.terminated, self.terminated
        self.terminate_without_stop_token, other.terminate_without_stop_token = (
            other.terminate_without_stop_token, self.terminate_without_stop_token)
        self.stop_ids, other.stop_ids = other.stop_ids, self.stop_ids
        self.n_stop, other.n_stop = other.n_stop, self.n_stop
        self._stop_list, other._stop_list = other._stop_list, self._stop_list
        self._default_temperature, other._default_temperature = (
            other._default_temperature, self._default_temperature)
        self._cap_units, other._cap_units = other._cap_units, self._cap_units
        self._cap_log, other._cap_log = other._cap_log, self._cap_log
        self.provisional, other.provisional = other.provisional, self.provisional
        return 0

    cdef int _setup(self, compiled_grammar, list stops, bint twst, limits,
                    intp_t max_rollback, bint whole=False) except -1:
        # Everything but the stack, on a fresh (zeroed) object: tables, stop tokens, limits
        # (whole: the whole grammar's even when a lazy grammar could start provisional).
        # Nothing here is vocabulary-sized (fills use per-thread buffers, see _fill.pyx).  On
        # MemoryError the object is discarded (and freed).
        self._grammar = compiled_grammar
        self.at, self.vt, self.ct, captured, self.provisional = (
            compiled_grammar._matcher_tables(whole))
        if self.at.c.n_token_sets and self.at.c.token_words != self.vt.c.n_words:
            raise XmaskError("the compiled grammar's token sets do not match its vocabulary")
        self._stop_list = stops
        self.terminate_without_stop_token = twst
        self._cap_log = capture_log_for(captured, compiled_grammar.tokenizer_info)
        self._cap_units = None if self._cap_log is None else []
        self._limits = limits
        self.guard.max_tops = limits.max_stack_tops
        self.guard.max_work = limits.max_work_per_call
        self.guard.max_depth = 0 if limits.max_stack_depth is None else limits.max_stack_depth
        self.guard.max_bytes = limits.max_stack_bytes
        self.guard.caps_seen = -1  # the first guarded step measures
        self.guard.work = 0
        self.guard.crossed = XM_LIMIT_NONE
        self.max_rollback = max_rollback
        self.n_dropped = 0
        self.n_stop = len(stops)
        self.stop_ids = <int32_t*>malloc(max(1, self.n_stop) * sizeof(int32_t))
        self.cap_tokens = 64
        self.token_depth = <intp_t*>malloc(self.cap_tokens * sizeof(intp_t))
        if self.stop_ids == NULL or self.token_depth == NULL:
            raise MemoryError()
        for i, t in enumerate(stops):  # sorted: is_stop_id searches them
            self.stop_ids[i] = t
        return 0

    def __dealloc__(self):
        if self.st_ready:
            stack_free(&self.st)
        free(self.token_depth)
        free(self.stop_ids)

    # ---- state -------------------------------------------------------------------------

    def reset(self):
        """Return to the start of the grammar (forgetting every accepted token); also clears
        a runtime-limit error (``limit_error``)."""
        self._enter()
        try:
            self._reset_state()
        finally:
            self._leave()

    cdef int _reset_state(self) except -1:
        # Dropping the arena too keeps long-lived matchers from accumulating nodes.
        stack_reset(&self.st, True)
        self.st.max_depth = current_max_depth()
        # the start's closure has a call's work budget too: nullable rules called from big
        # repeats (root ::= ("" r){2000}, r ::= ("" s){2000}) made it take seconds and GBs
        self.st.step_budget = self.guard.max_work
        stack_start(&self.st, &self.at.c, self.at.c.root_start)
        self.st.step_budget = 0
        self.n_tokens = 0
        self.n_dropped = 0
        self.token_depth[0] = self.st.depth
        self.terminated = False
        if self._cap_units is not None:
            del self._cap_units[:]
        # past it, the matcher starts (and restarts on reset) in the error state
        self.guard.crossed = XM_LIMIT_WORK if self.st.step_over else XM_LIMIT_NONE
        self.byte_work = 0
        return 0

    def fork(self):
        """An independent copy of this matcher: same grammar and settings, same accepted tokens
        (rollback works across the fork point), then each evolves on its own.
        ``copy.copy(matcher)`` and ``copy.deepcopy(matcher)`` are the same.

        Cheap: the compiled grammar is shared; of the state only the used part of the parse
        stack's arena and history is copied (one memcpy each), no token is re-parsed.

        Example::

            >>> import xmask
            >>> info = xmask.TokenizerInfo.from_huggingface(xmask.default_tokenizer())
            >>> m = xmask.GrammarMatcher(xmask.GrammarCompiler(info).compile_builtin_json_grammar())
            >>> m.accept_string('[1')
            True
            >>> child = m.fork()
            >>> child.accept_string(']'), m.is_completed(), child.is_completed()
            (True, False, True)
        """
        cdef GrammarMatcher child = GrammarMatcher.__new__(GrammarMatcher)
        self._enter()
        try:
            child._default_temperature = self._default_temperature
            child._setup(self._grammar, list(self._stop_list),
                         self.terminate_without_stop_token, self._limits, self.max_rollback)
            child.st_ready = True  # stack_free is safe on the zeroed or partly copied stack
            stack_clone(&child.st, &self.st)
            if self.n_tokens + 2 > child.cap_tokens:
                free(child.token_depth)
                child.token_depth = NULL
                child.cap_tokens = self.cap_tokens
                child.token_depth = <intp_t*>malloc(child.cap_tokens * sizeof(intp_t))
                if child.token_depth == NULL:
                    raise MemoryError()
            memcpy(child.token_depth, self.token_depth, (self.n_tokens + 1) * sizeof(intp_t))
            child.n_tokens = self.n_tokens
            child.n_dropped = self.n_dropped
            child.guard.crossed = self.guard.crossed
            child.byte_work = self.byte_work
            child.terminated = self.terminated
            if self._cap_units is not None:
                child._cap_units = list(self._cap_units)
            child.ready = True
        finally:
            self._leave()
        return child

    def __copy__(self):
        return self.fork()

    def __deepcopy__(self, memo):
        # The compiled grammar is immutable and shared, as in fork(): nothing deeper to copy.
        return self.fork()

    def is_terminated(self):
        """True once a stop token was accepted.  With ``terminate_without_stop_token=True``:
        True whenever the input so far is a complete sentence of the grammar (more tokens may
        still be accepted if the grammar allows them; stop tokens are never consumed)."""
        self._enter()
        try:
            if self.terminated:
                return True
            return self.terminate_without_stop_token and self._can_end()
        finally:
            self._leave()

    def is_completed(self):
        """Whether the input accepted so far is a complete sentence of the grammar (the root
        rule is fully matched).  Unlike ``is_terminated`` no stop token is needed; after a
        stop token it stays True.

        Example::

            >>> import xmask
            >>> info = xmask.TokenizerInfo.from_huggingface(xmask.default_tokenizer())
            >>> m = xmask.GrammarMatcher(xmask.GrammarCompiler(info).compile_builtin_json_grammar())
            >>> m.accept_string('[1'), m.is_completed()
            (True, False)
            >>> m.accept_string(']'), m.is_completed()
            (True, True)
        """
        self._enter()
        try:
            return self.terminated or self._can_end()
        finally:
            self._leave()

    cdef bint _can_end(self) noexcept:
        return stack_has_bottom(&self.st, self.st.depth - 1)

    cdef int _check_ready(self) except -1:
        # For properties that read only settings: no state is touched, so `busy` is ignored.
        if not self.ready:
            raise _unusable_error(False)
        return 0

    @property
    def compiled_grammar(self):
        """The ``CompiledGrammar`` this matcher runs on (shared, immutable)."""
        self._check_ready()
        return self._grammar

    @property
    def stop_token_ids(self):
        """The stop token ids this matcher accepts when the grammar can end (the tokenizer's,
        or ``override_stop_tokens``)."""
        self._check_ready()
        return list(self._stop_list)

    @property
    def max_rollback_tokens(self):
        """How many of the last accepted tokens ``rollback`` can undo (-1: all, the default).

        With a limit the matcher drops the history of older tokens, in chunks (once it holds
        ``2 * max_rollback_tokens + 1024`` tokens it keeps the last ``max_rollback_tokens``), so
        its memory stays bounded on long generations.  Rolling back up to
        ``max_rollback_tokens`` always works; further works while the history is still held
        (``num_accepted_tokens``), else raises ``InvalidTokenError``.  (XGrammar 0.2.8 warns,
        ignores the argument and always returns -1 here.)

        Example::

            >>> import xmask
            >>> info = xmask.TokenizerInfo.from_huggingface(xmask.default_tokenizer())
            >>> cg = xmask.GrammarCompiler(info).compile_builtin_json_grammar()
            >>> m = xmask.GrammarMatcher(cg, max_rollback_tokens=2)
            >>> m.accept_string("["), m.accept_string("1"), m.accept_string(","), m.max_rollback_tokens
            (True, True, True, 2)
            >>> m.num_accepted_tokens  # nothing dropped yet: all three can be rolled back
            3
        """
        self._check_ready()
        return self.max_rollback

    @property
    def limit_error(self):
        """None, or the ``RuntimeLimitError`` of the runtime limit (``xmask.RuntimeLimits``)
        this matcher crossed; its ``limit`` attribute names the field.  While set, every
        accept returns False and every fill writes an all-zero row; ``reset()`` or
        ``rollback(n >= 1)`` clears it.

        Example::

            >>> import xmask
            >>> info = xmask.TokenizerInfo.from_huggingface(xmask.default_tokenizer())
            >>> xmask.GrammarMatcher(xmask.GrammarCompiler(info).compile_builtin_json_grammar()
            ...                      ).limit_error is None
            True
        """
        self._check_ready()
        return _limit_error(self.guard.crossed, self._limits)

    @property
    def runtime_limits(self):
        """The ``xmask.RuntimeLimits`` of this matcher."""
        self._check_ready()
        return self._limits

    @property
    def temperature(self):
        """The sampling temperature for the next token: xmask grammars never set one, so this
        is ``default_temperature`` (None if not given), as in XGrammar for such grammars."""
        self._check_ready()
        return self._default_temperature

    @property
    def num_accepted_tokens(self):
        """How many tokens (accept_token / accept_string calls) can be rolled back: all accepted
        ones, or with ``max_rollback_tokens`` those whose history is still held."""
        self._check_ready()
        return self.n_tokens

    cdef int _push_token(self) except -1:
        cdef intp_t* p
        if self.n_tokens + 2 > self.cap_tokens:
            p = <intp_t*>realloc(self.token_depth, 2 * self.cap_tokens * sizeof(intp_t))
            if p == NULL:
                raise MemoryError()
            self.token_depth = p
            self.cap_tokens *= 2
        self.n_tokens += 1
        self.token_depth[self.n_tokens] = self.st.depth
        # Drop history beyond the rollback window once the window and a slack as long (at least
        # 1024 tokens: vLLM rolls back its scheduled drafts, which can outnumber
        # max_rollback_tokens = num_speculative_tokens) are full: O(1) per token amortized,
        # memory bounded by 2 x max_rollback_tokens + 1024 tokens of history.
        if self.max_rollback >= 0 and self.n_tokens > 2 * self.max_rollback + 1024:
            self._trim_history()
        return 0

    cdef int _trim_history(self) except -1:
        # Keep the history of the last max_rollback tokens (and the state before them).
        cdef intp_t k = self.n_tokens - self.max_rollback, i
        cdef intp_t sets = self.token_depth[k] - 1  # sets before the state after token k
        stack_drop_front(&self.st, sets)
        for i in range(k, self.n_tokens + 1):
            self.token_depth[i - k] = self.token_depth[i] - sets
        self.n_tokens -= k
        self.n_dropped += k
        return 0

    # ---- accepting ---------------------------------------------------------------------

    def accept_token(self, token_id, *, debug_print=False):
        """Advance by one token.  Returns False (state unchanged) if the grammar rejects it.

        Stop tokens are accepted where the grammar can end; they terminate the matcher.  Where
        it cannot end, a special stop token may still be the literal that spells its text
        (gpt-oss ``<|call|>`` closing a Harmony call); it does not terminate then.
        A token is accepted by its bytes, or whole where the grammar names it (``Token(...)`` /
        ``ExcludeToken(...)``; special tokens only that way), and the two are united when both
        apply.
        A token that would need a parse stack deeper than ``get_max_recursion_depth()`` is
        rejected, and so is every token once a runtime limit was crossed (``limit_error``).  ``token_id`` is any integer (int, NumPy integer, 0-d tensor); raises
        ``InvalidTokenError`` for a non-integer or an id outside ``[0, vocab_size)``.
        """
        cdef int ok
        self._enter()
        try:
            token_id = as_token_id(token_id)
            if not 0 <= token_id < self.vt.c.vocab_size:
                raise InvalidTokenError(
                    f"token id {token_id} is outside the vocabulary [0, {self.vt.c.vocab_size})"
                )
            ok = self._accept_id(token_id)
            if debug_print:
                print(f"GrammarMatcher.accept_token({token_id}) -> {bool(ok)}: "
                      f"{self._describe()}")
        finally:
            self._leave()
        return bool(ok)

    cdef int _accept_id(self, intp_t tid) except -1:
        # accept_token for a valid id.  Keeps the GIL (a token is a few bytes: far cheaper than
        # the GIL hand-off a release could cost) unless the matcher's byte steps are slow (see
        # _ACCEPT_NOGIL_WORK).
        if self.terminated or self.guard.crossed:
            return 0
        if is_stop_id(self.stop_ids, self.n_stop, tid):
            if not self.terminate_without_stop_token and self._can_end():
                self._push_token()
                self.terminated = True
                if self._cap_units is not None:
                    self._cap_units.append(None)
                return 1
            # elsewhere only whole, where a literal spells its text (a special token: no bytes)
            if self._can_end() or self.vt.c.id_pos[tid] >= 0:
                return 0
        # its bytes (special / padding tokens have none) and the token edges that name it
        self.st.max_depth = current_max_depth()
        self.guard.work = 0
        cdef intp_t pos = self.vt.c.id_pos[tid], n = 1
        if pos >= 0:
            n += self.vt.c.tok_offsets[pos + 1] - self.vt.c.tok_offsets[pos]
        cdef int ok
        if self.byte_work * n < _ACCEPT_NOGIL_WORK:
            ok = accept_token_id(&self.st, &self.at.c, &self.vt.c, tid, &self.guard)
        else:
            with nogil:
                ok = accept_token_id(&self.st, &self.at.c, &self.vt.c, tid, &self.guard)
        self.byte_work = self.guard.work // n
        if not ok:
            return 0
        self._push_token()
        if self._cap_units is not None:
            self._cap_units.append(tid)
        return 1

    def accept_string(self, input_str, *, debug_print=False):
        """Advance by the bytes of ``input_str`` (str is UTF-8 encoded), which need not align with
        tokens.  Returns False (state unchanged) if rejected.  Counts as one step for rollback."""
        cdef int ok
        data = as_input_bytes(input_str, "accept_string input")
        self._enter()
        try:
            ok = self._accept_data(data)
            if debug_print:
                print(f"GrammarMatcher.accept_string({input_str!r}) -> {bool(ok)}: "
                      f"{self._describe()}")
        finally:
            self._leave()
        return bool(ok)

    cdef int _accept_data(self, data) except -1:
        # accept_string on bytes `data`, the matcher entered; 1 if accepted.
        cdef const uint8_t[::1] view
        cdef int ok = 0
        cdef intp_t base
        if self.terminated or self.guard.crossed:
            return 0
        if len(data) == 0:
            if self.st.node_live != NULL:  # with budgets it still counts as a token (XGrammar)
                base = self.st.depth
                stack_budget_token(&self.st, 1)
                stack_repeat_set(&self.st)
                if not budget_end(&self.st, base, 1):
                    return 0
            self._push_token()
            if self._cap_units is not None:
                self._cap_units.append(b"")
            return 1
        view = data
        self.st.max_depth = current_max_depth()
        self.guard.work = 0
        cdef intp_t n = view.shape[0], i = 0, k
        base = self.st.depth
        ok = 1
        stack_budget_token(&self.st, 1)  # a string counts as one token for budgets (XGrammar)
        if n <= _ACCEPT_NOGIL_BYTES and self.byte_work * n < _ACCEPT_NOGIL_WORK:
            # with the GIL, a few bytes at a time while the work stays small; the rest (the
            # prediction was wrong: the steps got slow) without it
            while i < n and self.guard.work < _ACCEPT_NOGIL_WORK:
                k = min(16, n - i)
                ok = accept_bytes(&self.st, &self.at.c, &view[i], k, &self.guard)
                if not ok:
                    break
                i += k
        if ok and i < n:
            with nogil:
                ok = accept_bytes(&self.st, &self.at.c, &view[i], n - i, &self.guard)
        ok = budget_end(&self.st, base, ok)  # (rolls back when no path keeps its budget)
        if not ok:
            stack_truncate(&self.st, base)
        # (guard.work restarts every 4 KiB: it holds the last chunk's work)
        self.byte_work = self.guard.work // (((n - 1) & (_ACCEPT_NOGIL_BYTES - 1)) + 1)
        if ok:
            self._push_token()
            if self._cap_units is not None:
                self._cap_units.append(bytes(data))
        return ok

    def get_captures(self, *, deduplicate=True):
        """The matches of the grammar's captured rules (Lark ``rule[capture]`` /
        ``rule[capture="name"]``, EBNF ``rule[capture="name"] ::= ...``) so far, as
        ``(capture name, matched bytes)`` pairs ordered by where they completed, as XGrammar:
        every parse hypothesis records its completions; ``deduplicate`` keeps only the last
        (longest) completion of each occurrence (a rule starting at one position).  Rollback
        and reset undo them; filling masks records nothing.  Empty for a grammar without
        captures.  See ``xmask.grammar.captures`` for the exact rules.

        Example::

            >>> import xmask
            >>> info = xmask.TokenizerInfo([])
            >>> g = xmask.Grammar.from_lark('start: "a" num "b"\nnum[capture]: /[0-9]+/')
            >>> m = xmask.GrammarMatcher(xmask.GrammarCompiler(info).compile_grammar(g))
            >>> m.accept_string("a123b"), m.get_captures()
            (True, [('num', b'123')])
        """
        self._enter()
        try:
            if self._cap_log is None:
                return []
            return self._cap_log.captures(self._cap_units, bool(deduplicate))
        finally:
            self._leave()

    def rollback(self, num_tokens=1):
        """Undo the last ``num_tokens`` accepted tokens (a stop token counts as one).  O(1).

        ``num_tokens`` is any non-negative integer (int, NumPy integer, 0-d tensor); a
        non-integer, a negative count, more than were accepted or more than the history held
        under ``max_rollback_tokens`` raises ``InvalidTokenError`` (a ValueError) and changes
        nothing.  Rolling back at least one token clears a runtime-limit error
        (``limit_error``)."""
        n = as_count(num_tokens, "num_tokens")
        self._enter()
        try:
            self._check_rollback(n, "")
            self._rollback(n)
        finally:
            self._leave()

    cdef int _check_rollback(self, intp_t num_tokens, str what) except -1:
        # InvalidTokenError if num_tokens cannot be rolled back; `what` names the matcher.
        if num_tokens > self.n_tokens and self.n_dropped > 0:
            raise InvalidTokenError(
                f"cannot roll back {what}{num_tokens} tokens: with max_rollback_tokens="
                f"{self.max_rollback} the history of only the last {self.n_tokens} tokens is "
                f"held ({self.n_dropped} older ones were dropped)"
            )
        if num_tokens > self.n_tokens:
            raise InvalidTokenError(
                f"cannot roll back {what}{num_tokens} tokens: only {self.n_tokens} accepted"
            )
        return 0

    cdef int _rollback(self, intp_t num_tokens) except -1:
        # rollback of a checked count, the matcher entered.
        if num_tokens == 0:
            return 0
        self.n_tokens -= num_tokens
        stack_truncate(&self.st, self.token_depth[self.n_tokens])
        self.terminated = False
        if self._cap_units is not None:  # (not by n_tokens: the history may be trimmed)
            del self._cap_units[len(self._cap_units) - num_tokens:]
        self.guard.crossed = XM_LIMIT_NONE  # back to a state reached within the limits
        return 0

    # ---- masks -------------------------------------------------------------------------

    cdef int _check_can_fill(self) except -1:
        if self.terminated:
            raise XmaskError(
                "the matcher has terminated (a stop token was accepted): nothing can follow; "
                "call rollback() or reset() before asking for another mask"
            )
        return 0

    cdef int _make_job(self, FillJob* j, word_t* row) except -1:
        # A fill job on this matcher's state and buffers (the GIL is held).
        self.st.max_depth = current_max_depth()
        j.st = &self.st
        j.a = &self.at.c
        j.v = &self.vt.c
        j.c = &self.ct.c
        j.row = row
        self.guard.work = 0
        j.guard = &self.guard
        j.stop_ids = self.stop_ids
        j.n_stop = self.n_stop
        j.margin = self.vt.c.max_token_len * self.at.push_bound()
        j.byte_work = self.byte_work
        update_exact(j)
        return 0

    def fill_next_token_bitmask(self, bitmask, index=0, *, debug_print=False):
        """Write the allowed-next-token mask into row ``index`` of ``bitmask``, in place.

        ``bitmask`` is an int32 NumPy array or torch CPU tensor of shape
        (batch, ceil(vocab_size / 32)) (see ``allocate_token_bitmask``), or a 2-D view whose
        rows are contiguous (``bitmask3d[i]``, ``bitmask3d[:, j, :]`` for speculative
        decoding); bit ``i % 32`` of word ``i // 32`` is set iff token i is allowed.  Special
        ids are set only where the grammar names them (``Token(...)``), padding ids never;
        stop tokens only where the grammar can end.  Returns
        True (the row needs applying).  The matcher state is unchanged.  Raises
        ``BitmaskError`` for a bad bitmask or index (CUDA tensors included: fill on the CPU,
        then copy) and ``XmaskError`` after a stop token was accepted (as XGrammar does).

        Example::

            >>> import numpy as np, xmask
            >>> info = xmask.TokenizerInfo.from_huggingface(xmask.default_tokenizer())
            >>> m = xmask.GrammarMatcher(xmask.GrammarCompiler(info).compile_builtin_json_grammar())
            >>> spec = np.zeros((2, 3, (info.vocab_size + 31) // 32), dtype=np.int32)
            >>> m.fill_next_token_bitmask(spec[:, 1, :], 1)  # writes spec[1, 1]
            True
        """
        self._enter_fill()
        try:
            self._fill(bitmask, index, debug_print)
        finally:
            self._leave()
        if self.provisional:
            self._after_provisional_fill(bitmask, index, debug_print)
        return True

    def _after_provisional_fill(self, bitmask, index, debug_print):
        # The first part's mask is exact unless a walk wanted a byte from a stub: then the
        # matcher moves to the whole grammar and fills again.  Else the rest is built in the
        # background while the caller uses the mask (the next accept needs it).
        if self.at.stub_hit:
            self._enter()  # (materializes)
            try:
                self._fill(bitmask, index, debug_print)
            finally:
                self._leave()
        else:
            self._grammar._rest.start(self._grammar)

    cdef word_t* _checked_row(self, bitmask, index) except NULL:
        # The address of the row to fill, after every check fill_next_token_bitmask makes.
        # The caller keeps `bitmask` (hence the memory) alive for the duration of the fill.
        cdef RowsC fast
        cdef intp_t i = row_index_fast(index)
        cdef uintptr_t addr
        if i >= 0 and rows_fast(bitmask, self.vt.c.n_words, &fast) and i < fast.n_rows:
            addr = fast.address + <uintptr_t>(i * fast.stride_words * 4)
        else:  # the Python checks: other types and layouts, and every error message
            addr = row_address(bitmask_rows(bitmask, self.vt.c.n_words), index)
        self._check_can_fill()
        if addr == 0:  # an empty vocabulary's (n, 0) tensor has no storage: nothing to write
            return _EMPTY_ROW
        return <word_t*>addr

    cdef int _fill(self, bitmask, index, debug_print) except -1:
        cdef FillJob job
        cdef word_t* row = self._checked_row(bitmask, index)
        self._make_job(&job, row)
        if fill_cost(&job) < nogil_min_cost():
            fill_job(&job)
        else:
            with nogil:
                fill_job(&job)
        if debug_print:
            n_allowed = sum(bin(int(w) & 0xFFFFFFFF).count("1")
                            for w in row[:self.vt.c.n_words])
            print(f"GrammarMatcher.fill_next_token_bitmask(index={index}): "
                  f"{n_allowed} tokens allowed; {self._describe()}")
        return 0

    def _reference_fill_next_token_bitmask(self, bitmask, index=0):
        """Slow reference mask: try every token on the byte-level parser, no cache, no prefix
        sharing.  For tests only.  Checks its arguments as ``fill_next_token_bitmask`` does."""
        self._enter()
        try:
            self._reference_fill(bitmask, index)
        finally:
            self._leave()
        return True

    cdef int _reference_fill(self, bitmask, index) except -1:
        cdef word_t* row = self._checked_row(bitmask, index)
        cdef intp_t tid, base = self.st.depth
        cdef bint can_end = self._can_end()
        self.st.max_depth = current_max_depth()
        memset(row, 0, self.vt.c.n_words * sizeof(word_t))
        if self.guard.crossed:
            return 0  # the error state, as the fast fill: nothing allowed
        with nogil:  # no runtime limits here: the reference is the exact answer
            for tid in range(self.vt.c.vocab_size):
                if is_stop_id(self.stop_ids, self.n_stop, tid):
                    if can_end:
                        bitset_set(row, tid)
                        continue
                    if self.vt.c.id_pos[tid] >= 0:
                        continue  # a text stop token: never by its bytes
                if accept_token_id(&self.st, &self.at.c, &self.vt.c, tid, NULL):
                    bitset_set(row, tid)
                    stack_truncate(&self.st, base)
        return 0

    def traverse_draft_tree(self, retrieve_next_token, retrieve_next_sibling, draft_tokens,
                            token_bitmask, time_threshold=-1.0, temperatures=None):
        """Fill one mask row per node of a speculative draft tree, in one call (XGrammar's
        tree-structured speculative decoding).

        ``retrieve_next_token[i]`` is node i's first child, ``retrieve_next_sibling[i]`` its
        next sibling (-1: none), ``draft_tokens[i]`` its token; node 0 is the root (its token
        is not accepted again).  The three are 1-D integer arrays, tensors or lists (any integer
        dtype; floats and bools are refused).  Rows 0..n-1 of ``token_bitmask`` are zeroed;
        then, depth first, a node whose token its parent's row allows gets the mask after its
        path (the root: the current mask).  A node after a stop token, or whose path is
        terminated, keeps a zero row, as do its children.  The matcher's state is unchanged.
        Returns True, or False if ``time_threshold`` (> 0, seconds) ran out.  ``temperatures``
        (optional float32, one per node) is filled with ``temperature`` or -1.

        Example::

            >>> import numpy as np, xmask
            >>> info = xmask.TokenizerInfo.from_huggingface(xmask.default_tokenizer())
            >>> m = xmask.GrammarMatcher(xmask.GrammarCompiler(info).compile_builtin_json_grammar())
            >>> bm = np.zeros((2, (info.vocab_size + 31) // 32), dtype=np.int32)
            >>> tok = info.decoded_vocab.index(b"[")
            >>> m.traverse_draft_tree([1, -1], [-1, -1], [0, tok], bm)
            True
        """
        nxt = _index_array(retrieve_next_token, "retrieve_next_token")
        sib = _index_array(retrieve_next_sibling, "retrieve_next_sibling")
        tok = _index_array(draft_tokens, "draft_tokens")
        limit = _as_float(time_threshold, "time_threshold")
        self._enter()
        try:
            return self._traverse(nxt, sib, tok, token_bitmask, limit, temperatures)
        finally:
            self._leave()

    cdef object _traverse(self, nxt, sib, tok, token_bitmask, double limit, temperatures):
        cdef FillJob job
        cdef intp_t n, bad, base, i
        cdef int done = 1
        n = nxt.shape[0]
        if sib.shape[0] != n or tok.shape[0] != n:
            raise InvalidTokenError(
                f"draft tree arrays differ in length: retrieve_next_token {n}, "
                f"retrieve_next_sibling {sib.shape[0]}, draft_tokens {tok.shape[0]}"
            )
        rows = bitmask_rows(token_bitmask, self.vt.c.n_words)
        if rows.n_rows < n:
            raise BitmaskError(f"token_bitmask has {rows.n_rows} rows for {n} draft-tree nodes")
        cdef const int64_t[::1] nxt_v = nxt
        cdef const int64_t[::1] sib_v = sib
        cdef const int64_t[::1] tok_v = tok
        if n > 1 and not ((tok[1:] >= 0) & (tok[1:] < self.vt.c.vocab_size)).all():
            raise InvalidTokenError(
                f"draft_tokens must be in [0, {self.vt.c.vocab_size}), got {tok[1:].tolist()}"
            )
        import numpy as np

        work = np.empty(3 * n + 1, dtype=np.intp)
        cdef intp_t[::1] work_v = work
        if n > 0:
            bad = check_tree(&nxt_v[0], &sib_v[0], n, &work_v[0])
            if bad >= 0:
                raise InvalidTokenError(
                    f"draft tree node {bad} has a link outside [-1, {n}) or is reached twice "
                    "(retrieve_next_token / retrieve_next_sibling must form a tree from node 0)"
                )
        if temperatures is not None:
            temperatures[:n] = -1.0 if self._default_temperature is None else self._default_temperature
        if n == 0:
            return True
        cdef char* row0 = <char*><uintptr_t>rows.address
        cdef intp_t stride = rows.stride_words
        if self.terminated:
            for i in range(n):
                memset(row0 + i * stride * 4, 0, self.vt.c.n_words * sizeof(word_t))
            return True
        self._make_job(&job, <word_t*>row0)
        base = self.st.depth
        try:
            if fill_cost(&job) * n < nogil_min_cost():
                done = traverse_tree(&job, self.terminate_without_stop_token,
                                     &nxt_v[0], &sib_v[0], &tok_v[0], n, row0, stride, &work_v[0], limit)
            else:
                with nogil:
                    done = traverse_tree(&job, self.terminate_without_stop_token,
                                         &nxt_v[0], &sib_v[0], &tok_v[0], n, row0, stride,
                                         &work_v[0], limit)
        finally:
            stack_truncate(&self.st, base)
        return bool(done)

    def find_jump_forward_string(self):
        """The longest string that must come next whatever the model picks ('' if none).

        Stops where the grammar could end or branch, where a whole token (``Token(...)``) may
        come next, and at a whole UTF-8 character.  The matcher state is unchanged.
        """
        self._enter()
        try:
            return self._jump_forward()
        finally:
            self._leave()

    cdef object _jump_forward(self):
        cdef intp_t base = self.st.depth
        cdef intp_t d, i, cls, the_cls, n_cls, lo
        cdef int32_t node, s
        cdef const AutomatonC* a = &self.at.c
        out = bytearray()
        if self.terminated or self.guard.crossed:
            return ""
        self.guard.work = 0
        try:
            while len(out) < _MAX_JUMP_FORWARD_BYTES:
                d = self.st.depth - 1
                the_cls = -1
                n_cls = 0
                for i in range(self.st.set_start[d], self.st.set_start[d + 1]):
                    node = self.st.tops[i]
                    if node == 0:
                        n_cls = 2  # could end here: nothing is forced
                        break
                    s = self.st.node_state[node]
                    if a.flags[s] & XM_FLAG_TOKEN:
                        n_cls = 2  # a whole token may come next: it is no forced text
                        break
                    for cls in range(a.n_classes):
                        if a.trans[s * a.n_classes + cls] >= 0 and cls != the_cls:
                            n_cls += 1
                            the_cls = cls
                    if n_cls > 1:
                        break
                if n_cls != 1:
                    break
                lo = -1
                for i in range(256):
                    if a.byte_class[i] == the_cls:
                        if lo >= 0:
                            lo = -2
                            break
                        lo = i
                if lo < 0:
                    break  # the class holds several bytes
                if guarded_step(&self.st, a, <uint8_t>lo, &self.guard) == 0:
                    break
                out.append(lo)
        finally:
            stack_truncate(&self.st, base)
        return _utf8_prefix(bytes(out))

    # ---- introspection -------------------------------------------------------------------

    def _debug_top_states(self):
        """The automaton states of the current stack tops (-1 = the grammar may end)."""
        self._enter()
        try:
            return self._top_states()
        finally:
            self._leave()

    cdef list _top_states(self):
        d = self.st.depth - 1
        out = []
        for i in range(self.st.set_start[d], self.st.set_start[d + 1]):
            node = self.st.tops[i]
            out.append(-1 if node == 0 else self.st.node_state[node])
        return out

    cdef str _describe(self):
        # The debug description, the matcher entered.
        completed = self.terminated or self._can_end()
        return (f"<GrammarMatcher tokens={self.n_tokens} terminated={self.terminated} "
                f"tops={len(self._top_states())}>: top states {self._top_states()}, "
                f"{self.st.depth} top sets in the history, {self.st.n_nodes} stack nodes, "
                f"completed={completed}")

    def _debug_print_internal_state(self):
        """A description of the parse state, for debugging (the format may change)."""
        self._enter()
        try:
            return self._describe()
        finally:
            self._leave()

    def _debug_fill_cost(self):
        """The estimated work of the next fill (the unit of the GIL policy, see _fill.pyx)."""
        cdef FillJob job
        self._enter()
        try:
            self._make_job(&job, NULL)
            return fill_cost(&job)
        finally:
            self._leave()

    def _debug_call_work(self):
        """Work units (``RuntimeLimits.max_work_per_call``'s unit) of the last call that parsed
        (an accept, a fill; for accept_string: its last 4 KiB)."""
        self._check_ready()
        return self.guard.work

    def _memory_bytes(self):
        """Bytes this matcher holds on the heap besides the Python object itself: its parse
        stack (arena, hash table, history), token history and stop ids.  Nothing scales with
        the vocabulary (the compiled grammar and fill buffers are shared)."""
        self._enter()
        try:
            return int(stack_memory_bytes(&self.st) + self.cap_tokens * sizeof(intp_t)
                       + max(1, self.n_stop) * sizeof(int32_t))
        finally:
            self._leave()

    def _debug_arena_nodes(self):
        self._check_ready()
        return self.st.n_nodes

    def __reduce__(self):
        raise TypeError(
            "a GrammarMatcher holds one sequence's parser state and is not picklable: pickle "
            "its CompiledGrammar (or the GrammarCompiler) and create the matcher where it is used"
        )

    def __repr__(self):
        # Never raises (debuggers and error reports call repr): states it instead.
        if not self.ready:
            return "<GrammarMatcher not initialized>"
        if self.busy:
            return "<GrammarMatcher in use by another call>"
        terminated = self.terminated or (self.terminate_without_stop_token and self._can_end())
        return (f"<GrammarMatcher tokens={self.n_tokens} terminated={terminated} "
                f"tops={len(self._top_states())}>")


_LIMIT_NAMES = {XM_LIMIT_TOPS: "max_stack_tops", XM_LIMIT_WORK: "max_work_per_call",
                XM_LIMIT_DEPTH: "max_stack_depth", XM_LIMIT_MEMORY: "max_stack_bytes"}
_LIMIT_TEXT = {
    XM_LIMIT_TOPS: "the parser state grew past {} stack tops (an ambiguous grammar)",
    XM_LIMIT_WORK: "one call needed more than {} units of parsing work",
    XM_LIMIT_DEPTH: "a parse stack grew deeper than {} frames",
    XM_LIMIT_MEMORY: "its parse stack needed more than {} bytes",
}


def _limit_error(int crossed, limits):
    """The RuntimeLimitError for a crossed-limit code (None for none)."""
    if crossed == XM_LIMIT_NONE:
        return None
    name = _LIMIT_NAMES[crossed]
    return RuntimeLimitError(
        f"GrammarMatcher crossed RuntimeLimits.{name}: "
        f"{_LIMIT_TEXT[crossed].format(getattr(limits, name))}; it rejects every token until "
        "reset() or rollback()", limit=name)


def _as_float(value, what):
    """A real number as float (int, float, NumPy scalar); ValueError naming the argument
    otherwise (bools, strings, NaN)."""
    import math

    if isinstance(value, bool) or isinstance(value, (str, bytes)):
        raise ValueError(f"{what} must be a number, got {value!r}")
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a number, got {value!r}") from None
    if math.isnan(out):
        raise ValueError(f"{what} must be a number, got NaN")
    return out


def _utf8_prefix(data):
    """Decode the longest prefix of ``data`` that ends on a UTF-8 character boundary."""
    for cut in range(len(data), max(len(data) - 4, -1), -1):
        try:
            return data[:cut].decode("utf-8")
        except UnicodeDecodeError:
            continue
    return data.decode("utf-8", errors="ignore")
