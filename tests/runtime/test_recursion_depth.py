"""set_max_recursion_depth bounds the parse-stack depth a matcher may reach: beyond it a token is
rejected and masked out (never a crash), masks stay equal to the slow reference right at the
bound (where the cache alone would be wrong), and the setting is process-wide and restorable."""

import numpy as np
import pytest
from matchers_util import Tok, fast_row, reference_row

import xmask


@pytest.fixture(scope="module")
def tok():
    return Tok("llama3")


@pytest.fixture(autouse=True)
def restore_depth():
    old = xmask.get_max_recursion_depth()
    yield
    xmask.set_max_recursion_depth(old)


def test_get_set_and_context_manager():
    assert xmask.get_max_recursion_depth() == 10_000  # XGrammar's default
    xmask.set_max_recursion_depth(123)
    assert xmask.get_max_recursion_depth() == 123
    with xmask.max_recursion_depth(7):
        assert xmask.get_max_recursion_depth() == 7
    assert xmask.get_max_recursion_depth() == 123
    with pytest.raises(RuntimeError), xmask.max_recursion_depth(9):
        raise RuntimeError("restored even on error")
    assert xmask.get_max_recursion_depth() == 123
    for bad in (0, -5, 2**31, 1.5, "10", True, None):
        with pytest.raises((ValueError, xmask.InvalidTokenError)):
            xmask.set_max_recursion_depth(bad)
    assert xmask.get_max_recursion_depth() == 123


def nesting_reached(matcher, opener, limit):
    """How many ``opener`` strings the matcher accepts in a row (at most ``limit``)."""
    for k in range(limit):
        if not matcher.accept_string(opener):
            return k
    return limit


def test_bound_rejects_deeper_nesting_and_is_read_per_call(tok):
    compiled = tok.compiler.compile_grammar('root ::= "(" root ")" | "x"')
    with xmask.max_recursion_depth(40):
        m = xmask.GrammarMatcher(compiled)
        reached = nesting_reached(m, "(", 100)
        assert 20 <= reached < 40  # each level costs at least one frame
        assert not m.accept_string("(")  # still refused, state unchanged
        assert m.accept_string("x" + ")" * reached) and m.is_completed()
    m = xmask.GrammarMatcher(compiled)
    assert nesting_reached(m, "(", 300) == 300  # default bound: far away


@pytest.mark.parametrize("bound", [25, 64])
def test_masks_match_reference_at_the_bound(tok, bound):
    """Walk into the bound on the JSON grammar with multi-bracket tokens ('[[', '[[[', ...):
    every mask equals the reference, which sees the real (bounded) stack."""
    with xmask.max_recursion_depth(bound):
        m = xmask.GrammarMatcher(tok.json)
        brackets = tok.encode("[[[[[[[[")
        assert tok.info.decoded_vocab[brackets[0]].count(b"[") > 1  # a multi-bracket token
        steps = 0
        while True:
            row = fast_row(m, tok.n_words)
            np.testing.assert_array_equal(row, reference_row(m, tok.n_words))
            if not m.accept_token(brackets[0]):
                break
            steps += 1
            assert steps < bound
        # at the bound: the token is masked out exactly when accept_token refuses it
        t = brackets[0]
        assert not (int(row[t >> 5]) >> (t & 31)) & 1
        # closing still works: only going deeper is refused
        assert m.accept_string("]")
        np.testing.assert_array_equal(fast_row(m, tok.n_words), reference_row(m, tok.n_words))


def test_lowering_the_bound_under_a_live_matcher(tok):
    m = xmask.GrammarMatcher(tok.json)
    assert m.accept_string("[" * 30)
    with xmask.max_recursion_depth(10):
        # the existing stack stays valid (the next '[' was predicted before); only new,
        # deeper calls are refused
        assert not m.accept_string("[[")
        assert not m.accept_string("[1")
        assert m.accept_string("]" * 30)
        assert m.is_completed()


def test_batch_and_fork_follow_the_bound(tok):
    with xmask.max_recursion_depth(30):
        a = xmask.GrammarMatcher(tok.json)
        k = nesting_reached(a, "[", 50)
        b = a.fork()
        a.rollback(3)
        assert not b.accept_string("[")
        assert xmask.BatchGrammarMatcher.batch_accept_string([a, b], ["[[[[", "["]) == [False, False]
        assert a.accept_string("[[[")
        bm = np.zeros((2, tok.n_words), np.int32)
        xmask.BatchGrammarMatcher(2).batch_fill_next_token_bitmask([a, b], bm)
        np.testing.assert_array_equal(bm[0], reference_row(a, tok.n_words))
        np.testing.assert_array_equal(bm[1], reference_row(b, tok.n_words))
        assert k > 10
