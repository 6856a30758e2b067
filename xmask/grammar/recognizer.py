"""An independent, pure-Python reference recognizer over the grammar IR (a test oracle).

This is a byte-level Earley recognizer.  It deliberately shares no code with
``xmask.compiler`` / ``xmask.runtime``: it works directly from the IR, decodes UTF-8 itself,
and is written for obviousness rather than speed.

Grammar lowering (done once in :class:`Recognizer`):

* every rule and every nested ``Choice`` / ``Seq`` / ``Repeat`` becomes a nonterminal;
  a production is a tuple of symbols; a ``Bytes`` literal is spliced in as one single-byte
  terminal per byte;
* a ``Repeat(x, m, n)`` nonterminal has one "counting" production whose dot is the number of
  ``x`` matched so far (``0..n``; for ``n = None`` the count saturates at ``m``); it can
  complete when ``count >= m`` and can take another ``x`` when ``count < n``;
* a UTF-8 ``CharClass`` is a terminal that consumes one whole UTF-8 character byte by byte:
  after a lead byte the scanning item is kept aside as *pending* (continuation bytes left,
  partial code point) until the character is complete; overlong forms, surrogates, values
  above U+10FFFF and malformed sequences are rejected, and a pending character is dropped as
  soon as no code point of the class can still be reached (so ``accepts_prefix`` is exact);
* a ``byte_level`` ``CharClass`` is a terminal matching one byte;
* a ``TokenSet`` is a terminal matching one whole *token id* (never a byte): :meth:`step_token`
  scans it, at a token boundary only (a half-read UTF-8 character is dropped there).  Which
  ids a vocabulary lets a token element match (stop and empty tokens never) is the caller's
  business: here a set is just ids, or every id but those.

Nullable nonterminals are handled the Aycock–Horspool way (an item waiting for a nullable
nonterminal is also advanced over it at prediction time), which makes ε-rules, nullable
rules and left/right recursion all work.  Items whose remaining symbols cannot derive any
string (unproductive rules, empty classes) are never added, so a state is non-empty exactly
when its input is a prefix of some sentence.

States are immutable: :meth:`Recognizer.step` returns a new state and never mutates its
argument, so one state can be stepped with many different bytes.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Dict, List, Optional, Tuple

from .ir import Bytes, CharClass, Choice, Expr, Grammar, Repeat, RuleRef, Seq, TokenSet

__all__ = ["Recognizer", "State"]

# UTF-8 lead byte -> (continuation bytes, payload mask, smallest and largest code point)
_LEADS: Dict[int, Tuple[int, int, int, int]] = {}
for _b in range(0xC2, 0xE0):
    _LEADS[_b] = (1, 0x1F, 0x80, 0x7FF)
for _b in range(0xE0, 0xF0):
    _LEADS[_b] = (2, 0x0F, 0x800, 0xFFFF)
for _b in range(0xF0, 0xF5):
    _LEADS[_b] = (3, 0x07, 0x10000, 0x10FFFF)
del _b


class _Utf8Class:
    """A UTF-8 character-class terminal: code point ranges with interval queries."""

    __slots__ = ("starts", "ends", "ascii")

    def __init__(self, ranges):
        self.starts = [lo for lo, _ in ranges]
        self.ends = [hi for _, hi in ranges]
        self.ascii = bytes(1 if self.contains(b) else 0 for b in range(128))

    def contains(self, cp: int) -> bool:
        i = bisect_right(self.starts, cp) - 1
        return i >= 0 and self.ends[i] >= cp

    def overlaps(self, lo: int, hi: int) -> bool:
        if lo > hi:
            return False
        i = bisect_right(self.starts, hi) - 1
        return i >= 0 and self.ends[i] >= lo

    def empty(self) -> bool:
        return not self.starts


class _TokenTerm:
    """A whole-token terminal: ids, or (negated) every id but those."""

    __slots__ = ("ids", "negated")

    def __init__(self, ids, negated):
        self.ids = frozenset(ids)
        self.negated = negated

    def contains(self, tid: int) -> bool:
        return (tid in self.ids) != self.negated

    def empty(self) -> bool:
        return not self.ids and not self.negated


class _ESet:
    """One Earley set: its items, items waiting per nonterminal, and scan items per terminal."""

    __slots__ = ("items", "waiting", "scans", "order", "level")

    def __init__(self):
        self.items = set()
        self.waiting: Dict[int, list] = {}
        self.scans: Dict[int, list] = {}
        self.order: list = []  # the items in the order the closure processed them
        self.level: list = []  # per item of ``order``: completions on its way from a seed


class State:
    """An immutable recognizer state (an Earley set plus characters being decoded)."""

    __slots__ = ("_set", "_pending", "_key")

    def __init__(self, eset: _ESet, pending: tuple):
        self._set = eset
        # pending: tuple of (term, remaining, value, min_cp, max_cp, items-tuple)
        self._pending = pending
        self._key = None

    def _hash_key(self):
        if self._key is None:
            self._key = (frozenset(self._set.items), self._pending)
        return self._key

    def __eq__(self, other):
        return isinstance(other, State) and self._hash_key() == other._hash_key()

    def __hash__(self):
        return hash(self._hash_key())

    def __repr__(self):
        return f"<State items={len(self._set.items)} pending={len(self._pending)}>"


class Recognizer:
    """Byte-level Earley recognizer for a :class:`Grammar`.

    Example::

        >>> from xmask.grammar.ebnf import parse_ebnf
        >>> r = Recognizer(parse_ebnf('root ::= expr\\nexpr ::= expr "+" [0-9] | [0-9]'))
        >>> r.accepts(b"1+2+3"), r.accepts(b"1+"), r.accepts_prefix(b"1+")
        (True, False, True)
    """

    def __init__(self, grammar: Grammar):
        self.grammar = grammar
        # --- lowering ------------------------------------------------------------------
        self._nt_names: List[str] = []
        self._prods: List[Tuple[int, tuple]] = []  # (lhs, symbols) for ordinary productions
        self._reps: List[Tuple[int, int, int, Optional[int]]] = []  # (lhs, x-symbol, min, max)
        self._terms: List[object] = []  # frozenset of bytes, or _Utf8Class
        self._term_ids: Dict[object, int] = {}
        rules = grammar.rules
        self._rule_nt = {}
        for name in rules:
            self._rule_nt[name] = self._new_nt(name)
        for name, expr in rules.items():
            nt = self._rule_nt[name]
            alts = expr.items if isinstance(expr, Choice) else (expr,)
            for alt in alts:
                self._prods.append((nt, tuple(self._alt_symbols(alt))))
        self._start_nt = self._new_nt("<start>")
        self._prods.append((self._start_nt, (self._rule_nt[grammar.root],)))
        self._analyze()
        self._build_tables()
        self._initial = State(self._close([], list(self._starts[self._start_nt])), ())

    # ------------------------------------------------------------------ lowering helpers
    def _new_nt(self, name: str) -> int:
        self._nt_names.append(name)
        return len(self._nt_names) - 1

    def _term(self, key, make) -> int:
        t = self._term_ids.get(key)
        if t is None:
            t = len(self._terms)
            self._terms.append(make())
            self._term_ids[key] = t
        return t

    def _byte_term(self, byteset: frozenset) -> int:
        return -1 - self._term(("b", byteset), lambda: byteset)

    def _alt_symbols(self, e: Expr) -> list:
        """Symbols of a production body for expression ``e``."""
        if isinstance(e, Bytes):
            return [self._byte_term(frozenset((b,))) for b in e.data]
        if isinstance(e, Seq):
            out = []
            for item in e.items:
                if isinstance(item, (Bytes, Seq)):
                    out.extend(self._alt_symbols(item))
                else:
                    out.append(self._symbol(item))
            return out
        return [self._symbol(e)]

    def _symbol(self, e: Expr) -> int:
        """One symbol (>= 0: nonterminal, < 0: terminal) standing for expression ``e``."""
        if isinstance(e, RuleRef):
            return self._rule_nt[e.name]
        if isinstance(e, CharClass):
            ranges = e.positive_ranges()
            if e.byte_level:
                byteset = frozenset(b for lo, hi in ranges for b in range(lo, hi + 1))
                return self._byte_term(byteset)
            return -1 - self._term(("u", ranges), lambda: _Utf8Class(ranges))
        if isinstance(e, Bytes) and len(e.data) == 1:
            return self._byte_term(frozenset(e.data))
        if isinstance(e, TokenSet):
            return -1 - self._term(("t", e.ids, e.negated), lambda: _TokenTerm(e.ids, e.negated))
        if isinstance(e, Choice):
            nt = self._new_nt("<choice>")
            for alt in e.items:
                self._prods.append((nt, tuple(self._alt_symbols(alt))))
            return nt
        if isinstance(e, (Bytes, Seq)):
            nt = self._new_nt("<seq>")
            self._prods.append((nt, tuple(self._alt_symbols(e))))
            return nt
        if isinstance(e, Repeat):
            nt = self._new_nt("<repeat>")
            x = self._symbol(e.item)
            self._reps.append((nt, x, e.min, e.max))
            return nt
        raise TypeError(f"not a grammar expression: {e!r}")

    # ------------------------------------------------------------------ analysis
    def _term_productive(self, sym: int) -> bool:
        t = self._terms[-1 - sym]
        return bool(t) if isinstance(t, frozenset) else not t.empty()

    def _analyze(self) -> None:
        n = len(self._nt_names)
        nullable = [False] * n
        productive = [False] * n
        changed = True
        while changed:
            changed = False
            for lhs, syms in self._prods:
                if not nullable[lhs] and all(s >= 0 and nullable[s] for s in syms):
                    nullable[lhs] = changed = True
                if not productive[lhs] and all(
                    productive[s] if s >= 0 else self._term_productive(s) for s in syms
                ):
                    productive[lhs] = changed = True
            for lhs, x, lo, _hi in self._reps:
                if not nullable[lhs] and (lo == 0 or (x >= 0 and nullable[x])):
                    nullable[lhs] = changed = True
                x_prod = productive[x] if x >= 0 else self._term_productive(x)
                if not productive[lhs] and (lo == 0 or x_prod):
                    productive[lhs] = changed = True
        self._nullable = nullable
        self._productive = productive

    def _sym_productive(self, s: int) -> bool:
        return self._productive[s] if s >= 0 else self._term_productive(s)

    def _build_tables(self) -> None:
        """LR(0)-style item ids with NEXT symbol, completed-lhs and advance tables."""
        nxt: List[Optional[int]] = []
        done: List[int] = []
        adv: List[int] = []
        starts: List[List[int]] = [[] for _ in self._nt_names]
        for lhs, syms in self._prods:
            base = len(nxt)
            viable = all(self._sym_productive(s) for s in syms)
            for dot in range(len(syms) + 1):
                if dot < len(syms):
                    nxt.append(syms[dot])
                    done.append(-1)
                    adv.append(base + dot + 1)
                else:
                    nxt.append(None)
                    done.append(lhs)
                    adv.append(-1)
            if viable:
                starts[lhs].append(base)
        for lhs, x, lo, hi in self._reps:
            base = len(nxt)
            top = lo if hi is None else hi
            x_ok = self._sym_productive(x)
            for count in range(top + 1):
                can_more = x_ok and (hi is None or count < hi)
                nxt.append(x if can_more else None)
                done.append(lhs if count >= lo else -1)
                if hi is None and count == top:
                    adv.append(base + count)  # saturated: stays at min
                else:
                    adv.append(base + count + 1 if can_more else -1)
            if lo == 0 or x_ok:
                starts[lhs].append(base)
        self._next = nxt
        self._done = done
        self._adv = adv
        self._starts = [tuple(s) for s in starts]
        # item id of "<start> ::= root ." (the accepting item)
        for k, lhs in enumerate(done):
            if lhs == self._start_nt:
                self._final_k = k
                break

    # ------------------------------------------------------------------ Earley core
    def _close(self, seeds, self_seeds) -> _ESet:
        """Build an Earley set from scanned ``seeds`` (item tuples) and ``self_seeds`` (item
        ids whose origin is the new set itself), closing under prediction and completion."""
        S = _ESet()
        items = S.items
        waiting = S.waiting
        scans = S.scans
        NEXT, DONE, ADV, NULLABLE, STARTS = self._next, self._done, self._adv, self._nullable, self._starts
        work = S.order
        level = S.level
        for it in seeds:
            if it not in items:
                items.add(it)
                work.append(it)
                level.append(0)
        for k in self_seeds:
            it = (k, S)
            if it not in items:
                items.add(it)
                work.append(it)
                level.append(0)
        i = 0
        while i < len(work):
            it = work[i]
            lv = level[i]
            i += 1
            k, origin = it
            sym = NEXT[k]
            if sym is not None:
                if sym >= 0:
                    lst = waiting.get(sym)
                    if lst is None:
                        waiting[sym] = [it]
                        for k0 in STARTS[sym]:
                            n = (k0, S)
                            if n not in items:
                                items.add(n)
                                work.append(n)
                                level.append(lv)
                    else:
                        lst.append(it)
                    if NULLABLE[sym]:
                        n = (ADV[k], origin)
                        if n not in items:
                            items.add(n)
                            work.append(n)
                            level.append(lv)
                else:
                    lst = scans.get(sym)
                    if lst is None:
                        scans[sym] = [it]
                    else:
                        lst.append(it)
            lhs = DONE[k]
            if lhs >= 0 and origin is not S:
                # (an empty completion, origin is S, is covered by the nullable rule above)
                for k2, o2 in origin.waiting.get(lhs, ()):
                    n = (ADV[k2], o2)
                    if n not in items:
                        items.add(n)
                        work.append(n)
                        level.append(lv + 1)
        return S

    # ------------------------------------------------------------------ public API
    def initial(self) -> State:
        """The state before any input."""
        return self._initial

    def step(self, state: State, byte: int) -> Optional[State]:
        """The state after ``byte``, or ``None`` if no sentence has this prefix."""
        ADV = self._adv
        terms = self._terms
        seeds = []
        pending = []
        b = byte
        for sym, its in state._set.scans.items():
            t = terms[-1 - sym]
            if isinstance(t, frozenset):
                if b in t:
                    seeds.extend((ADV[k], o) for k, o in its)
            elif isinstance(t, _TokenTerm):
                continue  # reads whole tokens only (step_token)
            elif b < 0x80:
                if t.ascii[b]:
                    seeds.extend((ADV[k], o) for k, o in its)
            else:
                lead = _LEADS.get(b)
                if lead is not None:
                    rem, mask, lo, hi = lead
                    val = b & mask
                    if self._reachable(t, val, rem, lo, hi):
                        pending.append((sym, rem, val, lo, hi, tuple(its)))
        if 0x80 <= b <= 0xBF:
            for sym, rem, val, lo, hi, its in state._pending:
                val = (val << 6) | (b & 0x3F)
                rem -= 1
                t = terms[-1 - sym]
                if rem == 0:
                    if lo <= val <= hi and t.contains(val):
                        seeds.extend((ADV[k], o) for k, o in its)
                elif self._reachable(t, val, rem, lo, hi):
                    pending.append((sym, rem, val, lo, hi, its))
        if not seeds and not pending:
            return None
        return State(self._close(seeds, ()), tuple(pending))

    def step_token(self, state: State, token_id: int) -> Optional[State]:
        """The state after the whole token ``token_id`` read by a ``TokenSet`` element (not
        by its bytes), or ``None`` if no such element can take it here."""
        ADV = self._adv
        seeds = []
        for sym, its in state._set.scans.items():
            t = self._terms[-1 - sym]
            if isinstance(t, _TokenTerm) and t.contains(token_id):
                seeds.extend((ADV[k], o) for k, o in its)
        if not seeds:
            return None
        return State(self._close(seeds, ()), ())

    @staticmethod
    def _reachable(t: _Utf8Class, val: int, rem: int, lo: int, hi: int) -> bool:
        """Whether some code point of class ``t`` starts with payload ``val`` followed by
        ``rem`` continuation bytes, within the shortest-form range ``[lo, hi]``."""
        first = val << (6 * rem)
        last = first | ((1 << (6 * rem)) - 1)
        return t.overlaps(max(first, lo), min(last, hi))

    def completions(self, state: State):
        """The rules completed in ``state``: ``(rule name, origin state, level)`` for each
        complete item of a grammar rule (not of a nested expression), in the order the Earley
        closure derived them; ``level`` counts the completions between the scanned byte and
        this one, predictions included (a rule completed because its last part completed has a
        higher level than that part).
        ``origin`` is the state the rule started in (``state`` itself: an empty match)."""
        out = []
        DONE, names, n_rules = self._done, self._nt_names, len(self.grammar.rules)
        for (k, origin), lv in zip(state._set.order, state._set.level):
            lhs = DONE[k]
            if 0 <= lhs < n_rules:
                out.append((names[lhs], origin, lv))
        return out

    @staticmethod
    def origin_key(state: State):
        """The object :meth:`completions` names as origin for rules that started in ``state``
        (compare with ``is``)."""
        return state._set

    def can_end(self, state: State) -> bool:
        """Whether the input so far is a complete sentence (the root rule can end here)."""
        return (self._final_k, self._initial._set) in state._set.items

    def run(self, data: bytes, state: Optional[State] = None) -> Optional[State]:
        """Step through ``data`` from ``state`` (default: initial); ``None`` if rejected."""
        st = self._initial if state is None else state
        for b in data:
            st = self.step(st, b)
            if st is None:
                return None
        return st

    def accepts_prefix(self, data: bytes) -> bool:
        """Whether ``data`` is a prefix of some sentence of the grammar."""
        st = self.run(data)
        if st is None:
            return False
        return bool(st._set.items) or bool(st._pending)

    def accepts(self, data: bytes) -> bool:
        """Whether ``data`` is a complete sentence of the grammar."""
        st = self.run(data)
        return st is not None and self.can_end(st)

    def allowed_bytes(self, state: State) -> List[int]:
        """All bytes ``b`` for which ``step(state, b)`` is not ``None`` (slow; for tests)."""
        return [b for b in range(256) if self.step(state, b) is not None]
