"""Grammar IR -> one Thompson NFA for all rules (the builder behind :mod:`nfa`).

Every rule gets a contiguous range of NFA states; edges are epsilon, byte ranges or calls of
another rule (with the state the call returns to), appended to C int32 buffers and turned into
CSR arrays once (:meth:`NFA.arrays`), the layout the determinizer reads.  The IR walk itself
reads Python objects, so it holds the GIL; it is compiled to skip the interpreter's overhead.
Bounded repeats place copies of one minimal DFA per repeated item (see :class:`_Copies`),
pasted shifted from its edge arrays, so ``x{0,10000}`` costs 10,000 small C copies.
"""

import numpy as np

from libc.stdint cimport int32_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

from xmask.compiler._ivec cimport IVec, iv_reserve
from xmask.compiler._rule_scan cimport SizeMemo
from xmask.grammar._ir_nodes cimport BYTES, CHOICE, CLASS, REF, REPEAT, SEQ, WORDS, is_node_kind
from xmask.grammar._word_trie cimport WordTrie, trie_build, trie_free

from .. import _deadline as deadline
from .._switch_interval import switch_point
from ..errors import GrammarLimitError
from ..grammar._ir_nodes import kind_of
from .nfa import NfaArrays, class_edges, flatten_repeat
from ._rule_scan import distinct_refs

ctypedef Py_ssize_t isz


cdef inline int push2(IVec* v, int32_t a, int32_t b) except -1:
    if v.n + 2 > v.cap and iv_reserve(v, v.n + 2):
        raise MemoryError()
    v.d[v.n] = a
    v.d[v.n + 1] = b
    v.n += 2
    return 0


cdef inline int push3(IVec* v, int32_t a, int32_t b, int32_t c) except -1:
    if v.n + 3 > v.cap and iv_reserve(v, v.n + 3):
        raise MemoryError()
    v.d[v.n] = a
    v.d[v.n + 1] = b
    v.d[v.n + 2] = c
    v.n += 3
    return 0


cdef inline int push4(IVec* v, int32_t a, int32_t b, int32_t c, int32_t d) except -1:
    if v.n + 4 > v.cap and iv_reserve(v, v.n + 4):
        raise MemoryError()
    v.d[v.n] = a
    v.d[v.n + 1] = b
    v.d[v.n + 2] = c
    v.d[v.n + 3] = d
    v.n += 4
    return 0



# character class id -> (class, fresh states, edge rows as _Rows), process-wide: the value
# keeps the class alive, so its id cannot be reused while the entry lives; cleared when full
# (grammars from one front end share their classes' objects, a JSON string character's above
# all; a MaskBench schema adds ~10 classes of its own, so the bound keeps the objects it holds
# for the collector few).  Concurrent builds may both add an entry; either is the same.
# A fresh grammar's own classes miss the id memo; ``_CLASS_VALUES`` (class -> (fresh states,
# rows), by value, bounded likewise) spares them ``class_edges``' Python loops.
cdef dict _CLASS_IDS = {}
cdef dict _CLASS_VALUES = {}
cdef isz _CLASS_IDS_MAX = 1024


cdef class _Rows:
    """A C-contiguous int32 row array (a class's edges, a template's edges) as a C pointer,
    taken once: a typed memoryview per use costs more than pasting a small template."""

    cdef object arr  # keeps the data alive
    cdef const int32_t* p
    cdef isz m

    def __init__(self, arr):
        cdef const int32_t[:, ::1] mv = arr
        self.arr = arr
        self.m = mv.shape[0]
        self.p = &mv[0, 0] if self.m else NULL


cdef class _Template:
    """A repeat item's template (see :class:`_Copies`) with its edge rows as C pointers."""

    cdef isz size
    cdef _Rows eps
    cdef _Rows byte
    cdef _Rows calls

    def __init__(self, template):
        size, (eps, byte, calls) = template
        self.size = size
        self.eps, self.byte, self.calls = _Rows(eps), _Rows(byte), _Rows(calls)


cdef class _Expansion:
    """One expansion of an inlined rule, as ``NFA.inline`` replays it: ``size`` fresh states,
    the epsilon, byte and call edges it added (an endpoint coded ``-1`` is the expansion's
    start, ``-2`` the end it was given, ``k >= 0`` its k-th fresh state), the state it
    returned (coded likewise) and ``need``, how far past its first fresh state its repeat
    checks reached (the walk's limit errors fire iff ``built + need`` or ``built + size``
    passes the cap)."""

    cdef int32_t* eps
    cdef int32_t* byte
    cdef int32_t* calls
    cdef isz n_eps, n_byte, n_calls, size, need
    cdef int32_t ret

    def __dealloc__(self):
        free(self.eps)
        free(self.byte)
        free(self.calls)

    cdef bint record(self, NFA nfa, isz n0, isz e0, isz b0, isz c0, isz start, isz end,
                     isz ret, isz need) except -1:
        """Copy the edges ``nfa`` added since (``e0``, ``b0``, ``c0``); False when some
        endpoint is an older state other than ``start`` and ``end`` (then it is not kept)."""
        self.size = nfa.n - n0
        self.need = need
        self.n_eps, self.n_byte, self.n_calls = nfa.eps.n - e0, nfa.byte.n - b0, nfa.calls.n - c0
        self.eps = <int32_t*>malloc((self.n_eps + 1) * sizeof(int32_t))
        self.byte = <int32_t*>malloc((self.n_byte + 1) * sizeof(int32_t))
        self.calls = <int32_t*>malloc((self.n_calls + 1) * sizeof(int32_t))
        if self.eps == NULL or self.byte == NULL or self.calls == NULL:
            raise MemoryError()
        self.ret = _code(ret, n0, start, end)
        return (self.ret != -3
                and _encode(nfa.eps.d + e0, self.eps, self.n_eps, 2, 0, 1, n0, start, end)
                and _encode(nfa.byte.d + b0, self.byte, self.n_byte, 4, 0, 3, n0, start, end)
                and _encode(nfa.calls.d + c0, self.calls, self.n_calls, 3, 0, 2, n0, start,
                            end))

    cdef isz paste(self, NFA nfa, isz start, isz end) except -1:
        """Add this expansion at ``start`` (ending at ``end`` when >= 0); returns its end."""
        cdef isz base = nfa.reserve(self.size) if self.size else nfa.n
        if end < 0:
            end = -1  # never referenced: recorded without an end
        _decode(self.eps, &nfa.eps, self.n_eps, 2, 0, 1, base, start, end)
        _decode(self.byte, &nfa.byte, self.n_byte, 4, 0, 3, base, start, end)
        _decode(self.calls, &nfa.calls, self.n_calls, 3, 0, 2, base, start, end)
        return start if self.ret == -1 else end if self.ret == -2 else base + self.ret


cdef inline int32_t _code(isz x, isz n0, isz start, isz end) noexcept nogil:
    if x == start:
        return -1
    if end >= 0 and x == end:
        return -2
    if x >= n0:
        return <int32_t>(x - n0)
    return -3


cdef bint _encode(const int32_t* src, int32_t* dst, isz m, int width, int a, int b, isz n0,
                  isz start, isz end) noexcept nogil:
    """Rows of ``width`` ints with state columns ``a`` and ``b``, coded as in _Expansion."""
    cdef isz i, r
    for i in range(m):
        dst[i] = src[i]
    for r in range(0, m // width):
        i = r * width
        dst[i + a] = _code(src[i + a], n0, start, end)
        dst[i + b] = _code(src[i + b], n0, start, end)
        if dst[i + a] < -2 or dst[i + b] < -2:
            return 0
    return 1


cdef int _decode(const int32_t* src, IVec* v, isz m, int width, int a, int b, isz base,
                 isz start, isz end) except -1:
    cdef isz i, r
    cdef int32_t x
    cdef int32_t* d
    if v.n + m > v.cap and iv_reserve(v, v.n + m):
        raise MemoryError()
    d = v.d + v.n
    for i in range(m):
        d[i] = src[i]
    for r in range(0, m // width):
        i = r * width
        x = src[i + a]
        d[i + a] = <int32_t>(start if x == -1 else end if x == -2 else base + x)
        x = src[i + b]
        d[i + b] = <int32_t>(start if x == -1 else end if x == -2 else base + x)
    v.n += m
    return 0


cdef class NFA:
    """Thompson NFA of a whole grammar; limits are per rule (the rule being added).

    ``dfa_of(nfa, start, end)`` returns a fragment's minimal DFA (see ``dfa.dfa_of_fragment``);
    ``inline`` is ``(bodies, sizes)``: inlined rule -> body expanded where it is referenced,
    and its expanded size.
    """

    cdef IVec eps      # src, dst, ...
    cdef IVec byte     # src, lo, hi, dst, ...
    cdef IVec calls    # src, rule, dst, ...
    cdef readonly isz n
    cdef isz base
    cdef isz max_nfa
    cdef isz max_repeat
    cdef readonly object limits
    cdef readonly str rule
    cdef readonly object dfa_of
    cdef dict templates
    cdef SizeMemo size_memo  # (the expressions outlive this NFA)
    cdef dict bodies
    cdef dict sizes
    cdef dict template_ids
    cdef isz ticks
    cdef isz next_switch  # ticks at which build() next calls switch_point
    cdef long long max_bytes
    cdef dict inlined   # inlined rule -> _Expansion of its first expansion without an end
    cdef dict inlined_end   # ... and with one
    cdef isz need       # max over the repeat checks so far of (state index + repeat size)

    def __init__(self, limits, dfa_of, templates=None, inline=({}, {})):
        self.n = 0
        self.base = 0
        self.limits = limits
        self.max_nfa = limits.max_nfa_states
        self.max_repeat = limits.max_repeat
        # repeat item id -> (item, template): the value keeps the item alive, so its id is
        # never reused while the entry lives
        self.template_ids = {}
        self.max_bytes = getattr(limits, "max_memory_bytes", 0)
        self.rule = ""
        self.dfa_of = dfa_of
        # repeat item -> its minimal DFA as edge arrays, shared by all rules of one grammar
        self.templates = {} if templates is None else templates
        # expression -> estimated expansion size (repeat checks)
        self.size_memo = SizeMemo()
        self.bodies, self.sizes = inline
        self.inlined = {}
        self.inlined_end = {}
        self.need = 0

    def __dealloc__(self):
        free(self.eps.d)
        free(self.byte.d)
        free(self.calls.d)

    def add_rule(self, str name, expr, dict rule_index):
        """Add rule ``name``'s states; returns its (start, end) NFA states."""
        self.rule = name
        self.base = self.n
        cdef isz s = self.new()
        return s, self.build(expr, s, rule_index, -1)

    cdef isz new(self) except -1:
        cdef isz n = self.n, k = n - self.base
        if not k & 4095:
            deadline.check()
            self._check_memory()
        if k >= self.max_nfa:
            self._too_many()
        self.n = n + 1
        return n

    cdef int _check_memory(self) except -1:
        # the edge arrays of every rule so far (all of the NFA's memory but small per-state
        # Python memos), checked every 4096 states: a state adds a few edges, so the arrays
        # pass the cap by well under 1 MB before this raises
        cdef long long nbytes = 4 * (self.eps.cap + self.byte.cap + self.calls.cap)
        if self.max_bytes > 0 and nbytes > self.max_bytes:
            raise GrammarLimitError(
                f"grammar's NFA needs more than {self.max_bytes / 1048576:.3g} MB "
                "(CompileLimits.max_compile_memory_bytes)", rule=self.rule)
        return 0

    cdef int _too_many(self) except -1:
        raise GrammarLimitError(
            f"grammar expands to more than {self.max_nfa} NFA states "
            "(CompileLimits.max_nfa_states) "
            "(large repeat counts?)",
            rule=self.rule,
        )

    cdef isz reserve(self, isz count) except -1:
        """``count`` fresh consecutive states (as ``count`` calls of :meth:`new`)."""
        cdef isz n = self.n, k = n - self.base
        if k + count > self.max_nfa:
            self._too_many()
        if (k + count - 1) >> 12 != k >> 12 or not k & 4095:
            deadline.check()
            self._check_memory()
        self.n = n + count
        return n

    cdef isz build(self, expr, isz start, dict rule_index, isz end) except -1:
        """Add ``expr`` starting at ``start``; return its end state (``end`` when >= 0).

        Passing the enclosing construct's ``end`` down to the last piece of a sequence or a
        choice's branches lets nested optionals (``a (b (c)?)?`` as pattern DFAs emit them) all
        finish at one state: otherwise every nesting level adds its own end state and an
        epsilon edge to the next, and each closure walks the whole chain (quadratic).
        """
        cdef object t = type(expr)
        self.ticks += 1
        if self.ticks >= self.next_switch:
            # compiled code never reaches the interpreter's switch check: let a thread that
            # waits for the GIL run (see _switch_interval), about every 0.1 ms
            self.next_switch = self.ticks + 256
            switch_point()
        if t is WORDS:
            return self.words(expr, start, end)
        if not is_node_kind(t):
            t = kind_of(expr)
        cdef isz cur, nxt, i, last, k, s, got
        cdef bytes data
        cdef const unsigned char* p
        cdef tuple items
        if t is BYTES:
            data = expr.data
            p = data
            last = len(data) - 1
            cur = start
            for i in range(last + 1):
                nxt = end if end >= 0 and i == last else self.new()
                push4(&self.byte, <int32_t>cur, p[i], p[i], <int32_t>nxt)
                cur = nxt
            return self.finish(cur, end)
        if t is SEQ:
            items = expr.items
            cur = start
            last = len(items) - 1
            for i in range(last + 1):
                cur = self.build(items[i], cur, rule_index, end if i == last else -1)
            return self.finish(cur, end)
        if t is REF:
            name = expr.name
            body = self.bodies.get(name)
            if body is not None:
                return self.inline(name, body, start, rule_index, end)
            if end < 0:
                end = self.new()
            push3(&self.calls, <int32_t>start, <int32_t>rule_index[name], <int32_t>end)
            return end
        if t is CHOICE:
            if end < 0:
                end = self.new()
            for item in expr.items:
                s = self.new()
                push2(&self.eps, <int32_t>start, <int32_t>s)
                self.build(item, s, rule_index, end)
            return end
        if t is CLASS:
            if end < 0:
                end = self.new()
            # the class's edges, memoized by object (the value keeps the id from being reused)
            got_c = _CLASS_IDS.get(id(expr))
            if got_c is None:
                got_v = _CLASS_VALUES.get(expr)
                if got_v is None:
                    k, rows_a = class_edges(expr)
                    got_v = (k, _Rows(rows_a))
                    if len(_CLASS_VALUES) >= _CLASS_IDS_MAX:
                        _CLASS_VALUES.clear()
                    _CLASS_VALUES[expr] = got_v
                got_c = (expr, got_v[0], got_v[1])
                if len(_CLASS_IDS) >= _CLASS_IDS_MAX:
                    _CLASS_IDS.clear()
                _CLASS_IDS[id(expr)] = got_c
            k = got_c[1]
            self.paste_class(got_c[2], start, end, self.reserve(k) if k else 0)
            return end
        if t is REPEAT:
            return self.finish(self.repeat(expr, start, rule_index), end)
        raise TypeError(f"unknown grammar node {expr!r}")

    cdef isz inline(self, str name, body, isz start, dict rule_index, isz end) except -1:
        """Expand inlined rule ``name`` at ``start`` (like ``build(body, ...)``).

        JSON schema grammars expand the same small rules (a string, an integer, a key's
        escape) hundreds of times; walking the Python IR again each time was most of the
        NFA's cost.  The first expansion is recorded as an :class:`_Expansion` (its edges
        relative to ``start``, ``end`` and its first fresh state) and later ones paste it:
        the same states, numbered the same, and the same edges in the same order.  An
        expansion that would fail a limit check is walked instead, so the error is the
        one the walk gives."""
        cdef isz n0 = self.n, e0 = self.eps.n, b0 = self.byte.n, c0 = self.calls.n
        cdef isz saved = self.need, ret, built = self.n - self.base
        cdef _Expansion x
        cdef dict memo = self.inlined_end if end >= 0 else self.inlined
        got = memo.get(name)
        if got is not None:
            x = got
            if built + max(x.size, x.need) <= self.max_nfa:
                self.need = max(self.need, n0 + x.need)
                self.ticks += x.size >> 3  # a pasted state costs ~1/8 of a walked node
                return x.paste(self, start, end)
        self.need = 0
        ret = self.build(body, start, rule_index, end)
        if got is None:
            x = _Expansion()
            if x.record(self, n0, e0, b0, c0, start, end, ret,
                        self.need - n0 if self.need else 0):
                memo[name] = x
        self.need = max(saved, self.need)
        return ret

    cdef isz words(self, expr, isz start, isz end) except -1:
        """Add a ``WordComplement`` (ASCII: the strings over ``expr.alphabet`` other than
        ``expr.words``) at ``start``: the words' trie from ``start``, each node final unless it
        ends a word, and every byte of the alphabet that continues no word leading to one loop
        over the alphabet (final).  The trie is deterministic already; its expression (two
        tries of nested choices, ~12 nodes a trie node) is never built."""
        cdef tuple alphabet = expr.alphabet
        cdef isz node, q, loop, c, cut, k
        cdef long lo, hi
        cdef WordTrie trie
        cdef int32_t* state = NULL  # trie node -> NFA state
        try:
            trie_build(expr.words, &trie)
            state = <int32_t*>malloc(trie.n * sizeof(int32_t))
            if state == NULL:
                raise MemoryError()
            if end < 0:
                end = self.new()
            state[0] = <int32_t>start
            for node in range(1, trie.n):  # (preorder: the order the states were always made)
                state[node] = <int32_t>self.new()
            loop = self.new()
            for node in range(trie.n):
                q = state[node]
                if not trie.word_end[node]:
                    push2(&self.eps, <int32_t>q, <int32_t>end)
                k = trie.first_kid[node]
                for lo, hi in alphabet:
                    c = lo
                    while c <= hi:
                        if k >= 0 and trie.cp[k] == c:
                            push4(&self.byte, <int32_t>q, <int32_t>c, <int32_t>c, state[k])
                            k = trie.next_sib[k]
                            c += 1
                        else:  # a gap, up to the next child or the range's end
                            cut = trie.cp[k] - 1 if k >= 0 and trie.cp[k] <= hi else hi
                            push4(&self.byte, <int32_t>q, <int32_t>c, <int32_t>cut, <int32_t>loop)
                            c = cut + 1
            for lo, hi in alphabet:
                push4(&self.byte, <int32_t>loop, <int32_t>lo, <int32_t>hi, <int32_t>loop)
            push2(&self.eps, <int32_t>loop, <int32_t>end)
            return end
        finally:
            trie_free(&trie)
            free(state)

    cdef int paste_class(self, _Rows r, isz start, isz end, isz base) except -1:
        """Append a class's edges (``nfa.class_edges`` rows): -2 is ``start``, -1 ``end``,
        ``k`` the fresh state ``base + k``."""
        cdef isz m = r.m, i
        cdef const int32_t* rows = r.p
        cdef int32_t s, t
        cdef int32_t* d
        if self.byte.n + 4 * m > self.byte.cap and iv_reserve(&self.byte, self.byte.n + 4 * m):
            raise MemoryError()
        d = self.byte.d + self.byte.n
        for i in range(m):
            s = rows[4 * i]
            t = rows[4 * i + 3]
            d[4 * i] = <int32_t>start if s == -2 else <int32_t>base + s
            d[4 * i + 1] = rows[4 * i + 1]
            d[4 * i + 2] = rows[4 * i + 2]
            d[4 * i + 3] = <int32_t>end if t == -1 else <int32_t>base + t
        self.byte.n += 4 * m
        return 0

    cdef isz finish(self, isz cur, isz end) except -1:
        """``cur`` if no end was asked for, else ``end`` (joined by an epsilon edge if apart)."""
        if end < 0:
            return cur
        if cur != end:
            push2(&self.eps, <int32_t>cur, <int32_t>end)
        return end

    cdef isz repeat(self, expr, isz start, dict rule_index) except -1:
        cdef isz lo, hi, bound, cap, size, built, cur, loop, body_end, end, i, count
        if isinstance(expr.item, REPEAT):
            expr = flatten_repeat(expr, self.max_repeat)
        lo = expr.min
        top = expr.max
        hi = top if top is not None else -1
        bound = hi if hi >= 0 else lo
        if bound > self.max_repeat:
            raise GrammarLimitError(
                f"repeat count {bound} exceeds the limit {self.max_repeat} "
                "(CompileLimits.max_repeat)", rule=self.rule
            )
        # Nested bounded repeats multiply ((a{0,100}){0,100} is 10,000 copies of "a"): check
        # the product before building any of it, not when the NFA has already grown.
        cap = self.max_nfa
        size = self.size_memo.csize(expr, self.sizes, cap + 1)
        built = self.n - self.base
        self.need = max(self.need, self.n + size)  # for inline(): where this check passes
        if built + size > cap:
            raise GrammarLimitError(
                f"a repeat expands to {'more than' if size > cap else 'about'} {min(size, cap)} "
                f"NFA states, which with {built} already built passes the limit {cap} "
                "(CompileLimits.max_nfa_states) (nested repeat counts multiply)", rule=self.rule)
        count = hi if hi >= 0 else lo
        # copies are placed only for counted repeats (a plain ``x*`` builds its item once)
        cdef _Copies copies = None
        if count > 0:
            copies = _Copies(self, expr.item, rule_index, count)
        cur = start
        for i in range(lo):
            cur = copies.place(cur)
        if hi < 0:
            # star: loop state with an epsilon back edge
            loop = self.new()
            push2(&self.eps, <int32_t>cur, <int32_t>loop)
            body_end = self.build(expr.item, loop, rule_index, -1)
            push2(&self.eps, <int32_t>body_end, <int32_t>loop)
            return loop
        end = self.new()
        for i in range(hi - lo):
            push2(&self.eps, <int32_t>cur, <int32_t>end)
            cur = copies.place(cur)
        push2(&self.eps, <int32_t>cur, <int32_t>end)
        return end

    def arrays(self):
        """The NFA in CSR form (:class:`nfa.NfaArrays`; edges in insertion order per state)."""
        cdef isz n = self.n
        eps_off, (eps_dst,) = _csr(&self.eps, 2, n)
        b_off, (b_lo, b_hi, b_dst) = _csr(&self.byte, 4, n)
        c_off, (c_rule, c_dst) = _csr(&self.calls, 3, n)
        return NfaArrays(n, eps_off, eps_dst, b_off, b_lo, b_hi, b_dst, c_off, c_rule, c_dst)

    cdef int paste(self, _Rows r, IVec* v, isz base, int width) except -1:
        """Append template rows ``r`` (source, columns..., target) with source and target
        shifted by ``base``."""
        cdef isz m = r.m, i, j
        cdef const int32_t* edges = r.p
        cdef int32_t* d
        if v.n + m * width > v.cap and iv_reserve(v, v.n + m * width):
            raise MemoryError()
        d = v.d + v.n
        for i in range(m):
            d[i * width] = edges[i * width] + <int32_t>base
            for j in range(1, width - 1):
                d[i * width + j] = edges[i * width + j]
            d[i * width + width - 1] = edges[i * width + width - 1] + <int32_t>base
        v.n += m * width
        return 0


cdef tuple _csr(IVec* v, int width, isz n):
    """Counting sort of the ``width``-int rows of ``v`` by their first int (the source state,
    < ``n``), stable: ``(offsets, (column 1, column 2, ...))``."""
    cdef isz m = v.n // width, i, j, s, pos
    off_a = np.zeros(n + 1, dtype=np.int32)
    cols_a = np.empty((width - 1, m), dtype=np.int32)
    cdef int32_t[::1] off = off_a
    cdef int32_t[:, ::1] cols = cols_a
    cdef int32_t* fill = NULL
    with nogil:
        for i in range(m):
            off[v.d[i * width] + 1] += 1
        for s in range(n):
            off[s + 1] += off[s]
    fill = <int32_t*>malloc((n + 1) * sizeof(int32_t))
    if fill == NULL:
        raise MemoryError()
    with nogil:
        memcpy(fill, &off[0], (n + 1) * sizeof(int32_t))
        for i in range(m):
            s = v.d[i * width]
            pos = fill[s]
            fill[s] += 1
            for j in range(1, width):
                cols[j - 1, pos] = v.d[i * width + j]
    free(fill)
    return off_a, tuple(cols_a)


# (item, dfa_of, limits...) -> template; bounded, oldest evicted first (dicts keep order).
# Concurrent compiles may both build one entry; either result is the same template.
_SHARED_TEMPLATES = {}
_SHARED_TEMPLATES_MAX = 256


cdef class _Copies:
    """Bounded repeats place ``count`` copies of one item.  The item is built once, as its own
    minimal DFA (so equivalent states are not multiplied by the copy count: a JSON string
    character's UTF-8 and escape paths would otherwise determinize into ~2x the states per
    copy), and each copy is that DFA's states shifted to fresh numbers, entered by an epsilon
    edge and left by epsilon edges from its final states."""

    cdef NFA nfa
    cdef object item
    cdef dict rule_index
    cdef isz count
    cdef _Template template

    def __init__(self, NFA nfa, item, dict rule_index, isz count):
        self.nfa, self.item, self.rule_index, self.count = nfa, item, rule_index, count
        self.template = None

    cdef object make_template(self):
        frag = NFA(self.nfa.limits, self.nfa.dfa_of, self.nfa.templates,
                   (self.nfa.bodies, self.nfa.sizes))
        s, e = frag.add_rule(self.nfa.rule, self.item, self.rule_index)
        trans, finals, call_src, call_rule, call_dst, byte_class = self.nfa.dfa_of(frag, s, e)
        m, n_classes = trans.shape
        # classes are contiguous byte ranges: first and last byte of each
        first = np.searchsorted(byte_class, np.arange(n_classes), side="left")
        last = np.searchsorted(byte_class, np.arange(n_classes), side="right") - 1
        src, cls = np.nonzero(trans >= 0)
        byte = np.stack([src, first[cls], last[cls], trans[src, cls]], axis=1).astype(np.int32)
        fin = np.nonzero(finals)[0]
        eps = np.stack([fin, np.full(len(fin), m)], axis=1).astype(np.int32)
        calls = np.stack([call_src, call_rule, call_dst], axis=1).astype(np.int32)
        return m + 1, (np.ascontiguousarray(eps.reshape(-1, 2)),
                       np.ascontiguousarray(byte.reshape(-1, 4)),
                       np.ascontiguousarray(calls.reshape(-1, 3)))

    cdef object shared_template(self):
        """The template, from the process-wide memo when the item calls no rule (then it
        depends only on the item, the limits and the DFA builder): most grammars repeat the
        same few items (a \\u escape's hex digit, a JSON string character)."""
        if distinct_refs(self.item):
            return self.make_template()
        lim = self.nfa.limits
        key = (self.item, self.nfa.dfa_of, lim.max_nfa_states, lim.max_states, lim.max_repeat)
        got = _SHARED_TEMPLATES.get(key)
        if got is None:
            got = self.make_template()
            for a in got[1]:
                a.setflags(write=False)
            if len(_SHARED_TEMPLATES) >= _SHARED_TEMPLATES_MAX:
                try:  # the oldest (another thread may be evicting too)
                    _SHARED_TEMPLATES.pop(next(iter(_SHARED_TEMPLATES)), None)
                except (StopIteration, RuntimeError):
                    pass
            _SHARED_TEMPLATES[key] = got
        return got

    cdef isz place(self, isz cur) except -1:
        cdef NFA nfa = self.nfa
        cdef isz size, base
        if self.count < 2:
            return nfa.build(self.item, cur, self.rule_index, -1)
        cdef _Template tp = self.template
        if tp is None:
            got = nfa.template_ids.get(id(self.item))
            if got is not None:
                tp = got[1]
            else:
                template = nfa.templates.get(self.item)
                if template is None:
                    template = nfa.templates[self.item] = self.shared_template()
                tp = _Template(template)
                nfa.template_ids[id(self.item)] = (self.item, tp)
            self.template = tp
        size = tp.size
        base = nfa.reserve(size)
        nfa.paste(tp.eps, &nfa.eps, base, 2)
        nfa.paste(tp.byte, &nfa.byte, base, 4)
        nfa.paste(tp.calls, &nfa.calls, base, 3)
        push2(&nfa.eps, <int32_t>cur, <int32_t>base)
        return base + size - 1
