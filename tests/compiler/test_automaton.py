"""Unit tests of the IR -> automaton step: inlining, tail calls, analysis, errors."""

import random

import numpy as np
import pytest

from xmask.compiler.automaton import (
    FLAG_EXIT_ONLY,
    FLAG_FINAL,
    AutomatonLimits,
    build_automaton,
)
from xmask.errors import GrammarError, GrammarLimitError
from xmask import Grammar


def ebnf(text):
    return Grammar.from_ebnf(text)


def test_small_nonrecursive_rules_are_inlined_recursive_rules_kept():
    a = build_automaton(ebnf('root ::= item ("," item)*\nitem ::= [a-z]+ | list\nlist ::= "[" root "]"'))
    # root -> item -> list -> root is a cycle: all three stay called rules
    assert set(a.rule_names) == {"root", "item", "list"}
    b = build_automaton(ebnf('root ::= ws "x" ws\nws ::= [ \\t]*'))
    assert b.rule_names == ["root"]  # ws inlined


def test_tail_calls_return_to_the_caller():
    a = build_automaton(ebnf('root ::= "a" rest\nrest ::= "b" rest | "c" | "d" root'))
    # every call whose return state is exit-only is encoded as a tail call (-1)
    for k, ret in enumerate(a.call_ret.tolist()):
        assert ret == -1 or not a.flags[ret] & FLAG_EXIT_ONLY
    assert -1 in a.call_ret.tolist()


def test_left_recursion_is_rejected_with_the_cycle_named():
    with pytest.raises(GrammarError, match=r"left recursion.*expr -> expr"):
        build_automaton(ebnf('root ::= expr\nexpr ::= expr "+" term | term\nterm ::= [0-9]+ | "(" expr ")"'))
    with pytest.raises(GrammarError, match="left recursion"):
        # hidden behind a nullable prefix
        build_automaton(ebnf('root ::= opt root "a" | "b"\nopt ::= "x"?'))


def test_nullable_loops_are_not_left_recursion():
    a = build_automaton(ebnf('root ::= item* "."\nitem ::= "(" root ")" | ""'))
    assert a.n_states > 0


def test_follow_sets_of_a_called_rule():
    a = build_automaton(ebnf('root ::= "[" (v ("," v)*)? "]"\nv ::= "x" | "[" root "]" v'))
    follow = {chr(b) for b in range(256) if a.rule_follow[a.rule_names.index("v"), b]}
    assert {",", "]"} <= follow and "x" not in follow


def test_repeat_limit_raises_clearly():
    with pytest.raises(GrammarLimitError, match="repeat count"):
        build_automaton(ebnf('root ::= "a"{0,20000}'), AutomatonLimits(max_repeat=10_000))


def test_final_flags_and_determinism():
    a = build_automaton(ebnf('root ::= "ab" | "ac" | "a"'))
    n, nc = a.n_states, a.n_classes
    trans = a.trans.reshape(n, nc)
    # deterministic: one start state with one 'a' edge; after 'a' both final and has edges
    s1 = trans[a.root_start, a.byte_class[ord("a")]]
    assert s1 >= 0 and a.flags[s1] & FLAG_FINAL
    assert trans[s1, a.byte_class[ord("b")]] >= 0 and trans[s1, a.byte_class[ord("c")]] >= 0


def test_refine_partition_kernel_matches_numpy_reference():
    """The Cython refinement round partitions states exactly like the numpy twin (block ids
    may differ; the partitions, compared in first-appearance numbering, may not)."""
    import numpy as np

    from xmask.compiler.automaton import refine_partition, refine_partition_reference

    def canon(b):
        seen = {}
        return [seen.setdefault(x, len(seen)) for x in b.tolist()]

    rng = np.random.default_rng(7)
    splits = 0
    for _ in range(200):
        n, w = int(rng.integers(1, 300)), int(rng.integers(1, 8))
        table = rng.integers(-1, n, size=(n, w))
        block = rng.integers(0, 3, size=n).astype(np.int64)
        for _ in range(6):
            fast, ref = refine_partition(block, table), refine_partition_reference(block, table)
            assert canon(fast) == canon(ref)
            splits += int(fast.max()) > int(block.max())
            block = fast
    assert splits > 100  # the rounds really refined something


def _return_contexts_by_search(sites):
    """Naive twin of ``_rule_graph.return_contexts``: a separate search up the tail callers per
    rule."""
    out = []
    for r in range(len(sites)):
        rets, seen, stack = set(), {r}, [r]
        while stack:
            x = stack.pop()
            for p, ret in sites[x]:
                if ret >= 0:
                    rets.add(ret)
                elif p not in seen:
                    seen.add(p)
                    stack.append(p)
        out.append(rets)
    return out


@pytest.mark.parametrize("seed", range(40))
def test_return_contexts_match_search(seed):
    """SCC-based return contexts (``_rule_graph.return_contexts``) equal a per-rule search, on
    random call-site graphs with tail-call cycles; each rule's follow bytes OR those of the
    rules owning its return states."""
    from xmask.compiler._rule_graph import return_contexts

    rng = random.Random(seed)
    n = rng.randint(1, 14)
    sites = [
        [(rng.randrange(n), rng.choice([-1, -1, rng.randrange(60)])) for _ in range(rng.randint(0, 4))]
        for _ in range(n)
    ]
    calls = [(x, p, ret) for x, s in enumerate(sites) for p, ret in s]
    callee, caller, ret = (np.asarray([c[i] for c in calls], dtype=np.int32) for i in range(3))
    state_rule = np.asarray([rng.randrange(n) for _ in range(60)], dtype=np.int32)
    follow = np.asarray([[rng.getrandbits(64) for _ in range(4)] for _ in range(n)],
                        dtype=np.uint64)
    off, flat, ctx_follow = return_contexts(callee, caller, ret, state_rule, follow, 60)
    got = [flat[off[r]:off[r + 1]].tolist() for r in range(n)]
    want = _return_contexts_by_search(sites)
    assert got == [sorted(x) for x in want]
    for r in range(n):
        expect = np.zeros(4, dtype=np.uint64)
        for s in want[r]:
            expect |= follow[state_rule[s]]
        assert ctx_follow[r].tolist() == expect.tolist()
