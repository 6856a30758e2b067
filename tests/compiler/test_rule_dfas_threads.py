"""Rule DFAs built on several threads (``_rule_dfas``: chunks of rules on the caller and helper
threads, joined in rule order) equal the ones built on one thread, array for array; limits
fire exactly as on one thread (same error, same rule); compiles running at once, and a compile
in a forked child, still get the same automaton."""

from __future__ import annotations

import json
import os
import random
import select
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from conftest import require_data
from xmask import Grammar
from xmask.compiler import automaton as am
from xmask.compiler._rule_dfas import threaded_builds
from xmask.errors import XmaskError

ARRAYS = ("rule_start", "state_rule", "flags", "trans", "byte_class", "call_offsets",
          "call_target", "call_ret", "rule_budget")
# MaskBench schemas whose grammars have many rules and thousands of NFA states
LARGE_SCHEMAS = ("Github_ultra---o9981", "Github_hard---o16060", "Github_medium---o48427",
                 "Snowplow---sp_257_Normalized", "JsonSchemaStore---netlify",
                 "Kubernetes---kb_308_Normalized")


def many_rules_grammar(seed: int, n_rules: int = 24) -> Grammar:
    """Rules too large to inline (word lists, digits, calls to later rules and to themselves),
    so the grammar has ~n_rules rules and thousands of NFA states."""
    rnd = random.Random(seed)
    lines = ["root ::= " + " | ".join(f"r{k}" for k in range(n_rules))]
    for k in range(n_rules):
        words = sorted({"".join(rnd.choice("abcdefgh") for _ in range(rnd.randint(2, 9)))
                        for _ in range(rnd.randint(20, 60))})
        alts = " | ".join(f'"{w}"' for w in words)
        later = f' | "(" r{rnd.randint(k, n_rules - 1)} ")"' if k < n_rules - 1 else ""
        lines.append(f'r{k} ::= ({alts}) [0-9]{{0,{rnd.randint(2, 12)}}} ("," r{k})?{later}')
    return Grammar.from_ebnf("\n".join(lines))


def outcome(grammar: Grammar, limits: am.AutomatonLimits, threads: int):
    """The automaton's arrays, or the error's type, message and rule."""
    try:
        a = am.build_automaton(grammar, limits, threads=threads)
    except XmaskError as e:
        return ("error", type(e).__name__, str(e), getattr(e, "rule", None))
    return ("ok",) + tuple(np.asarray(getattr(a, k)).tobytes() for k in ARRAYS)


def grammar_nfa(grammar: Grammar):
    """The grammar's NFA as ``build_automaton`` makes it: ``(arrays, starts, ends)``."""
    inl = am._inline_small_rules(grammar, am.AutomatonLimits(), never=())
    return am._build_nfas(inl, am._reachable_rules(inl), am.AutomatonLimits(), False)


def nfa_size(grammar: Grammar) -> int:
    return grammar_nfa(grammar)[0].n


@pytest.mark.parametrize("seed", range(6))
def test_many_rules_same_automaton_on_any_thread_count(seed):
    g = many_rules_grammar(seed)
    assert nfa_size(g) >= 2048  # large enough for the threaded path
    joined, rebuilt = threaded_builds()
    one = outcome(g, am.AutomatonLimits(), 1)
    assert one[0] == "ok"
    assert threaded_builds() == (joined, rebuilt)  # one thread: no chunks
    for threads in (2, 3, 8):
        assert outcome(g, am.AutomatonLimits(), threads) == one
    assert threaded_builds() == (joined + 3, rebuilt)  # built in chunks and joined


@pytest.mark.parametrize("name", LARGE_SCHEMAS)
def test_maskbench_same_automaton_on_two_threads(name):
    entry = json.loads(require_data("maskbench", name + ".json").read_text(encoding="utf-8"))
    g = Grammar.from_json_schema(json.dumps(entry["schema"]), strict_mode=False,
                                 any_whitespace=True)
    joined, rebuilt = threaded_builds()
    assert outcome(g, am.AutomatonLimits(), 2) == outcome(g, am.AutomatonLimits(), 1)
    assert threaded_builds() == (joined + 1, rebuilt)


def test_small_grammar_stays_on_one_thread():
    before = threaded_builds()
    g = Grammar.from_ebnf('root ::= "a" r\nr ::= [0-9]+ | "(" r ")"')
    assert outcome(g, am.AutomatonLimits(), 2) == outcome(g, am.AutomatonLimits(), 1)
    assert threaded_builds() == before


def test_state_limit_fires_as_on_one_thread():
    """Every state cap from far too small to just enough: the same error naming the same rule,
    or the same automaton (a chunk sees only its own rules' states: the join replays the
    one-thread check and rebuilds on one thread when it could have fired)."""
    g = many_rules_grammar(11)
    n = am.build_automaton(g, threads=1).n_states
    caps = sorted({1, 2, n // 7, n // 3, n // 2, n - 50, n - 1, n, n + 1, n + 200, 3 * n})
    kinds = set()
    joined, rebuilt = threaded_builds()
    for cap in caps:
        lim = am.AutomatonLimits(max_states=cap)
        one = outcome(g, lim, 1)
        assert outcome(g, lim, 2) == one, cap
        kinds.add(one[0])
    assert kinds == {"ok", "error"}
    # both paths ran: joined where no cap was near, rebuilt on one thread where one was
    now = threaded_builds()
    assert now[0] > joined and now[1] > rebuilt


def test_memory_limit_fires_as_on_one_thread():
    """Memory caps from far too small to ample: the same error or automaton on two threads.
    Near the cap (half of it for the threads' tables together) the grammar is rebuilt on one
    thread, so the threads never hold more than one thread would."""
    g = many_rules_grammar(12)
    kinds = set()
    rebuilt_ok = joined_ok = 0
    for cap in (1 << 10, 1 << 14, 1 << 16, 1 << 18, 1 << 19, 1 << 20, 1 << 22, 1 << 30):
        lim = am.AutomatonLimits(max_memory_bytes=cap)
        one = outcome(g, lim, 1)
        before = threaded_builds()
        assert outcome(g, lim, 2) == one, cap
        after = threaded_builds()
        kinds.add(one[0])
        if one[0] == "ok":
            rebuilt_ok += after[1] - before[1]
            joined_ok += after[0] - before[0]
    assert kinds == {"ok", "error"}
    assert rebuilt_ok >= 1 and joined_ok >= 1  # a tight cap that fits: built on one thread


def test_concurrent_compiles_agree():
    """Several compiles at once: one holds the helpers, the others build on their own
    thread; every automaton equals the one-thread build."""
    grammars = [many_rules_grammar(20 + k) for k in range(4)]
    want = [outcome(g, am.AutomatonLimits(), 1) for g in grammars]
    with ThreadPoolExecutor(4) as pool:
        for _ in range(3):
            got = list(pool.map(lambda g: outcome(g, am.AutomatonLimits(), 2), grammars))
            assert got == want


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_forked_child_builds_on_fresh_helpers():
    """The helper threads do not survive a fork: the child starts its own and gets the same
    automaton (no hang waiting for the parent's)."""
    g = many_rules_grammar(31)
    want = outcome(g, am.AutomatonLimits(), 2)  # the parent's helpers exist now
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        code = 1
        try:
            joined = threaded_builds()[0]
            same = outcome(g, am.AutomatonLimits(), 2) == want
            code = 0 if same and threaded_builds()[0] == joined + 1 else 2
        finally:
            os.write(write, bytes([code]))
            os._exit(0)
    os.close(write)
    try:
        ready, _, _ = select.select([read], [], [], 120)
        assert ready, "the forked child did not finish its build in 120 s"
        assert os.read(read, 1) == b"\x00"
    finally:
        os.close(read)
        os.waitpid(pid, 0)



def test_deadline_holds_on_threads():
    """The kernel's own deadline check (no time left) stops a build on two threads with the
    deadline status, as on one thread; with time left both build the same tables."""
    from xmask.compiler._rule_dfas import build_rule_dfas
    from xmask.compiler.nfa import byte_classes

    arr, starts, ends = grammar_nfa(many_rules_grammar(41))
    args = (arr.eps_off, arr.eps_dst, arr.b_off, arr.b_lo, arr.b_hi, arr.b_dst, arr.c_off,
            arr.c_rule, arr.c_dst, np.asarray(starts, "i4"), np.asarray(ends, "i4"),
            byte_classes(arr), 10**6, 10**7, 0, 10**6)
    joined, rebuilt = threaded_builds()
    assert build_rule_dfas(*args, 0.0, 0, 2)[0] == 3
    assert threaded_builds() == (joined, rebuilt + 1)  # the chunks stopped: rebuilt, stopped
    one = build_rule_dfas(*args, -1.0, 0, 1)
    two = build_rule_dfas(*args, -1.0, 0, 2)
    assert one[0] == two[0] == 0 and threaded_builds()[0] == joined + 1
    for a, b in zip(one[2:8], two[2:8]):
        assert np.array_equal(a, b)
