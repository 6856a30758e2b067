"""The graph-structured parse stack on ambiguous grammars (xmask/runtime/_stack_gss.pyx).

Stacks with the same top state merge into one node with several parents, so the top count stays
bounded by the automaton's states whatever the ambiguity.  Checked here on Llama-3: bounds on
tops and arena nodes after hundreds of bytes, masks equal to the slow reference along ambiguous
inputs, rollback and fork across merged nodes, and the merged (GSS) closure forced on every step
of ordinary JSON walks giving the same masks and accept answers as the plain one.
"""

import numpy as np
import pytest
from matchers_util import DOCS, Tok, fast_row, reference_row
from maskutil import GreedyTokens

import xmask
from xmask.runtime import _stack_gss as _stack

# name -> (grammar, a long ambiguous input, bytes that complete it)
FAMILIES = {
    "yz": ('root ::= y "b" | z "c" | "d"\ny ::= "a" root\nz ::= "a" root', b"a", b"d"),
    "ab": ('root ::= "a" root | "a" root "b" | ""', b"a", b""),
    "r0": ('root ::= r0\nr0 ::= (("  " | . r0 [\\u00e0-\\u00ff] r0)?){1,3}', b" ",
           "\u00e0".encode() * 4),  # 24 spaces need at least 4 closers
}


@pytest.fixture(scope="module")
def llama():
    return Tok("llama3")


@pytest.fixture(scope="module")
def compiled(llama):
    return {name: llama.compiler.compile_grammar(g) for name, (g, _, _) in FAMILIES.items()}


@pytest.fixture
def merge_mode():
    """Restores the process-wide merge threshold a test changes."""
    old = _stack.set_max_conflicts(0)
    _stack.set_max_conflicts(old)
    yield _stack.set_max_conflicts
    _stack.set_max_conflicts(old)


def masks_match(m, n_words, where):
    a, b = fast_row(m, n_words), reference_row(m, n_words)
    assert np.array_equal(a, b), f"{where}: fill != reference"
    return a


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_tops_and_arena_stay_polynomial(llama, compiled, name):
    _, unit, _ = FAMILIES[name]
    m = xmask.GrammarMatcher(compiled[name])
    for step in range(200):
        assert m.accept_string(unit), f"byte {step}"
        assert len(m._debug_top_states()) <= 16, f"after {step + 1} bytes"
    # linear in the input: a bounded number of nodes per byte (2^200 stacks without merging)
    assert m._debug_arena_nodes() <= 40 * 200
    masks_match(m, llama.n_words, f"{name} after 200 bytes")


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_masks_equal_reference_along_ambiguous_input(llama, compiled, name):
    grammar, unit, tail = FAMILIES[name]
    greedy = GreedyTokens(llama.info, "llama3")
    text = unit * 24 + tail
    if name == "yz":
        text += b"bc" * 12
    elif name == "ab":
        text += b"b" * 10
    ids = greedy.ids(text)
    m = xmask.GrammarMatcher(compiled[name])
    every = 6 if name == "r0" else 1  # the reference tries every token: slow on r0
    for k, tid in enumerate(ids):
        if k % every == 0:
            row = masks_match(m, llama.n_words, f"{name} token {k}")
            assert (int(row[tid >> 5]) >> (tid & 31)) & 1, f"{name} token {k} masked"
        assert m.accept_token(tid)
    row = masks_match(m, llama.n_words, f"{name} at the end")
    stop = llama.info.stop_token_ids[0]
    assert (int(row[stop >> 5]) >> (stop & 31)) & 1
    assert m.accept_token(stop) and m.is_terminated()


def feed(m, data):
    """Accept ``data`` one byte per call (one history entry each, so rollback counts bytes)."""
    return all(m.accept_string(data[i:i + 1]) for i in range(len(data)))


def test_yz_is_exactly_its_language(compiled):
    m = xmask.GrammarMatcher(compiled["yz"])
    assert feed(m, b"a" * 50 + b"d")
    # the 50 closing bytes are any mix of b and c; one more is too many
    assert feed(m, b"bc" * 25)
    assert m.is_completed()
    assert not m.accept_string(b"b")
    m.rollback(1)
    assert m.accept_string(b"b") and m.is_completed()
    assert not m.accept_string(b"d")


def test_ab_bound_on_closing_bytes(compiled):
    m = xmask.GrammarMatcher(compiled["ab"])
    assert feed(m, b"a" * 40)
    assert feed(m, b"b" * 40)
    assert not m.accept_string(b"b")
    assert not m.accept_string(b"a")


def test_rollback_and_fork_across_merged_nodes(llama, compiled):
    n_words = llama.n_words
    m = xmask.GrammarMatcher(compiled["yz"])
    assert feed(m, b"a" * 30)
    at30 = fast_row(m, n_words)
    tops30 = m._debug_top_states()
    child = m.fork()
    assert feed(m, b"d" + b"b" * 5)
    assert feed(child, b"a" * 10 + b"d" + b"c" * 3)
    m.rollback(6)
    assert m._debug_top_states() == tops30
    assert np.array_equal(masks_match(m, n_words, "rolled back"), at30)
    child.rollback(14)
    assert np.array_equal(masks_match(child, n_words, "fork rolled back"), at30)
    # the rolled-back matchers go on independently, each exactly
    assert feed(m, b"d" + b"c" * 30) and not m.accept_string(b"c")
    assert feed(child, b"a" + b"d" + b"b" * 31) and not child.accept_string(b"b")
    fresh = xmask.GrammarMatcher(compiled["yz"])
    assert feed(fresh, b"a" * 31 + b"d" + b"b" * 31)
    assert np.array_equal(fast_row(fresh, n_words), fast_row(child, n_words))
    # rolled back past the fork point, the parent is where it was after 20 bytes
    m.rollback(41)
    twenty = xmask.GrammarMatcher(compiled["yz"])
    assert feed(twenty, b"a" * 20)
    assert np.array_equal(masks_match(m, n_words, "before the fork"), fast_row(twenty, n_words))


def test_merged_and_plain_closures_agree(llama, compiled, merge_mode):
    """The same inputs with merging never, always and by default: same answers and masks."""
    greedy = GreedyTokens(llama.info, "llama3")
    ids = greedy.ids(b"a" * 10 + b"d" + b"cb" * 5)
    rows = {}
    for mode in (1 << 60, -1, 0):
        merge_mode(mode)
        m = xmask.GrammarMatcher(compiled["yz"])
        out = []
        for tid in ids:
            out.append(fast_row(m, llama.n_words))
            assert m.accept_token(tid)
        out.append(masks_match(m, llama.n_words, f"mode {mode}"))
        rows[mode] = out
    for mode in (-1, 0):
        for k, (a, b) in enumerate(zip(rows[1 << 60], rows[mode])):
            assert np.array_equal(a, b), f"mode {mode}, token {k}"


def test_gss_closure_on_every_step_of_json(llama, merge_mode):
    """Forcing the merged closure on every step (and every cache-builder walk: a fresh
    compiler) keeps JSON masks equal to the reference."""
    merge_mode(-1)
    compiler = xmask.GrammarCompiler(llama.info)
    cg = compiler.compile_builtin_json_grammar()
    for doc in DOCS[:2]:
        m = xmask.GrammarMatcher(cg)
        for k, tid in enumerate(llama.encode(doc)):
            if k % 2 == 0:
                masks_match(m, llama.n_words, f"token {k} of {doc[:20]!r}")
            assert m.accept_token(tid)
        masks_match(m, llama.n_words, "end")
        assert m.accept_token(llama.info.stop_token_ids[0])


def test_small_tops_cap_is_not_reached_when_merged(compiled):
    """RuntimeLimits' top cap (tests/runtime/test_runtime_limits.py, which turns merging off to
    cross it) is never reached by these grammars once stacks merge."""
    for name, (_, unit, tail) in FAMILIES.items():
        m = xmask.GrammarMatcher(compiled[name], limits=xmask.RuntimeLimits(max_stack_tops=16))
        assert feed(m, unit * 200) and m.limit_error is None, name
