"""IR expressions <-> code point automata (xmask.grammar.dfa_expr), and the rule names a
lowering asks a RuleSink for (xmask.grammar.rule_sink)."""

import itertools

import pytest

from xmask.errors import GrammarLimitError
from xmask.grammar.code_point_dfa import dfa_from_step, dfa_with_length
from xmask.grammar.dfa_expr import dfa_from_expr, dfa_to_expr
from xmask.grammar.ir import Bytes, CharClass, Choice, Grammar, Repeat, RuleRef, Seq
from xmask.grammar.recognizer import Recognizer
from xmask.grammar.rule_sink import RuleSink


def _grammar(expr, sink):
    rules = {"root": expr}
    rules.update(sink.rules)
    return Grammar(rules)


def test_from_expr_accepts_the_language_of_the_expression():
    e = Choice((Seq((Bytes(b"a"), Repeat(CharClass(((0x30, 0x39),)), 0, 2))), Bytes("\u00e9".encode())))
    d = dfa_from_expr(e)
    good = {"a", "a1", "a12", "\u00e9"}
    for w in ["", "a", "a1", "a12", "a123", "\u00e9", "b", "1"]:
        assert d.matches(w) == (w in good), w


def test_from_expr_refuses_what_has_no_code_point_meaning():
    with pytest.raises(ValueError):
        dfa_from_expr(RuleRef("x"))
    with pytest.raises(ValueError):
        dfa_from_expr(CharClass(((0, 255),), byte_level=True))
    with pytest.raises(GrammarLimitError):
        dfa_from_expr(Repeat(CharClass(((97, 99),)), 0, 40), max_states=5)


def test_to_expr_emits_the_same_language():
    d = dfa_with_length(dfa_from_expr(Repeat(CharClass(((48, 57),)), 1, None)), 2, 4)
    sink = RuleSink()
    r = Recognizer(_grammar(dfa_to_expr(d, sink, "x"), sink))
    assert [r.accepts(b"7" * n) for n in range(6)] == [False, False, True, True, True, False]


def test_cycles_become_rules_of_the_sink():
    # remainders mod 3 of binary numbers: cycles longer than a self-loop
    d = dfa_from_step(0, lambda k, cp: (2 * k + cp - 48) % 3, lambda k: k == 0, [(48, 48), (49, 49)])
    with pytest.raises(ValueError, match="RuleSink"):
        dfa_to_expr(d, None)
    sink = RuleSink()
    e = dfa_to_expr(d, sink, "mod3")
    assert sink.rules and all(name.startswith("mod3_s") for name in sink.rules)
    r = Recognizer(_grammar(e, sink))
    for bits in itertools.chain.from_iterable(itertools.product("01", repeat=k) for k in range(1, 8)):
        text = "".join(bits)
        assert r.accepts(text.encode()) == (int(text, 2) % 3 == 0), text


def test_to_expr_of_the_empty_language_is_none():
    assert dfa_to_expr(dfa_from_step(0, lambda k, cp: None, lambda k: False, [(97, 97)]), None) is None


def test_rule_sink_names_are_fresh_and_valid():
    sink = RuleSink({"a": Bytes(b"x")}, prefix="p", max_rules=5)
    assert [sink.fresh("a"), sink.fresh("a"), sink.fresh("?!")] == ["a_2", "a_3", "p"]
    assert sink.fresh("9 lives") == "r_9_lives"
    with pytest.raises(GrammarLimitError):
        sink.fresh("more")


def _explore_subsets(eps, sym, start, end, max_states):
    """The subset construction written plainly over frozensets (what the C kernel replaces):
    states in discovery order, intervals in code point order, edges fused."""
    from xmask.grammar.code_point_dfa import dfa_explore, split_points

    def closure(states):
        seen, todo = set(states), list(states)
        while todo:
            for t in eps[todo.pop()]:
                if t not in seen:
                    seen.add(t)
                    todo.append(t)
        return frozenset(seen)

    def moves(cur):
        edges = [(lo, hi, t) for q in cur for rs, t in sym[q] for lo, hi in rs]
        for lo, hi in split_points([[(a, b)] for a, b, _ in edges]):
            ts = [t for a, b, t in edges if a <= lo and hi <= b]
            if ts:
                yield lo, hi, closure(ts)

    d = dfa_explore(closure([start]), moves, lambda k: end in k, max_states, "regular expression DFA")
    return d.edges, d.accept


@pytest.mark.parametrize("source", [
    "^[0-9a-zA-Z_-]{1,40}$", "Normal|Fighting|Flying|Poison|Ground", r"^\S+@\S+\.\S+$",
    "a*b?c{2,5}", "[^x]*", "^$", "(a|b)*abb", "\u00e9+\u1234?\U0001F600*", "fmt:uri", "fmt:email",
    "fmt:date-time", "fmt:ipv6"])
def test_subset_kernel_builds_the_automaton_of_the_plain_construction(source):
    from xmask.grammar._subset import subset_dfa
    from xmask.grammar.dfa_expr import _Nfa
    from xmask.grammar.regex import regex_to_expr
    from xmask.grammar.string_format import format_expr

    expr = format_expr(source[4:]) if source.startswith("fmt:") else regex_to_expr(source, search=True)
    nfa = _Nfa()
    start = nfa.new()
    end = nfa.build(expr, start)
    edges, accept = _explore_subsets(nfa.eps, nfa.sym, start, end, 20_000)
    assert subset_dfa(nfa.eps, nfa.sym, start, end, 20_000, lambda: None) == (edges, accept)
    # the state limit: refused exactly when there are more states
    assert subset_dfa(nfa.eps, nfa.sym, start, end, len(accept), lambda: None) is not None
    if len(accept) > 1:
        assert subset_dfa(nfa.eps, nfa.sym, start, end, len(accept) - 1, lambda: None) is None
        with pytest.raises(GrammarLimitError, match=f"exceeds {len(accept) - 1} states"):
            dfa_from_expr(expr, max_states=len(accept) - 1)
