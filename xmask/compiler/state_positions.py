"""Where an automaton state sits in its grammar rule, as a short dotted item for people.

A state's position is the shortest input that leads to it from its rule's start (bytes written
as EBNF literals and character classes, calls as the called rule's name), then ``•``, then what
the state reads next (its bytes, the rules it calls, ``(end)`` when the rule may stop there)::

    member: "\\"" [a-z] • [a-z"]        # inside a key, after its first letter
    object: "{" member • "," | "}"

Only for reading (``CompiledGrammar.cache_stats()``, ``xmask.inspect``); the runtime never
uses it.  Rules inlined into their callers (small, non-recursive ones) have no states of their
own: their bytes show up in the caller's positions.

Example::

    >>> from xmask.grammar.ir import Grammar, Bytes, Repeat, CharClass, Sequence
    >>> from xmask.compiler.automaton import build_automaton
    >>> a = build_automaton(Grammar({"root": Sequence((Bytes(b"ab"), Repeat(CharClass(((48, 57),)), 1, None)))}))
    >>> state_positions(a)[2]
    '"ab" • [0-9]'
"""

from __future__ import annotations

import weakref
from typing import List

import numpy as np

from .automaton import FLAG_FINAL

# labels kept before a position is cut ("…" marks the cut); items past ~60 chars read badly
_MAX_LABELS = 10
_MAX_CLASS_CHARS = 24
_memo: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def state_positions(automaton) -> List[str]:
    """Per state, its dotted position in its rule (see the module docstring); computed once per
    automaton and remembered while it lives."""
    got = _memo.get(automaton)
    if got is None:
        got = _describe(automaton)
        _memo[automaton] = got
    return got


def _describe(automaton) -> List[str]:
    n, nc = int(automaton.n_states), int(automaton.n_classes)
    names = list(automaton.rule_names)
    if n == 0:
        return []
    trans = np.asarray(automaton.trans).reshape(n, nc)
    class_bytes = [[] for _ in range(nc)]
    for b, c in enumerate(np.asarray(automaton.byte_class).tolist()):
        class_bytes[c].append(b)
    rule_of_start = {int(s): r for r, s in enumerate(np.asarray(automaton.rule_start).tolist())}
    offsets = np.asarray(automaton.call_offsets)
    c_src = np.repeat(np.arange(n), np.diff(offsets))
    c_rule = np.array([rule_of_start[int(t)] for t in np.asarray(automaton.call_target).tolist()],
                      dtype=np.int64)
    c_ret = np.asarray(automaton.call_ret).astype(np.int64)
    parent, label = _shortest_paths(trans, np.asarray(automaton.rule_start), c_src, c_rule, c_ret)
    flags = np.asarray(automaton.flags)
    out = []
    for s in range(n):
        path = _path_text(s, parent, label, class_bytes, names)
        reads = _reads_text(trans[s], class_bytes, [names[int(r)] for r in c_rule[offsets[s]:offsets[s + 1]]],
                            bool(flags[s] & FLAG_FINAL))
        out.append(f"{path} • {reads}" if path else f"• {reads}")
    return out


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


def _path_text(s, parent, label, class_bytes, names) -> str:
    labels = []
    while parent[s] >= 0 and len(labels) <= _MAX_LABELS:
        labels.append(int(label[s]))
        s = int(parent[s])
    cut = len(labels) > _MAX_LABELS
    labels = labels[:_MAX_LABELS][::-1]
    parts, run = [], bytearray()
    for lab in labels:
        if lab >= 0 and len(class_bytes[lab]) == 1:
            run.append(class_bytes[lab][0])  # single bytes merge into one literal
            continue
        if run:
            parts.append(_literal(bytes(run)))
            run = bytearray()
        parts.append(_char_class(class_bytes[lab]) if lab >= 0 else names[-1 - lab])
    if run:
        parts.append(_literal(bytes(run)))
    return ("… " if cut else "") + " ".join(parts)


def _reads_text(row, class_bytes, callees, final) -> str:
    got = sorted(b for c in np.nonzero(row >= 0)[0].tolist() for b in class_bytes[c])
    alts = []
    if got:
        alts.append(_literal(bytes(got)) if len(got) == 1 else _char_class(got))
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


def _char_class(sorted_bytes) -> str:
    have = set(sorted_bytes)
    if len(have) == 256:
        return "[\\x00-\\xff]"
    plain = "[" + _ranges(sorted(have)) + "]"
    negated = "[^" + _ranges(b for b in range(256) if b not in have) + "]"
    text = negated if len(negated) < len(plain) else plain
    if len(text) > _MAX_CLASS_CHARS:
        text = text[:_MAX_CLASS_CHARS - 2] + "…]"
    return text
