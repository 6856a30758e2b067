"""The Cython front end (determinization + minimization in ``_determinize``) builds the same
automata as its pure-Python twin (``build_automaton(..., reference=True)``).

Both minimize, so each rule's DFA is the unique minimal one; state numbers may differ.  The
comparison renumbers every rule's states canonically (breadth-first from the rule's start:
byte classes ascending, then calls) and compares transitions, calls, flags, nullable states,
FIRST sets, FOLLOW sets and return contexts exactly.  Limit errors must match too (type, and
the rule named).
"""

import json

import numpy as np
import pytest

from conftest import DATA_DIR, require_data
from xmask._gc_pause import gc_paused
from xmask._recursion import deep_recursion
from xmask.compiler.automaton import AutomatonLimits, build_automaton
from xmask.errors import GrammarError, GrammarLimitError, XmaskError
from xmask import Grammar


def canonical(a):
    """``a`` with every rule's states renumbered breadth-first from its start."""
    n, nc = a.n_states, a.n_classes
    trans = a.trans.reshape(n, nc).tolist()
    off, tgt, ret = a.call_offsets.tolist(), a.call_target.tolist(), a.call_ret.tolist()
    rule_of_start = {s: r for r, s in enumerate(a.rule_start.tolist())}
    first = a.first_bytes
    where = {}
    rules = []
    for r, s0 in enumerate(a.rule_start.tolist()):
        num, queue, rows = {s0: 0}, [s0], []
        for s in queue:  # the queue grows while iterating: breadth-first
            where[s] = (r, num[s])

            def number(t):
                if t < 0:
                    return -1
                if t not in num:
                    num[t] = len(queue)
                    queue.append(t)
                return num[t]

            row = tuple(number(t) for t in trans[s])
            calls = tuple(sorted((rule_of_start[tgt[k]], number(ret[k]))
                                 for k in range(off[s], off[s + 1])))
            rows.append((row, calls, int(a.flags[s]), bool(a.nullable[s]), first[s]))
        rules.append(rows)
    ctx = [(a.rule_follow[r].tobytes(), a.rule_ctx_follow[r].tobytes(),
            sorted(where.get(s, (-1, -1)) for s in a.rule_ctx_states[r]))
           for r in range(len(a.rule_names))]
    return a.rule_names, a.byte_class.tobytes(), a.n_states, rules, ctx


def outcome(grammar, limits=AutomatonLimits(), reference=False):
    """The canonical automaton, or the error raised (type, rule named)."""
    with deep_recursion(), gc_paused():
        try:
            return canonical(build_automaton(grammar, limits, reference=reference))
        except XmaskError as e:
            return type(e).__name__, getattr(e, "rule", None)


def assert_same(grammar, limits=AutomatonLimits()):
    fast = outcome(grammar, limits)
    assert fast == outcome(grammar, limits, reference=True)
    return fast


def test_builtin_json_grammar():
    got = assert_same(Grammar.builtin_json_grammar())
    assert got[2] > 10


def _gbnf_files():
    root = DATA_DIR / "gbnf"
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.gbnf")) if root.exists() else []


@pytest.mark.parametrize("name", _gbnf_files() or ["(no data)"])
def test_gbnf_grammars(name):
    path = require_data("gbnf", *name.split("/"))
    assert_same(Grammar.from_ebnf(path.read_text(encoding="utf-8")))


def _maskbench_sample(n=40):
    files = sorted((DATA_DIR / "maskbench").glob("*.json"))
    return [files[i * len(files) // n].name for i in range(n)] if len(files) >= n else []


@pytest.mark.parametrize("name", _maskbench_sample() or ["(no data)"])
def test_maskbench_schemas(name):
    # a schema the converter rejects says nothing about the automaton: take the next file in
    # sorted order instead, so every case compares two automata
    path = require_data("maskbench", name)
    files = sorted(path.parent.glob("*.json"))
    start = files.index(path)
    for candidate in files[start:start + 10]:
        text = json.dumps(json.loads(candidate.read_text(encoding="utf-8"))["schema"])
        try:
            with deep_recursion():
                grammar = Grammar.from_json_schema(text, strict_mode=False, any_whitespace=True)
        except XmaskError:
            continue
        assert_same(grammar)
        return
    pytest.fail(f"no schema the converter accepts among the 10 files from {name}")


@pytest.mark.parametrize("text", [
    'root ::= "a"{0,300} "b" | "a"{5,7} "c"',                # chains: many Moore rounds
    'root ::= ("a"{0,20}){0,20} "x"',                          # nested nullable repeats
    'root ::= ([a-c] [a-c]?){3,40}',                            # overlapping repeat copies
    'root ::= item ("," item)*\nitem ::= [a-z]+ | "[" root "]"',  # recursion, tail calls
    'root ::= a b\na ::= "x"? a2\na2 ::= "y"?\nb ::= "(" root ")" | "z"',
    'root ::= [^"\\\\]* "\\"" | "\\\\u" [0-9a-fA-F]{4}',     # UTF-8 class paths
    'root ::= "a" bad | "b"\nbad ::= "y" bad',                 # unproductive rule pruned
    # one state reading 40 edges (sorted by counting), disjoint or overlapping by threes
    "root ::= " + " | ".join(f'"{chr(48 + i)}" "{i}"' for i in range(40)),
    "root ::= " + " | ".join(f'[{chr(48 + i)}-{chr(50 + i)}] "{i}"' for i in range(40)),
])
def test_small_grammars(text):
    assert_same(Grammar.from_ebnf(text))


@pytest.mark.parametrize("text,limits,error", [
    ('root ::= "a" [a-z]{0,300}', AutomatonLimits(max_states=100), GrammarLimitError),
    ('root ::= ([a-z]? [a-z]?){0,200}', AutomatonLimits(max_nfa_states=3000), GrammarLimitError),
    ('root ::= expr\nexpr ::= expr "+" "1" | "1"', AutomatonLimits(), GrammarError),
    ('root ::= "a" root', AutomatonLimits(), GrammarError),
])
def test_errors_match(text, limits, error):
    got = assert_same(Grammar.from_ebnf(text), limits)
    assert got[0] == error.__name__ and got[1] is not None


def test_deadline_is_checked_in_the_kernel():
    """The Cython determinizer checks the compile deadline itself (no GIL, no Python call):
    with no time left it stops with status 3, which ``dfa.rule_dfas`` turns into the deadline
    error; an expired deadline is also caught before the NFA is built."""
    from xmask import _deadline
    from xmask.compiler._rule_dfas import build_rule_dfas
    from xmask.compiler._nfa_build import NFA
    from xmask.compiler.nfa import byte_classes

    nfa = NFA(AutomatonLimits(), dfa_of=None)
    start, end = nfa.add_rule("root", Grammar.from_ebnf('root ::= [a-z] "x"').rules["root"], {})
    arr = nfa.arrays()
    bc = byte_classes(arr)
    args = (arr.eps_off, arr.eps_dst, arr.b_off, arr.b_lo, arr.b_hi, arr.b_dst, arr.c_off,
            arr.c_rule, arr.c_dst, np.array([start], "i4"), np.array([end], "i4"), bc, 1000, 1000,
            0, 1000)
    assert build_rule_dfas(*args, 0.0)[0] == 3
    status, bad, rule_base, *_ = build_rule_dfas(*args, -1.0)
    assert status == 0 and rule_base.tolist() == [0, 3]
    grammar = Grammar.from_ebnf('root ::= [a-z]{0,2000} "x"')
    with _deadline.compile_deadline(1e-9), pytest.raises(GrammarLimitError,
                                                          match="max_compile_seconds"):
        build_automaton(grammar)


def test_concurrent_builds_agree():
    """The kernels run with the GIL released and repeat templates are memoized process-wide:
    automata built by several threads at once equal one built alone."""
    from concurrent.futures import ThreadPoolExecutor

    texts = ['root ::= "\\\\u" [0-9a-fA-F]{4} | [a-z]{2,30} "x"',
             'root ::= ("[" root "]" | [0-9]{1,5}) ("," [0-9a-f]{0,20})*',
             'root ::= ([a-c] [a-c]?){3,40}']
    grammars = [Grammar.from_ebnf(t) for t in texts] * 4
    alone = [outcome(g) for g in grammars]
    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(outcome, grammars)) == alone
