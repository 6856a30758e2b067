"""The process-wide memos of the DFA toolkit never change a result and stay bounded.

``EmissionMemo`` replays a recorded emission (``dfa_to_expr``, ``word_complement_expr``) on a
new rule sink only when every rule gets the name it had; the automaton memos
(``dfa_minimize``, ``dfa_product``, the key splits and pattern products) are keyed by content.
Checked here: the same expression and rules (names and order included) as an emission with
the memos off, whatever the sink already holds; errors raised again; the bounds.
"""

from __future__ import annotations

import random

import pytest

from xmask.errors import GrammarLimitError
from xmask.grammar import code_point_dfa, dfa_expr
from xmask.grammar.code_point_dfa import Dfa, dfa_literals, dfa_minimize, dfa_product
from xmask.grammar.emission_memo import EmissionMemo
from xmask.grammar.ir import Bytes, RuleRef
from xmask.grammar.json_schema import keys
from xmask.grammar.rule_sink import RuleSink

_LIT = keys._LIT
MEMOS = (code_point_dfa._MINIMIZED, code_point_dfa._PRODUCTS, keys._KEY_SPLITS, keys._PRODUCTS,
         dfa_expr._TO_EXPR_MEMO, dfa_expr._COMPLEMENT_MEMO)


def _clear():
    for memo in MEMOS:
        memo.clear()


def _cyclic_dfa() -> Dfa:
    # (ab)* c: the a/b cycle needs rules
    return Dfa([((97, 97, 1), (99, 99, 2)), ((98, 98, 0),), ()], [False, False, True])


def _emit(fn, taken=()):
    """(expression, rules in order) of ``fn(sink)`` on a sink already holding ``taken``."""
    sink = RuleSink({name: Bytes(b"x") for name in taken})
    out = fn(sink)
    return out, list(sink.rules.items())


EMISSIONS = {
    "cyclic": lambda s: dfa_expr.dfa_to_expr(_cyclic_dfa(), s, "cyc"),
    "cyclic-labelled": lambda s: dfa_expr.dfa_to_expr(_cyclic_dfa(), s, "cyc", label=lambda rs: RuleRef("L"),
                                                      label_key=("L",)),
    # (over ASCII the complement is a WordComplement, built by nobody: no emission to replay)
    "complement": lambda s: dfa_expr.word_complement_expr(["axyzwvuts", "bcxyzwvuts", "zz\u00e9"],
                                                          _LIT + ((0xE9, 0xE9),), s, "k"),
}


@pytest.mark.parametrize("name", sorted(EMISSIONS))
@pytest.mark.parametrize("taken", [(), ("cyc_s1", "k_s2")], ids=["free", "names-taken"])
def test_replayed_emission_equals_a_fresh_one(name, taken, monkeypatch):
    fn = EMISSIONS[name]
    _clear()
    first = _emit(fn, taken)
    assert len(dfa_expr._TO_EXPR_MEMO) + len(dfa_expr._COMPLEMENT_MEMO) == 1  # recorded
    again = _emit(fn, taken)  # replayed (or emitted again where a name is taken)
    other = _emit(fn, ())  # a record from another sink
    monkeypatch.setattr(code_point_dfa, "MEMO_MAX_STATES", -1)
    assert first == _emit(fn, taken) == again
    assert other == _emit(fn, ())


def test_replay_raises_the_rule_limit_again():
    _clear()
    assert dfa_expr.dfa_to_expr(_cyclic_dfa(), RuleSink(), "cyc") is not None
    for _ in range(2):
        with pytest.raises(GrammarLimitError):
            dfa_expr.dfa_to_expr(_cyclic_dfa(), RuleSink(max_rules=1), "cyc")
    with pytest.raises(ValueError, match="needs rules"):
        dfa_expr.dfa_to_expr(_cyclic_dfa(), None, "cyc")


def test_emission_memo_is_bounded_and_keeps_no_errors():
    memo = EmissionMemo(4)
    for i in range(10):
        memo.run(i, RuleSink(), lambda s: Bytes(b"x"))
        assert len(memo) <= 4
    calls = []

    def failing(sink):
        calls.append(1)
        raise GrammarLimitError("too big")

    for _ in range(2):
        with pytest.raises(GrammarLimitError):
            memo.run("bad", RuleSink(), failing)
    assert len(calls) == 2


@pytest.mark.parametrize("seed", range(3))
def test_automaton_memos_equal_the_uncached_functions(seed, monkeypatch):
    rng = random.Random(seed)
    words = [["".join(rng.choice("abc") for _ in range(rng.randint(0, 4))) for _ in range(rng.randint(0, 6))]
             for _ in range(6)]
    cached = [(dfa_minimize(Dfa(list(dfa_literals(w).edges) + [()], list(dfa_literals(w).accept) + [False])),
               dfa_product(dfa_literals(w), dfa_literals(v), mode))
              for w, v in zip(words, words[1:]) for mode in ("and", "or", "diff")]
    monkeypatch.setattr(code_point_dfa, "MEMO_MAX_STATES", -1)
    for (m, p), (w, v) in zip(cached[::3], zip(words, words[1:])):
        plain = dfa_minimize(Dfa(list(dfa_literals(w).edges) + [()], list(dfa_literals(w).accept) + [False]))
        assert (m.edges, m.accept) == (plain.edges, plain.accept)
        q = dfa_product(dfa_literals(w), dfa_literals(v), "and")
        assert (p.edges, p.accept) == (q.edges, q.accept)
    assert all(len(memo) <= code_point_dfa._MEMO_SIZE for memo in MEMOS[:4])


def test_content_key_is_by_value():
    a = Dfa([((97, 97, 1),), ()], [False, True])
    b = Dfa([[(97, 97, 1)], []], [0, 1])  # lists and ints: the same automaton
    assert a.content_key() == b.content_key() and hash(a.content_key()) == hash(b.content_key())
    assert a.content_key() != Dfa([((97, 97, 1),), ()], [True, True]).content_key()


def test_module_doctest():
    import doctest

    from xmask.grammar import emission_memo

    assert doctest.testmod(emission_memo).failed == 0
