"""The bound on frames one byte can push (``AutomatonTables.frames_per_byte_bound``), which sets
how close to the recursion limit a matcher stops trusting cached accepted sets, equals a
pure-Python twin that sweeps every state until both fixpoints settle (the kernel sweeps only
the states with calls), on hand-made grammars with nullable and tail calls, the built-in JSON
grammar, llama.cpp's GBNF grammars and MaskBench schemas."""

import json

import pytest
from conftest import require_data

import xmask
from xmask.compiler.automaton import FLAG_FINAL

TINY_VOCAB = ["a", "b", "c", "x", "y", "z", "ab", "xyz", "(", ")", "[", "]", "{", "}", ",", " "]


def twin_bound(arrays) -> int:
    """The bound by full sweeps over every state (the algorithm before the kernel skipped the
    states without calls)."""
    flags, off = arrays["flags"], arrays["call_offsets"]
    tgt, ret = arrays["call_target"], arrays["call_ret"]
    n = len(flags)
    nul = [False] * n
    changed = True
    while changed:
        changed = False
        for s in range(n):
            if nul[s]:
                continue
            if flags[s] & FLAG_FINAL:
                nul[s] = changed = True
                continue
            for k in range(off[s], off[s + 1]):
                t, r = int(tgt[k]), int(ret[k])
                if nul[t] and (r < 0 or nul[r]):
                    nul[s] = changed = True
                    break
    g = [0] * n
    changed, rounds = True, 0
    while changed and rounds <= n + 1:
        changed, rounds = False, rounds + 1
        for s in range(n - 1, -1, -1):
            best = g[s]
            for k in range(off[s], off[s + 1]):
                t, r = int(tgt[k]), int(ret[k])
                best = max(best, g[t] + (1 if r >= 0 else 0))
                if r >= 0 and nul[t]:
                    best = max(best, g[r])
            if best > g[s]:
                g[s], changed = best, True
    return 1 << 30 if changed else max(g, default=0)


def tables_of(compiled):
    return compiled._automaton_tables


def check(compiled) -> int:
    at = tables_of(compiled)
    want = twin_bound(at.arrays)
    assert at.frames_per_byte_bound == want
    return want


@pytest.fixture(scope="module")
def tiny_compiler():
    return xmask.GrammarCompiler(xmask.TokenizerInfo(TINY_VOCAB), cache_enabled=False)


# Rules kept as calls (recursive ones are never inlined), with nullable callees, calls whose
# return state is nullable too, tail calls and nesting that pushes several frames per byte.
HAND_MADE = {
    "nested parens": 'root ::= p\np ::= "(" p ")" | "x"',
    "nullable callee then return": 'root ::= a "y"\na ::= "(" a ")" a | ""',
    "nullable chain": 'root ::= a\na ::= b "z" a "x" | ""\nb ::= "[" b "]" | ""',
    "tail calls": 'root ::= "x" t\nt ::= "(" t | "y" | ""',
    "mutual recursion": 'root ::= e\ne ::= "(" f ")" | "a"\nf ::= "[" e "]" | e "," e | ""',
    "deep nullable stack": 'root ::= a\na ::= b "a" | "(" a ")"\nb ::= c | "b"\nc ::= d | ""\n'
                           'd ::= "[" a "]" | ""',
}


@pytest.mark.parametrize("name", sorted(HAND_MADE))
def test_hand_made_grammars(tiny_compiler, name):
    check(tiny_compiler.compile_grammar(HAND_MADE[name]))


def test_nesting_pushes_several_frames_per_byte(tiny_compiler):
    # "(" may open a p whose body starts with another nullable-prefixed call: the bound counts
    # every frame the closure after one byte stacks, so it is above 1 here
    g = 'root ::= a\na ::= b "(" a ")" | "x"\nb ::= "[" a "]" b | ""'
    assert check(tiny_compiler.compile_grammar(g)) >= 2


def test_builtin_json_and_gbnf_grammars(tiny_compiler):
    check(tiny_compiler.compile_builtin_json_grammar())
    folder = require_data("gbnf", "llama.cpp", "grammars")
    for path in sorted(folder.glob("*.gbnf")):
        check(tiny_compiler.compile_grammar(path.read_text(encoding="utf-8")))


def test_maskbench_schemas(tiny_compiler):
    files = sorted(require_data("maskbench").glob("*.json"))
    checked = 0
    for path in files[:: max(1, len(files) // 60)]:
        schema = json.loads(path.read_text(encoding="utf-8"))["schema"]
        try:
            compiled = tiny_compiler.compile_json_schema(schema, strict_mode=False)
        except xmask.XmaskError:
            continue
        check(compiled)
        checked += 1
    assert checked >= 40
