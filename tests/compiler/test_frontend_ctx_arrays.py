"""The automaton's flat return-context arrays (``rule_ctx_offsets`` int64, ``rule_ctx_flat``
int32, the layout the compiled codec writes) hold exactly the per-rule lists
``rule_ctx_states``, whichever form an automaton was built or decoded with."""

import numpy as np

from xmask.compiler.automaton import Automaton, build_automaton
from xmask import Grammar


def _check(a):
    off, flat = a.rule_ctx_offsets, a.rule_ctx_flat
    assert off.dtype == np.int64 and flat.dtype == np.int32
    assert len(off) == len(a.rule_names) + 1 and off[0] == 0 and off[-1] == len(flat)
    assert [flat[off[r]:off[r + 1]].tolist() for r in range(len(a.rule_names))] == \
        a.rule_ctx_states


def test_built_automaton_flat_contexts_equal_lists():
    a = build_automaton(Grammar.builtin_json_grammar())
    _check(a)
    assert sum(len(c) for c in a.rule_ctx_states) > 0
    assert all(c == sorted(c) for c in a.rule_ctx_states)


def test_lists_given_flat_arrays_derived():
    a = Automaton(rule_names=["root", "x"], rule_ctx_states=[[], [3, 5]])
    _check(a)
    assert a.rule_ctx_flat.tolist() == [3, 5]


def test_flat_arrays_given_lists_derived():
    a = Automaton(rule_names=["root", "x"], _rule_ctx_offsets=np.array([0, 0, 2], np.int64),
                  _rule_ctx_flat=np.array([3, 5], np.int32))
    assert a.rule_ctx_states == [[], [3, 5]]
