"""What ``GrammarMatcher.get_captures`` reports: the matches of rules with a ``capture``
attribute (Lark ``rule[capture]`` / ``rule[capture="name"]``, EBNF ``rule[capture="name"] ::=``).

XGrammar 0.2.8's meaning, checked against it: the parser follows every parse hypothesis at
once, and *each time* a captured rule is complete after an accepted byte, the span it matched
is an event ``(capture name, matched bytes)``, whether or not that hypothesis survives later
input.  Events are ordered by the position where they happened; at one position a rule
completed because a part of it completed comes after that part, otherwise the earlier start
comes first, then the rule defined first.  Nothing is recorded before the first byte.
``deduplicate=True`` keeps, per occurrence (the same rule starting at the same position), only
its last (longest) completion, in the order of those kept events.  ``deduplicate=False``
returns the events: one per rule, start and end (XGrammar may repeat an event once per
alternative of the rule that completes there).

The matcher logs what it accepted (token ids, ``accept_string`` bytes) only when its grammar
has captures; this module replays the log on the grammar with the Earley recognizer
(:mod:`xmask.grammar.recognizer`), incrementally: a log that extends the one seen before costs
only its new bytes, and after a rollback the common prefix is reused.  Masks are never
involved.

Example::

    >>> from xmask.grammar.lark import parse_lark
    >>> g = parse_lark('start: (num ",")*\\nnum[capture]: /[0-9]+/')
    >>> log = CaptureLog(g, decoded_vocab=[])
    >>> log.captures([b"1,22,", b"333"])
    [('num', b'1'), ('num', b'22'), ('num', b'333')]
    >>> log.captures([b"1,22"], deduplicate=False)
    [('num', b'1'), ('num', b'2'), ('num', b'22')]
"""

from __future__ import annotations

import functools
from typing import List, Optional, Sequence, Tuple, Union

from .._gc_pause import gc_paused
from .ir import Grammar
from .recognizer import Recognizer

__all__ = ["CaptureLog", "capture_log_for"]

Unit = Union[bytes, int, None]  # accept_string bytes, an accepted token id, a stop token


@functools.lru_cache(maxsize=32)
def _recognizer(grammar: Grammar) -> Recognizer:
    return Recognizer(grammar)


class CaptureLog:
    """Replays accepted input on ``grammar`` and lists the capture events (see the module
    docstring).  ``decoded_vocab[t]`` are the bytes of token ``t``."""

    def __init__(self, grammar: Grammar, decoded_vocab: Sequence[bytes]):
        self.grammar = grammar
        self.names = grammar.captures
        self.order = {r: i for i, r in enumerate(grammar.rules)}
        self.vocab = decoded_vocab
        self.rec = _recognizer(grammar)
        self.units: List[Unit] = []
        # per unit: the states after each of its bytes (or one state for a whole token), the
        # byte offset after it, and the events it produced: (end, start, rule)
        self.states = [self.rec.initial()]
        self.offsets = [0]
        self.text = bytearray()
        self.events: List[List[Tuple[int, int, str]]] = []
        self.starts = {id(self.rec.origin_key(self.rec.initial())): 0}
        self._unit_states: List[List[object]] = []

    # -------------------------------------------------------------- replay
    def _truncate(self, n: int) -> None:
        for unit_states in self._unit_states[n:]:
            for st in unit_states:
                self.starts.pop(id(self.rec.origin_key(st)), None)
        del self._unit_states[n:]
        del self.units[n:]
        del self.events[n:]
        self.states = [self.rec.initial()] + [s for u in self._unit_states for s in u]
        del self.text[self.offsets[n]:]
        del self.offsets[n + 1:]

    def _step_unit(self, unit: Unit) -> bool:
        st = self.states[-1]
        data = unit if isinstance(unit, (bytes, bytearray)) else None
        if isinstance(unit, int):
            data = bytes(self.vocab[unit]) if 0 <= unit < len(self.vocab) else b""
        new, pos, events = [], len(self.text), []
        by_bytes = data is not None and len(data) > 0
        cur = st
        if by_bytes:
            for b in data:
                cur = self.rec.step(cur, b)
                if cur is None:
                    break
                new.append(cur)
        if (not by_bytes or cur is None) and isinstance(unit, int):
            whole = self.rec.step_token(st, unit)  # a grammar element naming the token
            if whole is not None:
                new, cur = [whole], whole
        if unit is not None and (cur is None or not new) and (data or isinstance(unit, int)):
            return False  # the matcher accepted it: the grammars disagree (never expected)
        for i, state in enumerate(new):
            end = pos + (i + 1 if len(new) == len(data or b"") else len(data or b""))
            self.starts[id(self.rec.origin_key(state))] = end
            events.extend(self._events_at(state, end))
        self.text += data or b""
        self.units.append(unit)
        self.offsets.append(len(self.text))
        self._unit_states.append(new)
        self.states.extend(new)
        self.events.append(events)
        return True

    def _events_at(self, state, end: int) -> List[Tuple[int, int, str]]:
        got = {}
        for rule, origin, level in self.rec.completions(state):
            if rule in self.names:
                start = self.starts[id(origin)]
                key = (rule, start)
                if key not in got or got[key] > level:
                    got[key] = level
        ranked = sorted(got.items(), key=lambda kv: (kv[1], kv[0][1], self.order[kv[0][0]]))
        return [(end, start, rule) for (rule, start), _ in ranked]

    def sync(self, units: Sequence[Unit]) -> None:
        """Bring the replay to ``units`` (the matcher's log), reusing the common prefix."""
        n = 0
        limit = min(len(units), len(self.units))
        while n < limit and units[n] == self.units[n]:
            n += 1
        if n < len(self.units):
            self._truncate(n)
        # The replay keeps one Earley set per byte alive: with the cyclic collector running, its
        # full collections re-scan them all, again and again (superlinear); pause it.
        with gc_paused():
            for unit in units[n:]:
                if not self._step_unit(unit):
                    break

    # -------------------------------------------------------------- answers
    def captures(self, units: Sequence[Unit], deduplicate: bool = True) -> List[Tuple[str, bytes]]:
        """The capture events after accepting ``units`` (see the module docstring)."""
        self.sync(units)
        flat = [e for unit_events in self.events for e in unit_events]
        if deduplicate:
            last = {}
            for i, (_, start, rule) in enumerate(flat):
                last[(rule, start)] = i
            flat = [flat[i] for i in sorted(last.values())]
        return [(self.names[rule], bytes(self.text[start:end])) for end, start, rule in flat]


def capture_log_for(grammar, tokenizer_info) -> Optional[CaptureLog]:
    """A :class:`CaptureLog` for ``grammar`` (a compiled grammar's source, or None when it has
    no captures: ``CompiledGrammar._captured_grammar``) if it has captures, else None."""
    if not isinstance(grammar, Grammar) or not grammar.captures:
        return None
    return CaptureLog(grammar, tokenizer_info.decoded_vocab)
