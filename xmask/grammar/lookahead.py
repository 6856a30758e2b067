"""XGrammar lookahead assertions (``rule ::= body (= lookahead)``): what they mean, and a
checker that proves one implied.

XGrammar attaches ``(= L)`` to a rule to say what follows it; its JSON grammars print them
(``characters_item ::= ... (= [ \\n\\r\\t]* [,\\]])``).  In XGrammar 0.2.8 they never change
the language -- they only speed up masks -- and xmask's EBNF parser therefore drops them.
Measured: ``root ::= a "c"`` with ``a ::= "x" (= "b")`` accepts ``"xc"`` in XGrammar; and
XGrammar's own built-in JSON grammar carries lookaheads a strict reading would violate
(``characters_and_embrace ... (=[ \\n\\r\\t]* [},])`` is followed by ``]`` in
``[{"a":"b"}]``, which XGrammar accepts, masks included).  Reading them strictly would
reject valid JSON; dropping them is XGrammar's language exactly.

:func:`lookahead_implied` proves that a lookahead is implied -- every continuation of the rule
starts with a string of ``L`` or ends the input -- so that dropping it is exact under a strict
reading too (a bounded symbolic walk: structural equality of sub-expressions, rule
expansion, character-set inclusion; sound, and returns False when it cannot prove it).
Measured: it proves all 180 lookaheads XGrammar prints for 49 MaskBench schemas and 7 of the 8
of its built-in JSON grammar (the eighth is the one above, which does not hold).

Example::

    >>> from xmask.grammar.ebnf import parse_ebnf
    >>> g = parse_ebnf('root ::= a "b"\\na ::= "x"')
    >>> lookahead_implied(g.rules, "root", "a", parse_ebnf('root ::= "b"').rules["root"])
    True
"""

from __future__ import annotations

from typing import Dict, List, Tuple

from .ir import Bytes, CharClass, Choice, Expr, Repeat, RuleRef, Seq, node_kind

__all__ = ["lookahead_implied"]

_STEP_BUDGET = 200_000


class _Follow:
    """Continuation marker: whatever follows rule ``name`` (in any of its contexts)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __eq__(self, other):
        return type(other) is _Follow and other.name == self.name

    def __hash__(self):
        return hash(("follow", self.name))


def _contexts(rules: Dict[str, Expr]) -> Dict[str, List[tuple]]:
    """rule name -> the continuations after each of its references (ending in a _Follow)."""
    out: Dict[str, List[tuple]] = {}
    for owner, body in rules.items():
        stack = [(body, (_Follow(owner),))]
        while stack:
            e, cont = stack.pop()
            t = node_kind(e)
            if t is RuleRef:
                out.setdefault(e.name, []).append(cont)
            elif t is Seq:
                items = e.items
                for i, item in enumerate(items):
                    stack.append((item, items[i + 1:] + cont))
            elif t is Choice:
                for item in e.items:
                    stack.append((item, cont))
            elif t is Repeat:
                # after one iteration: any number of further ones (a superset is safe here)
                more = None if e.max is None else e.max - 1
                rest = cont if more == 0 else (Repeat(e.item, 0, more),) + cont
                stack.append((e.item, rest))
    return out


def _first_char(e) -> Tuple[tuple, object]:
    """(code point ranges of the first character, what remains) of a character item."""
    if type(e) is Bytes:
        text = e.data.decode("utf-8", "surrogatepass")
        cp = ord(text[0])
        rest = text[1:].encode("utf-8", "surrogatepass")
        return ((cp, cp),), (Bytes(rest) if rest else None)
    return e.positive_ranges(), None


def _is_char_item(e) -> bool:
    if type(e) is Bytes:
        try:
            return bool(e.data) and bool(e.data.decode("utf-8"))
        except UnicodeDecodeError:
            return False
    return type(e) is CharClass and not e.byte_level


def _subset(a, b) -> bool:
    """Whether the ranges ``a`` lie inside the (sorted, merged) ranges ``b``."""
    for lo, hi in a:
        if not any(blo <= lo and hi <= bhi for blo, bhi in b):
            return False
    return True


def _dec(r: Repeat) -> tuple:
    lo = max(r.min - 1, 0)
    hi = None if r.max is None else r.max - 1
    return () if hi == 0 else (Repeat(r.item, lo, hi),)


class _Prover:
    def __init__(self, rules: Dict[str, Expr], contexts: Dict[str, List[tuple]], root: str):
        self.rules = rules
        self.contexts = contexts
        self.root = root
        self.steps = 0
        self.active: Dict[tuple, Tuple[int, int]] = {}
        self.choices = 0  # alternatives of the lookahead being tried on the current path
        self.known: Dict[tuple, bool] = {}
        self.assumed = 0  # cycle assumptions made (results relying on them are not cached)

    def prove(self, la: tuple, cont: tuple, eaten: int = 0) -> bool:
        if not la or not cont:
            return True
        key = (la, cont)
        known = self.known.get(key)
        if known is not None:
            return known
        entered = self.active.get(key)
        if entered is not None:
            # A cycle.  Sound to assume when input was consumed on the way (every string is
            # finite), or when only continuation steps were taken (a derivation that comes
            # back to the same continuation can be cut short); not through a chosen
            # alternative of the lookahead, which would then hold vacuously.
            self.assumed += 1
            return eaten > entered[0] or self.choices == entered[1]
        self.steps += 1
        if self.steps > _STEP_BUDGET:
            return False
        self.active[key] = (eaten, self.choices)
        assumed = self.assumed
        try:
            result = self.step(la, cont, eaten)
        finally:
            del self.active[key]
        if not result or self.assumed == assumed:
            self.known[key] = result
        return result

    def step(self, la: tuple, cont: tuple, eaten: int) -> bool:
        h, rest = cont[0], cont[1:]
        lh, lrest = la[0], la[1:]
        if h == lh and type(h) is not _Follow:
            return self.prove(lrest, rest, eaten)
        th = node_kind(h)
        if th is _Follow:
            # the root may also end the input: that continuation is empty, so it holds
            ctxs = self.contexts.get(h.name, ())
            return all(self.prove(la, c + rest, eaten) for c in ctxs)
        if th is Seq:
            return self.prove(la, h.items + rest, eaten)
        if th is Choice:
            return all(self.prove(la, (alt,) + rest, eaten) for alt in h.items)
        if th is Repeat:
            one = self.prove(la, (h.item,) + _dec(h) + rest, eaten)
            return one and (h.min > 0 or self.prove(la, rest, eaten))
        if th is RuleRef:
            return self.prove(la, (self.rules[h.name],) + rest, eaten)
        tl = node_kind(lh)
        if tl is Seq:
            return self.prove(lh.items + lrest, cont, eaten)
        if tl is Choice:
            return self.any_of([(alt,) + lrest for alt in lh.items], cont, eaten)
        if tl is Repeat:
            options = [(lh.item,) + _dec(lh) + lrest]
            return self.any_of(([lrest] if lh.min == 0 else []) + options, cont, eaten)
        if tl is RuleRef:
            return self.prove((self.rules[lh.name],) + lrest, cont, eaten)
        if _is_char_item(h) and _is_char_item(lh):
            hs, hrest = _first_char(h)
            ls, lrem = _first_char(lh)
            if not _subset(hs, ls):
                return False
            return self.prove(((lrem,) if lrem else ()) + lrest, ((hrest,) if hrest else ()) + rest, eaten + 1)
        return False

    def any_of(self, options, cont: tuple, eaten: int) -> bool:
        self.choices += 1
        try:
            return any(self.prove(la, cont, eaten) for la in options)
        finally:
            self.choices -= 1


def lookahead_implied(rules: Dict[str, Expr], root: str, rule: str, lookahead: Expr) -> bool:
    """Whether every continuation of ``rule`` in the grammar starts with a string of
    ``lookahead`` or ends the input (so dropping the lookahead changes nothing)."""
    prover = _Prover(rules, _contexts(rules), root)
    return prover.prove((lookahead,), (_Follow(rule),))
