"""Free text until a trigger, then dispatch: the exact lowering to grammar IR rules.

This is the language of XGrammar's ``TagDispatch`` (EBNF) and of the structural-tag formats
``triggered_tags``, ``dispatch`` and ``any_text`` with ``excludes``.  The text is scanned left to
right by one Aho-Corasick automaton over the code points of every trigger, stop string and
excluded string:

* at the first position where some pattern *ends*, the free text is over: if an excluded
  string ends there the text is rejected; otherwise the longest trigger (or stop string)
  ending there fires.  A pattern may straddle the boundary of what came before: with trigger
  ``"aa"``, the text ``"aaa..."`` fires at offset 2, so the free text is empty and the trigger
  is followed by ``"a..."``; with excluded ``"xa"`` and trigger ``"ab"``, ``"xab"`` is rejected.
* a trigger is followed by its ``then`` expression; with ``loop`` the free text starts again
  afterwards (the automaton restarts: nothing before the dispatch counts), otherwise the
  whole rule ends after the first dispatch.
* a stop string ends the rule (it is part of what the rule matches).
* ``can_end``: the rule may also end anywhere inside the free text (XGrammar's ``stop_eos``,
  and what a structural tag's ``any_text`` / ``triggered_tags`` do before their tag's end).
* ``whole_texts``: triggers / stop strings that may also come as one whole literal right after
  text with no partial pattern pending (the automaton's root).  The language is unchanged; the
  compiler lets a literal that spells a special token's text be that token
  (``xmask/compiler/special_literals.py``), so a special token whose text is a trigger fires it.

API (all names are public)::

    FreeText(triggers=(("<f", RuleRef("call")),), excludes=("</s>",), loop=True,
             stop_strings=(), can_end=True, max_chars=None, whole_texts=())
    lower_free_text(rules, namer, spec, hint="free_text") -> RuleRef

``lower_free_text`` adds the rules to ``rules`` (names from ``namer``, a
:class:`~xmask.grammar.combine.RuleNamer`) and returns a reference to the entry rule; the
``then`` expressions may reference rules of the same table.  ``max_chars`` bounds the free text
(code points) and needs ``triggers`` and ``stop_strings`` empty; it is built as a product of the
automaton and a counter and raises ``GrammarLimitError`` past :data:`MAX_PRODUCT_STATES`.

Bad input raises ``GrammarError``: an empty pattern, a trigger or stop string that is a prefix
of another one (the longer could never fire), an excluded string that is a prefix of a trigger
(XGrammar's rule: the trigger could never fire).

Example::

    >>> from xmask.grammar.ir import Grammar, RuleRef, Bytes
    >>> from xmask.grammar.combine import RuleNamer
    >>> rules = {"call": Bytes(b"=f>")}
    >>> ref = lower_free_text(rules, RuleNamer(rules), FreeText(triggers=(("<f", RuleRef("call")),)))
    >>> rules["root"] = ref
    >>> g = Grammar(rules, "root")
    >>> from xmask.grammar.recognizer import Recognizer
    >>> [Recognizer(g).accepts(s.encode()) for s in ("hi <f=f> ok", "hi <g", "hi <f>")]
    [True, True, False]
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from ..errors import GrammarError, GrammarLimitError
from .combine import RuleNamer
from .ir import EPSILON, Bytes, CharClass, Choice, Expr, Repeat, RuleRef, Seq

__all__ = ["FreeText", "lower_free_text", "MAX_PRODUCT_STATES"]

#: Cap on (automaton state, character count) pairs for ``max_chars`` with excluded strings.
MAX_PRODUCT_STATES = 20_000

_ANY_CHAR = CharClass((), negated=True)

_LIVE, _DEAD, _FIRE = 0, 1, 2
_TRIGGER, _STOP, _EXCLUDE = 0, 1, 2


@dataclass(frozen=True)
class FreeText:
    """What :func:`lower_free_text` builds (see the module docstring for the semantics).

    ``triggers``: ``(string, then)`` pairs, ``then`` an IR expression matched right after the
    trigger.  ``excludes``: strings that never occur in the free text (nor straddle into a
    trigger).  ``stop_strings``: strings that end the rule.
    """

    triggers: Tuple[Tuple[str, Expr], ...] = ()
    excludes: Tuple[str, ...] = ()
    loop: bool = True
    stop_strings: Tuple[str, ...] = ()
    can_end: bool = True
    max_chars: Optional[int] = None
    whole_texts: Tuple[str, ...] = ()


class _Automaton:
    """Aho-Corasick over code points: a trie plus failure links, giving complete transitions
    on the pattern characters (every other character leads back to the root)."""

    def __init__(self, patterns: List[Tuple[str, int, int]]):
        # patterns: (text, kind, index)
        self.children: List[Dict[str, int]] = [{}]
        ends: List[List[Tuple[str, int, int]]] = [[]]
        for pat in patterns:
            q = 0
            for ch in pat[0]:
                nxt = self.children[q].get(ch)
                if nxt is None:
                    nxt = len(self.children)
                    self.children[q][ch] = nxt
                    self.children.append({})
                    ends.append([])
                q = nxt
            ends[q].append(pat)
        fail = [0] * len(self.children)
        self.outputs = [list(e) for e in ends]  # every pattern that ends at the node
        todo = deque([0])
        while todo:
            q = todo.popleft()
            for ch, c in self.children[q].items():
                if q:
                    f = fail[q]
                    while f and ch not in self.children[f]:
                        f = fail[f]
                    fail[c] = self.children[f].get(ch, 0)
                self.outputs[c] += self.outputs[fail[c]]
                todo.append(c)
        self.fail = fail
        self.alphabet = sorted({ch for p in patterns for ch in p[0]})

    def goto(self, q: int, ch: str) -> int:
        while True:
            nxt = self.children[q].get(ch)
            if nxt is not None:
                return nxt
            if q == 0:
                return 0
            q = self.fail[q]

    def status(self, q: int):
        """``(_LIVE, None)``, ``(_DEAD, None)`` or ``(_FIRE, pattern)``: an excluded string
        ending here kills the text, else the longest trigger / stop string ending here fires."""
        outs = self.outputs[q]
        if not outs:
            return _LIVE, None
        if any(kind == _EXCLUDE for _, kind, _ in outs):
            return _DEAD, None
        return _FIRE, max(outs, key=lambda p: len(p[0]))

    def edges(self, q: int) -> Tuple[Dict[int, List[str]], CharClass]:
        """Transitions of live state ``q``: ``{target: pattern characters}`` for targets other
        than the root, and the class of every character that leads back to the root."""
        by_target: Dict[int, List[str]] = {}
        for ch in self.alphabet:
            by_target.setdefault(self.goto(q, ch), []).append(ch)
        by_target.pop(0, None)
        special = [ch for chars in by_target.values() for ch in chars]
        return by_target, CharClass(tuple((ord(c), ord(c)) for c in special), negated=True)

    def live_states(self) -> List[int]:
        """Live states reachable from the root (the text stops at a firing or dead state)."""
        seen, order, todo = {0}, [], deque([0])
        while todo:
            q = todo.popleft()
            order.append(q)
            for t in self.edges(q)[0]:
                if t not in seen and self.status(t)[0] == _LIVE:
                    seen.add(t)
                    todo.append(t)
        return order


def _check_patterns(spec: FreeText) -> List[Tuple[str, int, int]]:
    pats: List[Tuple[str, int, int]] = []
    for i, (t, _) in enumerate(spec.triggers):
        pats.append((t, _TRIGGER, i))
    for i, s in enumerate(spec.stop_strings):
        pats.append((s, _STOP, i))
    firing = list(pats)
    for i, e in enumerate(spec.excludes):
        pats.append((e, _EXCLUDE, i))
    names = {_TRIGGER: "trigger", _STOP: "stop string", _EXCLUDE: "excluded string"}
    for text, kind, _ in pats:
        if not isinstance(text, str) or not text:
            raise GrammarError(f"free text: every {names[kind]} must be a non-empty string, "
                               f"got {text!r}")
    for a, ka, ia in firing:
        for b, kb, ib in firing:
            if (ka, ia) != (kb, ib) and b.startswith(a):
                raise GrammarError(f"free text: {names[ka]} {a!r} is a prefix of {names[kb]} "
                                   f"{b!r}, which could therefore never fire")
    for text, kind, _ in pats:
        if kind != _EXCLUDE:
            continue
        for b, kb, _ in firing:
            if b.startswith(text):
                raise GrammarError(f"free text: excluded string {text!r} is a prefix of "
                                   f"{names[kb]} {b!r}, which could therefore never fire")
    return pats


def _char_class(chars) -> CharClass:
    return CharClass(tuple((ord(c), ord(c)) for c in chars))


def lower_free_text(rules: Dict[str, Expr], namer: RuleNamer, spec: FreeText,
                    hint: str = "free_text") -> RuleRef:
    """Add the rules of ``spec`` to ``rules`` and return a reference to the entry rule (see the
    module docstring)."""
    pats = _check_patterns(spec)
    if spec.max_chars is not None:
        if spec.triggers or spec.stop_strings:
            raise GrammarError("free text: max_chars is supported only without triggers and "
                               "stop strings")
        if spec.max_chars < 0:
            raise GrammarError(f"free text: max_chars must be >= 0, got {spec.max_chars}")
    if not spec.can_end and not spec.triggers and not spec.stop_strings:
        raise GrammarError("free text: with no trigger, no stop string and can_end=False the "
                           "text could never end")
    if not pats:
        body: Expr = Repeat(_ANY_CHAR, 0, spec.max_chars)
        name = namer.fresh(hint)
        rules[name] = body
        return RuleRef(name)
    ac = _Automaton(pats)
    if spec.max_chars is not None:
        return _lower_bounded(rules, namer, spec, ac, hint)
    live = ac.live_states()
    names = {q: namer.fresh(hint if q == 0 else f"{hint}_s{i}") for i, q in enumerate(live)}
    entry = RuleRef(names[0])

    def after(q: int) -> Optional[Expr]:
        kind, pat = ac.status(q)
        if kind == _LIVE:
            return RuleRef(names[q])
        if kind == _DEAD:
            return None
        if pat[1] == _STOP:
            return EPSILON
        then = spec.triggers[pat[2]][1]
        return Seq((then, entry)) if spec.loop else then

    for q in live:
        alts: List[Expr] = [EPSILON] if spec.can_end else []
        by_target, plain = ac.edges(q)
        for target, chars in sorted(by_target.items()):
            nxt = after(target)
            if nxt is not None:
                alts.append(Seq((_char_class(chars), nxt)))
        if q == 0:
            for text in spec.whole_texts:
                nxt = _whole_literal(ac, text, after)
                if nxt is not None:
                    alts.append(Seq((Bytes(text.encode("utf-8")), nxt)))
            # the dense loop stays inside one rule: plain characters never leave it
            rules[names[q]] = Seq((Repeat(plain, 0, None), _choice(alts)))
        else:
            alts.append(Seq((plain, entry)))
            rules[names[q]] = _choice(alts)
    return entry


def _whole_literal(ac: _Automaton, text: str, after) -> Optional[Expr]:
    # What follows `text` read from the root, when the text's first firing (or death) is at
    # its end: the same continuation as the character-by-character path; None otherwise (the
    # character path alone is then exact, and a literal would not be).
    q = 0
    for i, ch in enumerate(text):
        q = ac.goto(q, ch)
        kind = ac.status(q)[0]
        if kind != _LIVE:
            return after(q) if i == len(text) - 1 and kind == _FIRE else None
    return None


def _choice(alts: List[Expr]) -> Expr:
    if not alts:
        return CharClass(())  # matches nothing: every way on is excluded
    return alts[0] if len(alts) == 1 else Choice(tuple(alts))


def _lower_bounded(rules, namer, spec: FreeText, ac: _Automaton, hint: str) -> RuleRef:
    """Free text of at most ``max_chars`` code points avoiding the excluded strings: one rule
    per (live automaton state, characters used)."""
    n = spec.max_chars
    live = ac.live_states()
    if len(live) * (n + 1) > MAX_PRODUCT_STATES:
        raise GrammarLimitError(
            f"free text: max_chars={n} with these excluded strings needs up to "
            f"{len(live) * (n + 1)} automaton states, more than {MAX_PRODUCT_STATES}")
    names: Dict[Tuple[int, int], str] = {}

    def ref(q: int, k: int) -> RuleRef:
        key = (q, k)
        if key not in names:
            names[key] = namer.fresh(hint if key == (0, 0) else f"{hint}_s{q}_{k}")
            todo.append(key)
        return RuleRef(names[key])

    todo: List[Tuple[int, int]] = []
    entry = ref(0, 0)
    while todo:
        q, k = todo.pop()
        alts: List[Expr] = [EPSILON]
        if k < n:
            by_target, plain = ac.edges(q)
            for target, chars in sorted(by_target.items()):
                if ac.status(target)[0] == _LIVE:
                    alts.append(Seq((_char_class(chars), ref(target, k + 1))))
            alts.append(Seq((plain, ref(0, k + 1))))
        rules[names[(q, k)]] = _choice(alts)
    return entry
