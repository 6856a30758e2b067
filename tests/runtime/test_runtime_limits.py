"""RuntimeLimits: real grammars on Llama-3 that cross each cap (stack tops, work per call, stack
depth) under the default graph-structured stack put the matcher in a sticky error state
(accepts return False, fills write zero rows on the single, batch and draft-tree paths), report
the limit by name, leave other matchers alone, and are cleared by reset() / rollback(); below
the caps masks equal the slow reference."""

import numpy as np
import pytest
from matchers_util import Tok, fast_row, reference_row

import xmask


def stairs(n):
    """After k <= n bytes 'a', k + 1 distinct rules are live (w1..wk and s(k+1)): k + 1 stack
    tops under the graph-structured stack, which merges only tops of the same state.  The
    grammar is not ambiguous and each byte is cheap: the tops cap must stop it all the same."""
    lines = ["root ::= s1"]
    for k in range(1, n + 1):
        lines.append(f's{k} ::= "a" (w{k}' + (f" | s{k + 1})" if k < n else ")"))
        lines.append(f'w{k} ::= "a" w{k} "b" | "d"')
    return "\n".join(lines)


# Ambiguous: every 'a' may open a frame that needs a 'b' or not.  The GSS keeps it at <= 3 tops
# and O(depth) closure work per byte (Earley needs the same): only the work cap (which counts
# the merged closure's (state, parent) pairs) and the depth cap can stop it.
AB = 'root ::= "a" root | "a" root "b" | ""'


@pytest.fixture(scope="module")
def tok():
    return Tok("llama3")


@pytest.fixture(scope="module")
def ambiguous(tok):
    return tok.compiler.compile_grammar(stairs(64))


@pytest.fixture(scope="module")
def ab(tok):
    return tok.compiler.compile_grammar(AB)


def token_of(tok, text):
    (tid,) = tok.encode(text)
    return tid


def zero_row_after_fill(m, n_words):
    row = np.full((1, n_words), 0x5A5A5A5A, dtype=np.int32)
    assert m.fill_next_token_bitmask(row) is True
    return row[0]


def test_tops_cap_on_accept_is_sticky_and_named(tok, ambiguous):
    a = token_of(tok, "a")
    m = xmask.GrammarMatcher(ambiguous, limits=xmask.RuntimeLimits(max_stack_tops=16))
    accepted = 0
    while m.accept_token(a):
        accepted += 1
        assert len(m._debug_top_states()) == accepted + 1
    assert accepted == 15  # 16 tops fit, the 16th 'a' would need 17
    err = m.limit_error
    assert isinstance(err, xmask.RuntimeLimitError) and isinstance(err, xmask.XmaskError)
    assert err.limit == "max_stack_tops" and "max_stack_tops" in str(err) and "16" in str(err)
    # sticky: everything is rejected, fills write all-zero rows, nothing raises
    assert not m.accept_token(token_of(tok, "d")) and not m.accept_string("d")
    assert not zero_row_after_fill(m, tok.n_words).any()
    assert not reference_row(m, tok.n_words).any()
    assert m.find_jump_forward_string() == ""
    assert m.num_accepted_tokens == accepted and not m.is_terminated()
    # the state is the one before the crossing: rollback(1) clears and masks are exact again
    m.rollback(1)
    assert m.limit_error is None
    np.testing.assert_array_equal(fast_row(m, tok.n_words), reference_row(m, tok.n_words))
    assert m.accept_token(a) and not m.accept_token(a)
    m.reset()
    assert m.limit_error is None and m.accept_string("aad")


def test_tops_cap_in_accept_string_and_other_matchers_unaffected(tok, ambiguous):
    limited = xmask.GrammarMatcher(ambiguous, limits=xmask.RuntimeLimits(max_stack_tops=16))
    other = xmask.GrammarMatcher(ambiguous)  # default limits: 21 tops are fine
    assert not limited.accept_string("a" * 20)
    assert limited.limit_error.limit == "max_stack_tops"
    assert limited.num_accepted_tokens == 0
    assert other.accept_string("a" * 20) and other.limit_error is None
    np.testing.assert_array_equal(fast_row(other, tok.n_words), reference_row(other, tok.n_words))
    assert other.accept_string("d" + "b" * 10) and other.is_completed()  # through w10


def test_work_cap_on_accept(tok):
    m = xmask.GrammarMatcher(tok.json, limits=xmask.RuntimeLimits(max_work_per_call=500))
    assert m.accept_string('"' + "x" * 100)  # ~ 2 units per byte
    assert m.limit_error is None
    assert not m.accept_string("y" * 400)
    assert m.limit_error.limit == "max_work_per_call"
    assert "500" in str(m.limit_error)
    assert m.num_accepted_tokens == 1
    m.rollback(1)
    assert m.limit_error is None and m.accept_string('"ok"') and m.is_completed()
    # accept_string's budget is per 4 KiB of input: a long string passes a cap that one
    # call over all of it would cross
    m = xmask.GrammarMatcher(tok.json, limits=xmask.RuntimeLimits(max_work_per_call=20_000))
    assert m.accept_string('"' + "x" * 100_000 + '"') and m.limit_error is None


def test_work_cap_on_fill_near_the_recursion_bound(tok):
    # Near the recursion bound every token is checked on the real stack (an "exact" fill):
    # ~a vocabulary of byte steps, far past a cap of 2,000 units.
    ids = tok.encode("[[[[")
    with xmask.max_recursion_depth(12):
        m = xmask.GrammarMatcher(tok.json, limits=xmask.RuntimeLimits(max_work_per_call=2000))
        free = xmask.GrammarMatcher(tok.json)
        for t in ids:
            assert m.accept_token(t) and free.accept_token(t)
        assert m._debug_fill_cost() > 100_000  # an exact fill
        assert not zero_row_after_fill(m, tok.n_words).any()
        assert m.limit_error.limit == "max_work_per_call"
        # the same state under the default limits: the exact mask
        ref = reference_row(free, tok.n_words)
        assert ref.any()
        np.testing.assert_array_equal(fast_row(free, tok.n_words), ref)
        m.rollback(1)
        assert m.limit_error is None
        np.testing.assert_array_equal(fast_row(m, tok.n_words), reference_row(m, tok.n_words))


def test_depth_cap(tok):
    m = xmask.GrammarMatcher(tok.json, limits=xmask.RuntimeLimits(max_stack_depth=9))
    n = 0
    while m.accept_string("["):
        n += 1
        assert n < 50
    assert m.limit_error.limit == "max_stack_depth"
    assert "9" in str(m.limit_error)
    assert not zero_row_after_fill(m, tok.n_words).any()
    # the frames of the tops only: the same nesting without the cap is accepted
    free = xmask.GrammarMatcher(tok.json)
    assert free.accept_string("[" * (n + 1)) and free.limit_error is None
    m.rollback(1)
    np.testing.assert_array_equal(fast_row(m, tok.n_words), reference_row(m, tok.n_words))


def test_work_cap_bounds_the_merged_closure(tok, ab):
    # The GSS keeps AB at <= 3 tops and creates a few nodes per byte, but each byte closes over
    # every open frame (O(depth) (state, parent) pairs): that work is what the cap counts.
    m = xmask.GrammarMatcher(ab)  # default limits
    assert m.accept_string("a" * 1000) and m.limit_error is None
    assert len(m._debug_top_states()) <= 3
    assert m._debug_call_work() > 250 * 1000  # ~ depth / 2 units per byte, not ~5
    m.reset()
    assert not m.accept_string("a" * 2000)  # ~2M units past the default 1M
    assert m.limit_error.limit == "max_work_per_call" and m.num_accepted_tokens == 0
    assert not zero_row_after_fill(m, tok.n_words).any()
    m.reset()  # the same text in calls below the cap (closing frames costs O(depth) too)
    assert m.accept_string("a" * 1000)
    assert all(m.accept_string("b" * 100) for _ in range(10)) and m.is_completed()


def test_depth_cap_on_the_merged_stack(tok, ab):
    a = token_of(tok, "a")
    m = xmask.GrammarMatcher(ab, limits=xmask.RuntimeLimits(max_stack_depth=40))
    n = 0
    while m.accept_token(a):
        n += 1
        assert n < 100
    assert m.limit_error.limit == "max_stack_depth" and "40" in str(m.limit_error)
    free = xmask.GrammarMatcher(ab)
    assert free.accept_string("a" * (n + 1)) and free.limit_error is None
    m.rollback(1)
    assert m.limit_error is None
    np.testing.assert_array_equal(fast_row(m, tok.n_words), reference_row(m, tok.n_words))


def test_memory_cap_across_calls_on_the_merged_stack(tok, ab):
    # AB keeps O(depth) parents per step: the stack's bytes grow as n^2 over many cheap calls,
    # which no per-call cap sees; max_stack_bytes does (checked whenever an array grows).
    cap = 4 << 20
    m = xmask.GrammarMatcher(ab, limits=xmask.RuntimeLimits(max_stack_bytes=cap))
    n = 0
    while m.accept_string("a" * 50):
        n += 50
        assert n < 20_000
    assert m.limit_error.limit == "max_stack_bytes" and str(cap) in str(m.limit_error)
    assert m.num_accepted_tokens == n // 50  # the crossing call changed nothing
    assert not zero_row_after_fill(m, tok.n_words).any()
    held = m._memory_bytes()
    assert cap < held < 4 * cap  # the crossing step grew it once, nothing after
    assert not m.accept_string("a") and m._memory_bytes() == held
    free = xmask.GrammarMatcher(ab)
    assert free.accept_string("a" * 50) and free.limit_error is None
    m.reset()
    assert m.limit_error is None and m.accept_string("a" * (n // 2))
    np.testing.assert_array_equal(fast_row(m, tok.n_words), reference_row(m, tok.n_words))


def test_fork_copies_the_error_and_settings(tok, ambiguous):
    limits = xmask.RuntimeLimits(max_stack_tops=8)
    m = xmask.GrammarMatcher(ambiguous, limits=limits)
    assert m.runtime_limits is limits
    assert not m.accept_string("a" * 10)
    child = m.fork()
    assert child.limit_error.limit == "max_stack_tops" and child.runtime_limits is limits
    child.reset()
    assert child.limit_error is None and m.limit_error is not None
    assert child.accept_string("a" * 7) and not child.accept_string("a")


def test_batch_rows_of_an_errored_matcher_are_zero_others_exact(tok, ambiguous):
    bad = xmask.GrammarMatcher(ambiguous, limits=xmask.RuntimeLimits(max_stack_tops=8))
    assert not bad.accept_string("a" * 10)
    good = [xmask.GrammarMatcher(tok.json), xmask.GrammarMatcher(ambiguous)]
    assert good[0].accept_string('{"a": [1, ') and good[1].accept_string("aaa")
    # a matcher that crosses its cap inside the batch fill itself
    with xmask.max_recursion_depth(12):
        crossing = xmask.GrammarMatcher(tok.json,
                                        limits=xmask.RuntimeLimits(max_work_per_call=2000))
        assert crossing.accept_string("[[[[")
        matchers = [good[0], bad, good[1], crossing]
        for threads in (1, 2):
            bm = np.full((4, tok.n_words), -1, np.int32)
            xmask.BatchGrammarMatcher(threads).batch_fill_next_token_bitmask(matchers, bm)
            assert not bm[1].any() and not bm[3].any()
            np.testing.assert_array_equal(bm[0], reference_row(good[0], tok.n_words))
            np.testing.assert_array_equal(bm[2], reference_row(good[1], tok.n_words))
    assert crossing.limit_error.limit == "max_work_per_call"
    assert xmask.BatchGrammarMatcher.batch_accept_string(matchers, ["1", "a", "d", "1"]) == [
        True, False, True, False]
    xmask.BatchGrammarMatcher.batch_rollback([bad, crossing], [0, 1])
    assert bad.limit_error is not None and crossing.limit_error is None


def test_draft_tree_rows_are_zero_once_a_path_crosses(tok, ambiguous):
    a, d = token_of(tok, "a"), token_of(tok, "d")
    # a chain root -> a -> a -> a -> a: the 3rd 'a' needs 4 tops, over the cap of 3
    nxt, sib, toks = [1, 2, 3, 4, -1], [-1] * 5, [0, a, a, a, a]
    m = xmask.GrammarMatcher(ambiguous, limits=xmask.RuntimeLimits(max_stack_tops=3))
    bm = np.full((5, tok.n_words), -1, np.int32)
    assert m.traverse_draft_tree(nxt, sib, toks, bm) is True
    assert not bm.any()
    assert m.limit_error.limit == "max_stack_tops"
    assert m.num_accepted_tokens == 0  # the traversal never changes the state
    m.reset()
    # within the cap: rows equal the reference of each path
    short = [1, 2, -1], [-1, -1, -1], [0, a, d]
    bm = np.full((3, tok.n_words), -1, np.int32)
    assert m.traverse_draft_tree(*short, bm) is True and m.limit_error is None
    np.testing.assert_array_equal(bm[0], reference_row(m, tok.n_words))
    assert m.accept_token(a)
    np.testing.assert_array_equal(bm[1], reference_row(m, tok.n_words))


def test_default_limits_and_validation(tok):
    m = xmask.GrammarMatcher(tok.json)
    assert m.runtime_limits == xmask.RuntimeLimits() and m.limit_error is None
    for bad in ({"max_stack_tops": 0}, {"max_work_per_call": -1}, {"max_stack_depth": 0},
                {"max_stack_bytes": 0}, {"max_stack_bytes": 2.0},
                {"max_stack_tops": True}, {"max_work_per_call": 1.5}):
        with pytest.raises(ValueError, match="RuntimeLimits"):
            xmask.RuntimeLimits(**bad)
    with pytest.raises(TypeError, match="RuntimeLimits"):
        xmask.GrammarMatcher(tok.json, limits=xmask.CompileLimits())
    # JSON documents stay far below the default caps
    assert m.accept_string('{"a": [1, 2, {"b": "' + "x" * 5000 + '"}]}') and m.is_completed()
