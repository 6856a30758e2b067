"""The mask cache refuses an automaton whose context tables are inconsistent (a deserialized
automaton is untrusted input): a clear ValueError, never an out-of-bounds read."""

import numpy as np
import pytest

from xmask.compiler.automaton import build_automaton
from xmask.compiler.mask_cache import new_mask_cache
from xmask.grammar.ebnf import parse_ebnf


def _automaton():
    g = parse_ebnf('root ::= "[" item ("," item)* "]"\nitem ::= [0-9]+ | root')
    a = build_automaton(g)
    assert len(a.rule_ctx_flat) > 0  # the item rule returns into root
    return a


def test_consistent_tables_are_taken():
    a = _automaton()
    assert new_mask_cache(a) is not None


@pytest.mark.parametrize("value", [-1, "n_states"])
def test_return_context_state_out_of_range(value):
    a = _automaton()
    flat = np.array(a.rule_ctx_flat, dtype=np.int32)
    flat[-1] = a.n_states if value == "n_states" else value
    a._rule_ctx_flat = flat
    with pytest.raises(ValueError, match="return context state is out of range"):
        new_mask_cache(a)


@pytest.mark.parametrize("value", [-1, "n_rules"])
def test_state_rule_out_of_range(value):
    a = _automaton()
    sr = np.array(a.state_rule, dtype=np.int32)
    sr[0] = len(a.rule_names) if value == "n_rules" else value
    a.state_rule = sr
    with pytest.raises(ValueError, match="state's rule is out of range"):
        new_mask_cache(a)


def test_offsets_not_ascending():
    a = _automaton()
    off = np.array(a.rule_ctx_offsets, dtype=np.int64)
    if len(off) < 3:
        pytest.skip("needs two rules")
    off[1] = off[-1] + 1
    a._rule_ctx_offsets = off
    with pytest.raises(ValueError, match="offsets are inconsistent"):
        new_mask_cache(a)
