"""Compile-side bounds on repeats (issue 15, "compile-side holes found by fuzzing").

Nested bounded repeats multiply and a recursive rule inside a big repeat calls itself from
thousands of sites; under the default ``CompileLimits`` each such compile must end in a result
or a ``GrammarLimitError`` naming the limit, in bounded time and memory, even in the warm-up
mode that classifies every state of the token-mask cache (``precompute=True``).  The repros run in a
child process with an address-space cap and a wall timeout, so a regression fails the test
instead of taking the machine down.
"""

import itertools
import json
import resource
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from conftest import child_address_cap

import xmask
from xmask.compiler.automaton import _flatten_repeat
from xmask.grammar.ir import Bytes, Repeat

CHILD_AS_BYTES = child_address_cap(3 << 30)  # 3 GB address space (RLIMIT_AS) in the child
CHILD_TIMEOUT = 120  # seconds: generous; the bounded compiles take a few seconds

_CHILD = textwrap.dedent(
    """
    import json, resource, sys, time
    resource.setrlimit(resource.RLIMIT_AS, ({cap}, {cap}))
    import xmask
    kind, text, limits = json.loads(sys.argv[1])
    if "walk_callers" in limits:  # return states a classification walks into (not a limit)
        from xmask.runtime._mask_cache import set_max_ctx_walk
        set_max_ctx_walk(limits.pop("walk_callers"))
    lim = xmask.CompileLimits(**limits)
    t = time.monotonic()
    try:
        if kind == "ebnf":
            xmask.GrammarCompiler(xmask.default_tokenizer_info(), limits=lim, precompute=True).compile_grammar(text)
        elif kind == "regex":
            xmask.GrammarCompiler(xmask.default_tokenizer_info(), limits=lim, precompute=True).compile_regex(text)
        elif kind == "schema":
            xmask.Grammar.from_json_schema(text, limits=lim)
            xmask.GrammarCompiler(xmask.default_tokenizer_info(), limits=lim, precompute=True).compile_json_schema(text)
        elif kind == "automaton":
            from xmask.compiler.automaton import AutomatonLimits, build_automaton
            build_automaton(xmask.Grammar.from_ebnf(text), AutomatonLimits.from_compile_limits(lim))
        out = {{"result": "ok"}}
    except xmask.GrammarLimitError as e:
        out = {{"result": "GrammarLimitError", "message": str(e)}}
    except BaseException as e:  # reported, and the test fails on it
        out = {{"result": type(e).__name__, "message": str(e)[:500]}}
    out["seconds"] = time.monotonic() - t
    print(json.dumps(out))
    """
).format(cap=CHILD_AS_BYTES)


def run_bounded(kind, text, **limits):
    """Compile in a capped child process; returns its report (result, message, seconds)."""
    arg = json.dumps([kind, text, limits])
    try:
        proc = subprocess.run([sys.executable, "-c", _CHILD, arg], capture_output=True,
                              text=True, timeout=CHILD_TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{kind} {text!r} ran past {CHILD_TIMEOUT} s")
    lines = proc.stdout.strip().splitlines()
    assert proc.returncode == 0 and lines, (
        f"{kind} {text!r}: child exited {proc.returncode} (memory cap?): {proc.stderr[-2000:]}")
    return json.loads(lines[-1])


def assert_bounded(report, limit_field=None):
    """The compile ended in a result or a GrammarLimitError (naming ``limit_field`` if given)."""
    assert report["result"] in ("ok", "GrammarLimitError"), report
    if limit_field is not None:
        assert report["result"] == "GrammarLimitError", report
        assert f"CompileLimits.{limit_field}" in report["message"], report


# ---- the fuzzer's repros -------------------------------------------------------------------

@pytest.mark.parametrize("kind,text", [
    ("ebnf", 'root ::= (("a"|"b"){0,100}){0,100}'),
    ("regex", "(a{0,100}){0,100}"),
    ("schema", json.dumps({"type": "string", "pattern": "^([a-z]{0,100}-){0,100}$"})),
])
def test_fuzzer_repros_end_bounded(kind, text):
    # nested repeats of a nullable item are flattened (same language), so these now compile
    assert_bounded(run_bounded(kind, text))


@pytest.mark.parametrize("kind,text", [
    ("regex", "(a{0,100}b?){0,100}"),
    ("ebnf", 'root ::= ("a"{0,100} "b"?){0,100}'),
])
def test_nested_nullable_repeat_hits_the_subset_bound(kind, text):
    # not flattenable ("b"? between the copies): the determinization's subsets would hold
    # ~50M NFA states; the sum is bounded by max_nfa_states
    assert_bounded(run_bounded(kind, text), "max_nfa_states")


@pytest.mark.parametrize("kind,text", [
    ("regex", "(((a{0,100}b?){0,100}c?){0,100}d?){0,100}"),
    ("ebnf", 'root ::= ((("a"{0,100} "b"?){0,100} "c"?){0,100} "d"?){0,100}'),
])
def test_repeat_product_is_checked_before_building(kind, text):
    report = run_bounded(kind, text)
    assert_bounded(report, "max_nfa_states")
    assert "nested repeat counts multiply" in report["message"], report


RECURSIVE_IN_REPEAT = 'root ::= ("[" root "]"){0,10000} | "x"'


@pytest.mark.parametrize("kind", ["automaton", "ebnf"])
def test_recursion_inside_a_big_repeat_is_refused_before_classifying(kind):
    # the token-mask cache would walk each of its 20,000 byte-reading states into each of the
    # 10,000 return sites of root (2e8 pairs, ~40 s); refused when the automaton is built
    assert_bounded(run_bounded(kind, RECURSIVE_IN_REPEAT), "max_context_work")


def test_recursion_inside_a_big_repeat_honours_the_deadline():
    # with the context-work cap lifted, the compile deadline (default 60 s) still stops it;
    # set low here to keep the test short.  (A rule with more than 256 return sites is walked
    # up to its end only, which makes this grammar cheap: the walk into every caller is asked
    # for, so that the classification is slow again.)
    report = run_bounded("ebnf", RECURSIVE_IN_REPEAT, max_compile_seconds=2,
                         max_context_work=10**12, walk_callers=10**9)
    assert_bounded(report, "max_compile_seconds")


def test_recursion_inside_a_big_repeat_walked_to_its_end_only_is_fast_and_exact():
    # with the context-work cap lifted, the 10,000 return sites are not walked into (each
    # state's walk stops at root's end): the eager compile is fast, the masks exact
    report = run_bounded("ebnf", RECURSIVE_IN_REPEAT, max_context_work=10**12)
    assert report["result"] == "ok", report
    info = xmask.default_tokenizer_info()
    g = xmask.GrammarCompiler(info, limits=xmask.CompileLimits(max_context_work=10**12)).compile_grammar(
        RECURSIVE_IN_REPEAT)
    _walk_masks_equal(g, "[[x][x]][x]")


def test_recursion_inside_a_smaller_repeat_compiles_with_exact_masks():
    g = 'root ::= ("[" root "]"){0,300} | "x"'
    info = xmask.default_tokenizer_info()
    with pytest.raises(xmask.GrammarLimitError, match=r"CompileLimits\.max_context_work"):
        xmask.GrammarCompiler(info, limits=xmask.CompileLimits(max_context_work=10_000)).compile_grammar(g)
    _walk_masks_equal(xmask.GrammarCompiler(info).compile_grammar(g), "[[x][x]][x]")


def test_default_limits_have_a_deadline():
    assert xmask.CompileLimits().max_compile_seconds == 60.0
    assert xmask.CompileLimits(max_compile_seconds=None).max_compile_seconds is None


# ---- the limit names its field; raising it lets the grammar compile, with exact masks ------

def _walk_masks_equal(compiled, text):
    m = xmask.GrammarMatcher(compiled)
    words = (xmask.default_tokenizer_info().vocab_size + 31) // 32
    for i in range(len(text) + 1):
        fast = np.full((1, words), -1, np.int32)
        ref = np.full((1, words), -1, np.int32)
        m.fill_next_token_bitmask(fast)
        m._reference_fill_next_token_bitmask(ref)
        assert np.array_equal(fast, ref), f"mask differs after {text[:i]!r}"
        if i < len(text):
            assert m.accept_string(text[i])
    assert m.accept_token(xmask.default_tokenizer_info().stop_token_ids[0]) and m.is_terminated()


def test_limit_error_names_the_field_and_raising_it_compiles():
    info = xmask.default_tokenizer_info()
    small = xmask.GrammarCompiler(info, limits=xmask.CompileLimits(max_nfa_states=300))
    with pytest.raises(xmask.GrammarLimitError, match=r"CompileLimits\.max_nfa_states"):
        small.compile_regex("(a{0,10}b?){0,10}")
    big = xmask.GrammarCompiler(info, limits=xmask.CompileLimits(max_nfa_states=100_000))
    _walk_masks_equal(big.compile_regex("(a{0,10}b?){0,10}"), "aaabaaaaab")


def test_flattened_nested_repeat_masks_equal_the_reference():
    info = xmask.default_tokenizer_info()
    compiled = xmask.GrammarCompiler(info).compile_regex("(a{0,10}){0,10}")
    _walk_masks_equal(compiled, "a" * 37)
    m = xmask.GrammarMatcher(compiled)
    assert m.accept_string("a" * 100) and not m.accept_string("a")


# ---- the flattening rule itself --------------------------------------------------------------

def _counts(a, b, c, d, cap):
    """Repetition counts ``(x{a,b}){c,d}`` can produce, up to ``cap``."""
    reach, out = {0}, set()
    for k in range((d if d is not None else cap) + 1):
        if k >= c:
            out |= reach
        hi = b if b is not None else cap
        reach = {r + j for r in reach for j in range(a, hi + 1) if r + j <= cap}
    return out


def test_flatten_repeat_keeps_the_language():
    x, cap, checked = Bytes(b"x"), 60, 0
    for a, c in itertools.product(range(4), range(4)):
        for b, d in itertools.product(list(range(a, 5)) + [None], list(range(c, 5)) + [None]):
            flat = _flatten_repeat(Repeat(Repeat(x, a, b), c, d), 10_000)
            if flat.item is not x:
                continue  # left nested: a gap in the counts
            checked += 1
            got = {v for v in range(cap - 9) if v >= flat.min and (flat.max is None or v <= flat.max)}
            assert got == {v for v in _counts(a, b, c, d, cap) if v < cap - 9}, (a, b, c, d, flat)
    assert checked > 100
    # a product past max_repeat stays nested (maxLength chunks are built that way)
    assert _flatten_repeat(Repeat(Repeat(x, 0, 255), 0, 257), 10_000).item.item is x
