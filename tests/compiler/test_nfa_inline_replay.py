"""The NFA builder replays an inlined rule's first expansion instead of walking its IR again
(``_nfa_build.NFA.inline``): the arrays must be exactly those of the walk, and a limit must
fail with the walk's error, wherever the expansion lands.

The walk is obtained by writing the inlined body in place of each reference (the builder then
meets no reference to replay)."""

import numpy as np

from xmask.compiler.automaton import AutomatonLimits
from xmask.compiler._nfa_build import NFA
from xmask.compiler._rule_scan import rule_size
from xmask.compiler.dfa import dfa_of_fragment
from xmask.errors import GrammarLimitError
from xmask.grammar.ir import Bytes, CharClass, Choice, Repeat, RuleRef, Seq

FIELDS = ("eps_off", "eps_dst", "b_off", "b_lo", "b_hi", "b_dst", "c_off", "c_rule", "c_dst")

# an inlined rule with a repeat, a class, a choice and a call of a called rule
BODY = Seq((Bytes(b'"'), Repeat(Choice((CharClass(((0x61, 0x7A),)), Seq((Bytes(b"\\"),
       CharClass(((0x30, 0x39),)))))), 0, 3), RuleRef("called"), Bytes(b'"')))


def root_with(x):
    """A root that meets ``x`` at a sequence's end, inside a choice, a star and a bounded
    repeat (each asks the expansion for a given end or not)."""
    return Seq((x, Bytes(b":"), Choice((x, Seq((x, Bytes(b"!"))))),
                Repeat(Seq((x, Bytes(b","))), 0, None), Repeat(x, 1, 3), x))


def build(root, limits=AutomatonLimits()):
    """(arrays, [(start, end) per rule]) of an NFA with rule "x" inlined when referenced."""
    # the inliner's sizes: the body's expanded size (a repeat's check counts it per reference)
    sizes = {"x": rule_size(BODY, {}, 10**6)}
    nfa = NFA(limits, dfa_of_fragment(False), inline=({"x": BODY}, sizes))
    index = {"root": 0, "called": 1}
    ends = [nfa.add_rule("root", root, index), nfa.add_rule("called", Bytes(b"c"), index)]
    return nfa.arrays(), ends


def test_replayed_expansions_equal_the_walk():
    got, got_ends = build(root_with(RuleRef("x")))
    want, want_ends = build(root_with(BODY))
    assert got_ends == want_ends
    for f in FIELDS:
        assert np.array_equal(getattr(got, f), getattr(want, f)), f


def test_limit_errors_equal_the_walk():
    """With the NFA state cap anywhere along the root (122 states), replay and walk fail
    alike, or both succeed."""
    for cap in range(1, 130):
        limits = AutomatonLimits(max_nfa_states=cap)
        outcomes = []
        for x in (RuleRef("x"), BODY):
            try:
                arrays, _ = build(root_with(x), limits)
                outcomes.append(("ok", int(arrays.n)))
            except GrammarLimitError as e:
                outcomes.append(("error", str(e)))
        assert outcomes[0] == outcomes[1], cap
