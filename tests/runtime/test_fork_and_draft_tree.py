"""fork(), is_completed(), XGrammar's matcher properties and traverse_draft_tree, on Llama-3 and
Qwen2.5 (padded vocabulary), every mask compared with the slow reference."""

import random

import numpy as np
import pytest
from matchers_util import DOCS, Tok, advanced, fast_row, reference_row

import xmask


@pytest.fixture(scope="module", params=["llama3", "qwen2.5"])
def tok(request):
    return Tok(request.param, vocab_size=151936 if request.param == "qwen2.5" else None)


def allowed_ids(row, vocab_size):
    bits = np.unpackbits(np.asarray(row).view(np.uint8), bitorder="little")[:vocab_size]
    return np.nonzero(bits)[0].tolist()


# ------------------------------------------------------------------------------------- fork


@pytest.mark.parametrize("cut", [0, 1, 5, 12])
def test_fork_then_diverge_both_match_reference(tok, cut):
    a_ids, b_ids = tok.encode(DOCS[0]), tok.encode(DOCS[2])
    parent = advanced(tok.json, a_ids, cut)
    child = parent.fork()
    assert child is not parent and child.num_accepted_tokens == parent.num_accepted_tokens
    np.testing.assert_array_equal(fast_row(child, tok.n_words), fast_row(parent, tok.n_words))
    # The parent goes on with its document, the child restarts the second one after a rollback.
    child.rollback(cut)
    for step in range(max(len(a_ids), len(b_ids))):
        for m, ids, k in ((parent, a_ids, cut + step), (child, b_ids, step)):
            if k < len(ids):
                np.testing.assert_array_equal(fast_row(m, tok.n_words), reference_row(m, tok.n_words))
                assert m.accept_token(ids[k])
    for m in (parent, child):
        assert m.is_completed()
        assert m.accept_token(m.stop_token_ids[0]) and m.is_terminated()


def test_fork_rollback_across_fork_point_is_independent(tok):
    ids = tok.encode(DOCS[1])
    parent = advanced(tok.json, ids, 10)
    before = fast_row(parent, tok.n_words)
    child = parent.fork()
    child.rollback(10)
    np.testing.assert_array_equal(fast_row(child, tok.n_words),
                                  fast_row(xmask.GrammarMatcher(tok.json), tok.n_words))
    np.testing.assert_array_equal(fast_row(parent, tok.n_words), before)
    for t in ids[:4]:
        assert child.accept_token(t)
    assert parent.num_accepted_tokens == 10 and child.num_accepted_tokens == 4
    parent.rollback(6)
    np.testing.assert_array_equal(fast_row(parent, tok.n_words), fast_row(child, tok.n_words))


def test_fork_keeps_settings_and_termination(tok):
    stop = tok.encode("x")[0]
    m = xmask.GrammarMatcher(tok.json, override_stop_tokens=[stop], default_temperature=0.5)
    assert m.accept_string("[1]") and m.accept_token(stop) and m.is_terminated()
    f = m.fork()
    assert f.is_terminated() and f.is_completed()
    assert f.stop_token_ids == [stop] and f.temperature == 0.5
    with pytest.raises(ValueError):
        f.rollback(3)  # only 2 steps accepted: '[1]' and the stop token
    f.rollback(1)
    assert not f.is_terminated() and m.is_terminated()


def test_fork_of_a_fork_and_arena_stays_small(tok):
    ids = tok.encode(DOCS[2])
    m = advanced(tok.json, ids, len(ids) // 2)
    g = m.fork().fork()
    assert g._debug_arena_nodes() <= m._debug_arena_nodes()
    for t in ids[len(ids) // 2:]:
        assert g.accept_token(t)
        np.testing.assert_array_equal(fast_row(g, tok.n_words), reference_row(g, tok.n_words))
    assert not m.is_completed() and g.is_completed()


# ---------------------------------------------------------------------- small API semantics


def test_is_completed_follows_xgrammar(tok):
    m = xmask.GrammarMatcher(tok.json)
    assert not m.is_completed()
    ids = tok.encode('{"a": 1}')
    for t in ids[:-1]:
        assert m.accept_token(t)
        assert not m.is_completed()
    assert m.accept_token(ids[-1]) and m.is_completed() and not m.is_terminated()
    assert m.accept_token(m.stop_token_ids[0])
    assert m.is_completed() and m.is_terminated()
    m.rollback(2)
    assert not m.is_completed()
    digits = xmask.GrammarMatcher(tok.compiler.compile_grammar('root ::= [0-9]+'),
                                  terminate_without_stop_token=True)
    assert not digits.is_completed() and digits.accept_string("12")
    assert digits.is_completed() and digits.is_terminated()


def test_properties(tok):
    m = xmask.GrammarMatcher(tok.json)
    assert m.max_rollback_tokens == -1
    limited = xmask.GrammarMatcher(tok.json, max_rollback_tokens=2)  # honoured, no warning
    assert limited.max_rollback_tokens == 2  # (XGrammar 0.2.8: warns, ignores it, -1)
    assert limited.accept_string("[") and limited.accept_string("1") and limited.accept_string(",")
    limited.rollback(3)
    assert limited.num_accepted_tokens == 0
    assert m.stop_token_ids == sorted(tok.info.stop_token_ids)
    assert m.temperature is None
    assert xmask.GrammarMatcher(tok.json, override_stop_tokens=7).stop_token_ids == [7]


# ----------------------------------------------------------------------------- draft trees


def random_tree(rng, tok, matcher, n_nodes):
    """(parents, tokens) of a random draft tree rooted at the matcher's state: children are
    allowed tokens (from the reference mask), stop tokens and random (mostly rejected) ones."""
    parents, tokens, states = [-1], [0], [matcher]
    while len(tokens) < n_nodes:
        live = [i for i, s in enumerate(states) if s is not None]
        p = rng.choice(live) if rng.random() < 0.85 else rng.randrange(len(tokens))
        state = states[p]
        r = rng.random()
        if state is None or r < 0.2:
            t = rng.randrange(tok.info.vocab_size)
        elif r < 0.3:
            t = state.stop_token_ids[0]
        else:
            ok = allowed_ids(reference_row(state, tok.n_words), tok.vocab_size)
            t = rng.choice(ok) if ok else rng.randrange(tok.vocab_size)
        child = None
        if state is not None and not state.is_terminated():
            child = state.fork()
            if not child.accept_token(t) or child.is_terminated():
                child = None
        parents.append(p)
        tokens.append(t)
        states.append(child)
    return parents, tokens


def links(parents):
    n = len(parents)
    nxt, sib = [-1] * n, [-1] * n
    last = {}
    for c in range(1, n):
        p = parents[c]
        if p in last:
            sib[last[p]] = c
        else:
            nxt[p] = c
        last[p] = c
    return nxt, sib


def expected_rows(tok, matcher, parents, tokens):
    """Rows as XGrammar defines them: zero unless every token on the path was allowed and no
    stop token ended it; else the reference mask after the path."""
    n = len(parents)
    out = np.zeros((n, tok.n_words), np.int32)
    states = [matcher.fork()] + [None] * (n - 1)
    out[0] = reference_row(states[0], tok.n_words)
    for c in range(1, n):  # parents precede children
        ps = states[parents[c]]
        if ps is None:
            continue
        t = tokens[c]
        if not (int(out[parents[c], t >> 5]) >> (t & 31)) & 1:
            continue
        s = ps.fork()
        assert s.accept_token(t)
        if s.is_terminated():
            continue
        states[c] = s
        out[c] = reference_row(s, tok.n_words)
    return out


@pytest.mark.parametrize("seed", range(4))
def test_traverse_draft_tree_rows_match_reference(tok, seed):
    torch = pytest.importorskip("torch")
    rng = random.Random(seed)
    ids = tok.encode(DOCS[seed % len(DOCS)])
    m = advanced(tok.json, ids, rng.randrange(len(ids)))
    parents, tokens = random_tree(rng, tok, m, 24)
    nxt, sib = links(parents)
    bm = torch.full((len(tokens), tok.n_words), -1, dtype=torch.int32)
    before = fast_row(m, tok.n_words)
    done = m.traverse_draft_tree(torch.tensor(nxt), torch.tensor(sib), torch.tensor(tokens), bm)
    assert done is True
    np.testing.assert_array_equal(bm.numpy(), expected_rows(tok, m, parents, tokens))
    np.testing.assert_array_equal(fast_row(m, tok.n_words), before)  # state unchanged


def test_traverse_into_a_3d_view_and_numpy_inputs(tok):
    ids = tok.encode(DOCS[1])
    m = advanced(tok.json, ids, 3)
    parents, tokens = [-1, 0, 1, 0], [0, ids[3], ids[4], ids[5]]
    nxt, sib = links(parents)
    buf = np.full((4, 2, tok.n_words), 9, np.int32)
    assert m.traverse_draft_tree(np.array(nxt), np.array(sib), np.array(tokens), buf[:, 1, :])
    np.testing.assert_array_equal(buf[:, 1, :], expected_rows(tok, m, parents, tokens))
    assert (buf[:, 0, :] == 9).all()


def test_traverse_temperatures_timeout_and_terminated(tok):
    torch = pytest.importorskip("torch")
    m = xmask.GrammarMatcher(tok.json)
    nxt, sib, draft = [1, -1], [-1, -1], [0, tok.encode("[")[0]]
    bm = torch.full((2, tok.n_words), 5, dtype=torch.int32)
    temps = torch.zeros(2, dtype=torch.float32)
    assert m.traverse_draft_tree(nxt, sib, draft, bm, 10.0, temps) is True
    assert temps.tolist() == [-1.0, -1.0]
    assert m.traverse_draft_tree(nxt, sib, draft, bm, 1e-12) is False
    assert m.num_accepted_tokens == 0
    assert m.accept_string("1") and m.accept_token(m.stop_token_ids[0])
    assert m.traverse_draft_tree(nxt, sib, draft, bm) is True
    assert (bm == 0).all()


@pytest.mark.parametrize(
    "nxt, sib, draft, rows, err",
    [
        ([1, -1], [-1], [0, 1], 2, ValueError),  # lengths differ
        ([1, 0], [-1, -1], [0, 1], 2, ValueError),  # cycle back to the root
        ([1, -1, -1], [-1, 1, -1], [0, 1, 1], 3, ValueError),  # node 1 reached twice
        ([5, -1], [-1, -1], [0, 1], 2, ValueError),  # link out of range
        ([-1, -1], [1, -1], [0, 1], 2, ValueError),  # the root has a sibling
        ([1, -1], [-1, -1], [0, 10**9], 2, xmask.InvalidTokenError),
        ([1, -1], [-1, -1], [0, 1], 1, xmask.BitmaskError),  # too few rows
    ],
)
def test_traverse_bad_trees_raise_before_writing(tok, nxt, sib, draft, rows, err):
    m = xmask.GrammarMatcher(tok.json)
    bm = np.full((rows, tok.n_words), 3, np.int32)
    with pytest.raises(err):
        m.traverse_draft_tree(nxt, sib, draft, bm)
    assert (bm == 3).all()
