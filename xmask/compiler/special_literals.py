"""Grammar literals that spell a special token's text may also be produced by that token.

xmask never lets grammar *text* (character classes, ``any_text``, free text) match a special
or added token, so ``<|begin_of_text|>`` can never appear inside free text.  But per-model
tool-call formats write their markers as literal strings (``"<|start|>assistant<|channel|>"``
for gpt-oss, ``"<|tool_call_begin|>"`` for Kimi) while the model emits them as one special
token.  At compile time, where the tokenizer is known, every *literal* (a ``Bytes`` node: an
EBNF / Lark string, a JSON-schema key or const, a structural tag's begin / end, a regex's run
of plain characters) is rewritten so that each occurrence of a special token's exact decoded
text may also be that one whole token::

    "<|start|>assistant<|channel|>"
    -> ("<|start|>" | Token(200006)) "assistant" ("<|channel|>" | Token(200005))

The text spelling stays allowed.  Which tokens take part: the tokenizer's special ids that
decode to some bytes (empty / padding ids spell nothing).  A stop token keeps its own rule
first: where the grammar may end it is accepted as the end of the output (the matcher
terminates); only where the grammar cannot end may it be the literal that spells its text
(a :class:`StopLiteralToken`; the matcher goes on).  So gpt-oss's ``<|call|>`` / ``<|return|>``
close a Harmony tool call / final message although they are stop tokens.  A special text split across two
literals or rules (``"<|" "start|>"`` in different rules) is not recognised: only one literal's
own bytes are searched.  Overlapping occurrences are handled exactly (every segmentation).

The special-text index is built once per TokenizerInfo; a literal with no byte equal to the
first byte of any special text is left untouched without a search (JSON-schema grammars pay a
walk over their nodes and nothing more).

Example::

    >>> from xmask import TokenizerInfo
    >>> from xmask.grammar.ebnf import parse_ebnf
    >>> info = TokenizerInfo(["a", "<x>", "</s>"], stop_token_ids=[2], special_token_ids=[1])
    >>> print(allow_special_literals(parse_ebnf('root ::= "a<x></s>"'), info))
    root ::= "a" ("<x>" | Token(1)) ("</s>" | Token(2))

(``Token(2)`` here is the stop token's :class:`StopLiteralToken`, printed as a token.)
"""

from __future__ import annotations

import bisect
import re
import threading
import weakref
from typing import Dict, List, Optional, Tuple

from ..grammar.combine import map_leaves
from ..grammar.ir import EPSILON, Bytes, Choice, Expr, Grammar, Seq, TokenSet, iter_nodes
from ._rule_scan import scan_rules

__all__ = ["SpecialTexts", "StopLiteralToken", "special_texts", "allow_special_literals",
           "with_special_literals"]


class StopLiteralToken(TokenSet):
    """A stop token standing for the literal that spells its text (only this rewrite makes
    one).  Unlike a ``Token(...)`` element it keeps the stop id (``token_rules``); the matcher
    takes it only where the grammar cannot end (where it can, the stop token ends the output,
    as always)."""


class SpecialTexts:
    """The special tokens a literal may spell: decoded text -> ids, for one tokenizer.

    Example::

        >>> st = SpecialTexts({b"<x>": (7,)})
        >>> st.occurrences(b"a<x>b<x>")
        [(1, 4, (7,)), (5, 8, (7,))]
    """

    def __init__(self, by_text: Dict[bytes, Tuple[int, ...]], stops=frozenset()):
        self.by_text = by_text
        self.stops = frozenset(stops)  # the stop ids among them
        self.lengths = tuple(sorted({len(t) for t in by_text}))
        firsts = sorted({t[0] for t in by_text})
        # the same test as 256 flags, for the compiled scan (``_rule_scan.scan_rules``)
        self.first_table = bytes(1 if b in firsts else 0 for b in range(256)) if firsts else None
        # one regex character class over the first bytes: the cheap "cannot contain" test
        self.first = re.compile(b"[" + b"".join(re.escape(bytes([b])) for b in firsts) + b"]") \
            if firsts else None

    def occurrences(self, data: bytes) -> List[Tuple[int, int, Tuple[int, ...]]]:
        """Every ``(start, end, ids)`` where ``data[start:end]`` is a special text (overlapping
        ones included), sorted by start then end."""
        if self.first is None or len(data) < self.lengths[0]:
            return []
        out = []
        by_text, lengths = self.by_text, self.lengths
        size = len(data)
        for m in self.first.finditer(data):
            p = m.start()
            for n in lengths:
                if p + n > size:  # a slice past the end would repeat a shorter match
                    break
                ids = by_text.get(data[p:p + n])
                if ids is not None:
                    out.append((p, p + n, ids))
        return out


_LOCK = threading.Lock()
_CACHE: "weakref.WeakKeyDictionary[object, SpecialTexts]" = weakref.WeakKeyDictionary()


def special_texts(tokenizer_info) -> SpecialTexts:
    """The :class:`SpecialTexts` of ``tokenizer_info`` (special, non-empty ids; stop tokens
    among them are marked), built once per TokenizerInfo and shared."""
    with _LOCK:
        got = _CACHE.get(tokenizer_info)
    if got is not None:
        return got
    vocab = tokenizer_info.decoded_vocab
    stops = set(tokenizer_info.stop_token_ids)
    by_text: Dict[bytes, List[int]] = {}
    for i in tokenizer_info.special_token_ids:
        if i < len(vocab) and vocab[i]:
            by_text.setdefault(vocab[i], []).append(i)
    got = SpecialTexts({t: tuple(ids) for t, ids in by_text.items()},
                       stops & set(tokenizer_info.special_token_ids))
    with _LOCK:
        _CACHE[tokenizer_info] = got
    return got


def _tokens(ids: Tuple[int, ...], stops) -> Expr:
    # the whole tokens of one occurrence: ordinary special ids, and stop ids kept apart
    plain = [i for i in ids if i not in stops]
    stop = [i for i in ids if i in stops]
    parts = ([TokenSet(plain)] if plain else []) + ([StopLiteralToken(stop)] if stop else [])
    return parts[0] if len(parts) == 1 else Choice(tuple(parts))


def _spell(data: bytes, occ: List[Tuple[int, int, Tuple[int, ...]]], stops=frozenset()) -> Expr:
    """``data`` as an expression where each occurrence may also be its whole token."""
    starts = sorted({s for s, _, _ in occ})
    at: Dict[int, List[Tuple[int, Tuple[int, ...]]]] = {}
    for s, e, ids in occ:
        at.setdefault(s, []).append((e, ids))
    memo: Dict[int, Expr] = {}

    def from_(i: int) -> Expr:
        # data[i:], flat while occurrences do not overlap; a branch per segmentation otherwise
        got = memo.get(i)
        if got is not None:
            return got
        items: List[Expr] = []
        pos = i
        while True:
            k = bisect.bisect_left(starts, pos)
            if k == len(starts):
                if pos < len(data):
                    items.append(Bytes(data[pos:]))
                break
            j = starts[k]
            if j > pos:
                items.append(Bytes(data[pos:j]))
            here = at[j]
            end = here[0][0]
            if len(here) == 1 and (k + 1 == len(starts) or starts[k + 1] >= end):
                items.append(Choice((Bytes(data[j:end]), _tokens(here[0][1], stops))))
                pos = end
                continue
            alts = [Seq((_tokens(ids, stops), from_(e))) for e, ids in here]
            alts.append(Seq((Bytes(data[j:j + 1]), from_(j + 1))))
            items.append(Choice(tuple(alts)))
            break
        out = items[0] if len(items) == 1 else Seq(tuple(items)) if items else EPSILON
        memo[i] = out
        return out

    return from_(0)


def with_special_literals(grammar: Grammar, tokenizer_info,
                          refs_out: Optional[dict] = None) -> Tuple[Grammar, bool]:
    """``(allow_special_literals(grammar, tokenizer_info), whether the result may hold a
    TokenSet)``, with one compiled walk over the grammar for both questions (the compiler
    skips the TokenSet lowering when the answer is no: most grammars have neither).  When the
    grammar comes back unchanged and holds no TokenSet, ``refs_out`` (a dict) receives every
    rule's distinct references from the same walk, which the inliner needs next."""
    st = special_texts(tokenizer_info)
    refs, token, literal = scan_rules(grammar.rules, st.first_table)
    if not literal:
        if refs_out is not None and not token:
            refs_out.update(refs)
        return grammar, token
    out = allow_special_literals(grammar, tokenizer_info)
    return out, token or out is not grammar


def allow_special_literals(grammar: Grammar, tokenizer_info) -> Grammar:
    """``grammar`` with every literal occurrence of a special token's text made
    ``(text | Token(id))`` (a :class:`StopLiteralToken` for a stop token); the grammar itself
    when no literal spells one."""
    st = special_texts(tokenizer_info)
    if st.first is None:
        return grammar
    spelled: Dict[bytes, Optional[Expr]] = {}

    def rewritten(data: bytes) -> Optional[Expr]:
        if data in spelled:
            return spelled[data]
        occ = st.occurrences(data)
        got = spelled[data] = _spell(data, occ, st.stops) if occ else None
        return got

    def leaf(e: Expr) -> Expr:
        if type(e) is Bytes:
            got = rewritten(e.data)
            if got is not None:
                return got
        return e

    out: Dict[str, Expr] = {}
    changed = False
    for name, expr in grammar.rules.items():
        touched = any(type(n) is Bytes and rewritten(n.data) is not None for n in iter_nodes(expr))
        out[name] = map_leaves(expr, leaf) if touched else expr
        changed = changed or touched
    return Grammar(out, grammar.root, budgets=grammar.budgets) if changed else grammar
