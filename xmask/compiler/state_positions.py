"""Where an automaton state sits in its grammar rule, as a short dotted item for people.

A state's position is the shortest input that leads to it from its rule's start (bytes written
as EBNF literals and character classes, calls as the called rule's name), then ``•``, then what
the state reads next (its bytes, the rules it calls, ``(end)`` when the rule may stop there)::

    member: "\\"" • [ -\\x7f\\xc2-\\xf4]     # inside a key (JSON), after its opening quote
    object: "{" member • [,}]

Only for reading (``CompiledGrammar.cache_stats()``, ``xmask.inspect``); the runtime never
uses it.  Rules inlined into their callers (small, non-recursive ones) have no states of their
own: their bytes show up in the caller's positions.

Example::

    >>> from xmask.grammar.ebnf import parse_ebnf
    >>> from xmask.compiler.automaton import build_automaton
    >>> state_positions(build_automaton(parse_ebnf('root ::= "ab" [0-9]+')))
    ['• "a"', '"a" • "b"', '"ab" • [0-9]', '"ab" [0-9] • [0-9] | (end)']
"""

from __future__ import annotations

import functools
import weakref
from typing import List

import numpy as np

from .automaton import FLAG_FINAL

# labels kept before a position is cut ("…" marks the cut); items past ~60 chars read badly
_MAX_LABELS = 10
_MAX_CLASS_CHARS = 24
_memo: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def state_positions(automaton, states=None) -> List[str]:
    """The dotted positions (see the module docstring) of ``states`` (default: every state).

    The shortest paths are found once per automaton (remembered while it lives) and each text
    is made on first request, so asking for the few classified states of a big automaton is
    cheap."""
    got = _memo.get(automaton)
    if got is None:
        got = _memo[automaton] = _Positions(automaton)
    if states is None:
        states = range(int(automaton.n_states))
    return [got.text(int(s)) for s in states]


class _Positions:
    """One automaton's shortest paths from the rule starts, and the texts made so far."""

    def __init__(self, automaton):
        n, nc = int(automaton.n_states), int(automaton.n_classes)
        self.names = list(automaton.rule_names)
        self.trans = np.asarray(automaton.trans).reshape(n, nc)
        self.class_bytes = [[] for _ in range(nc)]
        for b, c in enumerate(np.asarray(automaton.byte_class).tolist()):
            self.class_bytes[c].append(b)
        starts = np.asarray(automaton.rule_start)
        rule_of_start = {int(s): r for r, s in enumerate(starts.tolist())}
        self.offsets = np.asarray(automaton.call_offsets)
        c_src = np.repeat(np.arange(n), np.diff(self.offsets))
        self.c_rule = np.array([rule_of_start[int(t)]
                                for t in np.asarray(automaton.call_target).tolist()],
                               dtype=np.int64)
        c_ret = np.asarray(automaton.call_ret).astype(np.int64)
        self.parent, self.label = _shortest_paths(self.trans, starts, c_src, self.c_rule, c_ret)
        self.flags = np.asarray(automaton.flags)
        self.texts = {}

    def text(self, s: int) -> str:
        got = self.texts.get(s)
        if got is None:
            path = _path_text(s, self.parent, self.label, self.trans, self.class_bytes,
                              self.names)
            callees = [self.names[int(r)]
                       for r in self.c_rule[self.offsets[s]:self.offsets[s + 1]]]
            reads = _reads_text(self.trans[s], self.class_bytes, callees,
                                bool(self.flags[s] & FLAG_FINAL))
            got = self.texts[s] = f"{path} • {reads}" if path else f"• {reads}"
        return got


def _shortest_paths(trans, starts, c_src, c_rule, c_ret):
    """Breadth-first from every rule start over byte edges (label = class) and call edges (label
    = -1 - callee rule, to the return state).  Returns per state its parent and edge label
    (-2**62 = a rule start or unreachable)."""
    n = trans.shape[0]
    none = -(1 << 62)
    parent = np.full(n, -1, dtype=np.int64)
    label = np.full(n, none, dtype=np.int64)
    seen = np.zeros(n, dtype=bool)
    frontier = np.unique(starts.astype(np.int64))
    seen[frontier] = True
    keep_call = c_ret >= 0  # a tail call returns past this rule: no state of ours follows it
    c_src, c_rule, c_ret = c_src[keep_call], c_rule[keep_call], c_ret[keep_call]
    while frontier.size:
        rows = trans[frontier]
        fi, ci = np.nonzero(rows >= 0)
        in_frontier = np.isin(c_src, frontier)
        tgt = np.concatenate([rows[fi, ci].astype(np.int64), c_ret[in_frontier]])
        src = np.concatenate([frontier[fi], c_src[in_frontier]])
        lab = np.concatenate([ci.astype(np.int64), -1 - c_rule[in_frontier]])
        new = ~seen[tgt]
        tgt, src, lab = tgt[new], src[new], lab[new]
        tgt, first = np.unique(tgt, return_index=True)  # the first edge found wins
        parent[tgt], label[tgt] = src[first], lab[first]
        seen[tgt] = True
        frontier = tgt
    return parent, label


def _path_text(s, parent, label, trans, class_bytes, names) -> str:
    steps = []  # (bytes of every class leading from the parent to the state) or a rule name
    while parent[s] >= 0 and len(steps) <= _MAX_LABELS:
        p, lab = int(parent[s]), int(label[s])
        if lab >= 0:
            steps.append(sorted(b for c in np.nonzero(trans[p] == s)[0].tolist()
                                for b in class_bytes[c]))
        else:
            steps.append(names[-1 - lab])
        s = p
    cut = len(steps) > _MAX_LABELS
    parts, run = [], bytearray()
    for step in steps[:_MAX_LABELS][::-1]:
        if not isinstance(step, str) and len(step) == 1:
            run.append(step[0])  # single bytes merge into one literal
            continue
        if run:
            parts.append(_literal(bytes(run)))
            run = bytearray()
        parts.append(step if isinstance(step, str) else _char_class(tuple(step)))
    if run:
        parts.append(_literal(bytes(run)))
    return ("… " if cut else "") + " ".join(parts)


def _reads_text(row, class_bytes, callees, final) -> str:
    got = sorted(b for c in np.nonzero(row >= 0)[0].tolist() for b in class_bytes[c])
    alts = []
    if got:
        alts.append(_literal(bytes(got)) if len(got) == 1 else _char_class(tuple(got)))
    alts.extend(dict.fromkeys(callees))
    if final:
        alts.append("(end)")
    return " | ".join(alts) if alts else "(nothing)"


def _escape_char(ch: str, specials: str) -> str:
    o = ord(ch)
    if ch in specials:
        return "\\" + ch
    if ch == "\n":
        return "\\n"
    if ch == "\t":
        return "\\t"
    if ch == "\r":
        return "\\r"
    if 0xDC80 <= o <= 0xDCFF:  # a byte that is not valid UTF-8 here (surrogateescape)
        return f"\\x{o - 0xDC00:02x}"
    if o < 0x20 or o == 0x7F:
        return f"\\x{o:02x}"
    return ch


def _literal(data: bytes) -> str:
    text = data.decode("utf-8", errors="surrogateescape")
    return '"' + "".join(_escape_char(ch, '"\\') for ch in text) + '"'


def _class_byte(b: int) -> str:
    if b >= 0x80 or b < 0x20 or b == 0x7F:
        return {10: "\\n", 9: "\\t", 13: "\\r"}.get(b, f"\\x{b:02x}")
    return _escape_char(chr(b), "]\\^-")


def _ranges(sorted_bytes) -> str:
    out, i, bs = [], 0, list(sorted_bytes)
    while i < len(bs):
        j = i
        while j + 1 < len(bs) and bs[j + 1] == bs[j] + 1:
            j += 1
        lo, hi = bs[i], bs[j]
        if hi - lo >= 2:
            out.append(f"{_class_byte(lo)}-{_class_byte(hi)}")
        else:
            out.extend(_class_byte(b) for b in range(lo, hi + 1))
        i = j + 1
    return "".join(out)


@functools.lru_cache(maxsize=4096)  # few distinct classes, met by many states
def _char_class(sorted_bytes: tuple) -> str:
    have = set(sorted_bytes)
    if len(have) == 256:
        return "[\\x00-\\xff]"
    if len(have) > 128:  # mostly everything: say what is left out
        text = "[^" + _ranges(b for b in range(256) if b not in have) + "]"
    else:
        text = "[" + _ranges(sorted(have)) + "]"
    if len(text) > _MAX_CLASS_CHARS:
        text = text[:_MAX_CLASS_CHARS - 2] + "…]"
    return text
