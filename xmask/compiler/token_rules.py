"""Whole-token grammar elements (``TokenSet``: XGrammar's ``Token(...)`` / ``ExcludeToken(...)``)
lowered for the byte-level automaton.

Each distinct ``TokenSet`` of a grammar becomes one small rule that is always *called* (never
inlined): ``build_automaton`` turns its start state into a state with no byte edge and a
*token edge* to its final state (``FLAG_TOKEN``), so the runtime sees it as a stack top that
accepts exactly one whole token from the set.  Until then the rule's body is a one-byte
placeholder (``PLACEHOLDER``), so the NFA, determinization and pruning passes need no special
case; the edge is removed before any analysis reads byte sets.

Which ids a set holds, exactly as XGrammar 0.2.8 (measured on Llama-3 and Qwen2.5):

* an id must lie in ``[0, vocab_size)`` (else ``InvalidTokenError`` naming the id and rule);
* stop tokens are never matched by a token element (``Token(eos)`` allows nothing; they keep
  their own rule: allowed only where the grammar can end), nor are ids that decode to no bytes
  (the padding ids past the tokenizer, unused ids);
* every other id may be named, special/added tokens included (``<|python_tag|>``,
  ``<tool_call>``); ``ExcludeToken(...)`` is every such id except those listed.

A set left empty by this (``Token(<eos>)``) matches nothing: the element is a dead end.

Example::

    >>> from xmask import TokenizerInfo
    >>> from xmask.grammar.ir import Grammar, Seq, Bytes, TokenSet
    >>> info = TokenizerInfo(["a", "<x>", "</s>", ""], stop_token_ids=[2])
    >>> g = Grammar({"root": Seq((Bytes(b"a"), TokenSet((1, 2))))})
    >>> lowered, sets = lower_token_sets(g, info)
    >>> print(lowered)
    root ::= "a" token
    token ::= "\\x00"
    >>> [(name, ids.tolist()) for name, ids in sets]
    [('token', [1])]
"""

from __future__ import annotations

import threading
import weakref
from typing import Dict, List, Tuple

import numpy as np

from ..errors import InvalidTokenError
from ..grammar.combine import RuleNamer, map_leaves
from ..grammar.ir import Bytes, CharClass, Expr, Grammar, RuleRef, TokenSet
from .special_literals import StopLiteralToken

__all__ = ["PLACEHOLDER", "lower_token_sets", "token_universe", "token_set_bits"]

# The body a token rule has until build_automaton replaces its only byte edge by the token edge.
PLACEHOLDER = Bytes(b"\x00")
_NOTHING = CharClass(())  # matches no character: a token element whose set is empty


_UNIVERSE_LOCK = threading.Lock()
_UNIVERSES: "weakref.WeakKeyDictionary[object, np.ndarray]" = weakref.WeakKeyDictionary()


def token_universe(tokenizer_info) -> np.ndarray:
    """bool[vocab_size], read-only: the ids a token element may match (not a stop token, not
    empty).  Computed once per TokenizerInfo (~3 ms on 128k ids), then shared."""
    with _UNIVERSE_LOCK:
        got = _UNIVERSES.get(tokenizer_info)
    if got is not None:
        return got
    vocab = tokenizer_info.decoded_vocab
    ok = np.fromiter(map(len, vocab), dtype=np.int64, count=len(vocab)) > 0
    ok[np.asarray(tokenizer_info.stop_token_ids, dtype=np.int64)] = False
    ok.setflags(write=False)
    with _UNIVERSE_LOCK:
        _UNIVERSES[tokenizer_info] = ok
    return ok


def _resolve(ts: TokenSet, universe: np.ndarray, rule: str) -> np.ndarray:
    n = len(universe)
    for i in ts.ids:
        if i >= n:
            raise InvalidTokenError(
                f"token id {i} in rule '{rule}' is outside the vocabulary [0, {n})")
    chosen = np.zeros(n, dtype=bool)  # a fresh array: the universe is shared and read-only
    chosen[np.asarray(ts.ids, dtype=np.int64)] = True
    if ts.negated:
        chosen = ~chosen
    return np.nonzero(chosen & universe)[0].astype(np.int32)


def lower_token_sets(grammar: Grammar, tokenizer_info) -> Tuple[Grammar, List[Tuple[str, np.ndarray]]]:
    """``grammar`` with every ``TokenSet`` replaced by a reference to a token rule, and the
    token rules as ``(name, allowed ids)`` in rule order (the grammar itself if it has none).
    Raises ``InvalidTokenError`` for an id outside the vocabulary.  The compiler calls it only
    when ``special_literals.with_special_literals`` saw a TokenSet (its one walk answers that)."""
    rules = grammar.rules
    universe = token_universe(tokenizer_info)
    stop_universe = np.ones(len(universe), dtype=bool)
    namer = RuleNamer(rules)
    by_set: Dict[TokenSet, Expr] = {}
    token_rules: List[Tuple[str, np.ndarray]] = []

    def lower(ts: TokenSet, rule: str) -> Expr:
        got = by_set.get(ts)
        if got is None:
            # a stop token spelling a literal keeps its id (special_literals.StopLiteralToken)
            ids = _resolve(ts, stop_universe if type(ts) is StopLiteralToken else universe, rule)
            if len(ids) == 0:
                got = _NOTHING
            else:
                name = namer.fresh("token")
                token_rules.append((name, ids))
                got = RuleRef(name)
            by_set[ts] = got
        return got

    out: Dict[str, Expr] = {}
    for name, expr in rules.items():
        out[name] = map_leaves(expr, lambda e, _n=name: lower(e, _n) if _is_token_set(e) else e)
    if not by_set:
        return grammar, []
    for name, _ in token_rules:
        out[name] = PLACEHOLDER
    return Grammar(out, grammar.root, budgets=grammar.budgets), token_rules


def _is_token_set(e) -> bool:
    return type(e) is TokenSet or type(e) is StopLiteralToken


def token_set_bits(token_rules: List[Tuple[str, np.ndarray]], vocab_size: int) -> np.ndarray:
    """uint32 ``[len(token_rules), ceil(vocab_size / 32)]``: each rule's ids as a bitset row
    (bit ``i % 32`` of word ``i // 32``, the bitmask layout)."""
    n_words = (vocab_size + 31) // 32
    if not token_rules:  # most grammars (what the packing below returns for no rows)
        return np.zeros((0, n_words), dtype=np.uint32)
    bits = np.zeros((len(token_rules), n_words * 32), dtype=np.uint8)
    for k, (_, ids) in enumerate(token_rules):
        bits[k, ids] = 1
    packed = np.packbits(bits, axis=1, bitorder="little")
    return np.ascontiguousarray(packed).view("<u4").astype(np.uint32).reshape(len(token_rules), n_words)
