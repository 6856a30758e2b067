"""Matcher memory: max_rollback_tokens bounds the history on long generations (masks and
rollbacks inside the window unchanged, rollback past the held history a clear error), a
matcher's own memory does not scale with the vocabulary, and the per-thread fill buffers that
replaced the per-matcher ones give exact masks across vocabularies and threads.  Long runs
(100k / 1M tokens) are in bench/bench_memory.py."""

import threading

import numpy as np
import pytest
from matchers_util import DOCS, Tok, fast_row, reference_row

import xmask


@pytest.fixture(scope="module")
def llama3():
    return Tok("llama3")


@pytest.fixture(scope="module")
def gpt2():
    return Tok("gpt2")


def letter_tokens(tok, n, seed=0):
    """n token ids of lowercase-letter tokens (one to four letters), deterministic."""
    rng = np.random.default_rng(seed)
    pool = [i for i, b in enumerate(tok.info.decoded_vocab)
            if 1 <= len(b) <= 4 and all(97 <= c <= 122 for c in b)]
    return [pool[k] for k in rng.integers(0, len(pool), n)]


def test_rollback_window_bounds_history_on_a_long_walk(llama3):
    cg = llama3.compiler.compile_grammar("root ::= [a-z]*")
    ids = letter_tokens(llama3, 20_000)
    capped = xmask.GrammarMatcher(cg, max_rollback_tokens=8)
    free = xmask.GrammarMatcher(cg)
    sizes = []
    for k, t in enumerate(ids):
        assert capped.accept_token(t) and free.accept_token(t)
        if k % 5000 == 4999:
            sizes.append((capped._memory_bytes(), free._memory_bytes()))
    # capped: flat (the window is 8 tokens, the history at most 2 x 8 + 1024 tokens, ~3 KB
    # of text: ~90 KB with the arrays' doubling slack)
    assert max(s[0] for s in sizes) == min(s[0] for s in sizes) < 128 * 1024
    # unlimited: grows with every token (~13 bytes per byte of text here)
    assert sizes[-1][1] > 200_000 and sizes[-1][1] > 2 * sizes[0][1]
    assert 8 <= capped.num_accepted_tokens <= 2 * 8 + 1024 + 1
    np.testing.assert_array_equal(fast_row(capped, llama3.n_words), fast_row(free, llama3.n_words))
    # rollback inside the window: the same state as the unlimited matcher's
    capped.rollback(8)
    free.rollback(8)
    np.testing.assert_array_equal(fast_row(capped, llama3.n_words),
                                  reference_row(free, llama3.n_words))
    assert capped.accept_token(ids[-8]) and free.accept_token(ids[-8])
    # past the held history: a clear error, nothing changed
    held = capped.num_accepted_tokens
    with pytest.raises(xmask.InvalidTokenError, match="max_rollback_tokens=8"):
        capped.rollback(held + 1)
    assert capped.num_accepted_tokens == held
    with pytest.raises(xmask.InvalidTokenError, match="matchers\\[0\\].*max_rollback_tokens"):
        xmask.BatchGrammarMatcher.batch_rollback([capped], [held + 1])
    capped.rollback(held)  # everything still held can be rolled back
    assert capped.num_accepted_tokens == 0 and capped.accept_token(ids[0])
    capped.reset()
    assert capped.num_accepted_tokens == 0 and capped.max_rollback_tokens == 8


def test_trimmed_json_string_keeps_masks_and_forks(llama3):
    text = '{"k": "' + " ".join(["lorem ipsum dolor sit amet"] * 500) + '", "n": [1, 2]}'
    ids = llama3.encode(text)
    assert len(ids) > 2 * 3 + 1024 + 100
    capped = xmask.GrammarMatcher(llama3.json, max_rollback_tokens=3)
    free = xmask.GrammarMatcher(llama3.json)
    for k, t in enumerate(ids):
        assert capped.accept_token(t) and free.accept_token(t)
        if k % 997 == 0 or k > len(ids) - 6:
            np.testing.assert_array_equal(fast_row(capped, llama3.n_words),
                                          fast_row(free, llama3.n_words))
    assert capped.is_completed()
    child = capped.fork()  # a fork keeps the window and the held history
    assert child.max_rollback_tokens == 3 and child.num_accepted_tokens == capped.num_accepted_tokens
    for n in (1, 3):
        child.rollback(n)
        free_c = free.fork()
        free_c.rollback(n)
        np.testing.assert_array_equal(fast_row(child, llama3.n_words),
                                      reference_row(free_c, llama3.n_words))
        for t in ids[len(ids) - n:]:
            assert child.accept_token(t)
    assert child.accept_token(llama3.info.stop_token_ids[0]) and child.is_terminated()


def test_max_rollback_tokens_argument(llama3):
    assert xmask.GrammarMatcher(llama3.json).max_rollback_tokens == -1
    assert xmask.GrammarMatcher(llama3.json, max_rollback_tokens=None).max_rollback_tokens == -1
    assert xmask.GrammarMatcher(llama3.json, max_rollback_tokens=np.int64(0)).max_rollback_tokens == 0
    with pytest.raises(ValueError, match="max_rollback_tokens"):
        xmask.GrammarMatcher(llama3.json, max_rollback_tokens=-2)
    with pytest.raises(xmask.InvalidTokenError, match="max_rollback_tokens"):
        xmask.GrammarMatcher(llama3.json, max_rollback_tokens=1.5)


def test_matcher_memory_does_not_scale_with_the_vocabulary(llama3, gpt2):
    # 128k (Llama-3) and 50k (GPT-2) vocabularies: the same bytes per fresh matcher
    a = xmask.GrammarMatcher(llama3.json, override_stop_tokens=[0])
    b = xmask.GrammarMatcher(gpt2.json, override_stop_tokens=[0])
    assert a._memory_bytes() == b._memory_bytes() < 32 * 1024
    bm = np.zeros((1, llama3.n_words), np.int32)
    a.fill_next_token_bitmask(bm)
    assert a._memory_bytes() == b._memory_bytes()  # a fill allocates nothing in the matcher


def _walk_rows(tok, compiled, ids):
    m = xmask.GrammarMatcher(compiled)
    out = []
    for t in ids:
        out.append((fast_row(m, tok.n_words), m))
        assert m.accept_token(t)
        m = m.fork()
    return out


@pytest.mark.parametrize("threads", [1, 2])
def test_per_thread_fill_buffers_across_vocabularies(llama3, gpt2, threads):
    # Alternate fills of two vocabularies (the thread's buffers grow and shrink in use) on
    # multi-top states (JSON value starts use the position bitset), in 1 or 2 threads.
    qwen = Tok("qwen2.5", vocab_size=151936)
    toks = [llama3, gpt2, qwen]
    docs = [(tok, tok.encode(DOCS[i % len(DOCS)])[:40]) for i, tok in enumerate(toks)]
    errors = []

    def run(offset):
        try:
            for step in range(15):
                tok, ids = docs[(step + offset) % len(docs)]
                m = xmask.GrammarMatcher(tok.json)
                for t in ids[: step % len(ids)]:
                    assert m.accept_token(t)
                np.testing.assert_array_equal(fast_row(m, tok.n_words),
                                              reference_row(m, tok.n_words))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    workers = [threading.Thread(target=run, args=(k,)) for k in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert not errors, errors[0]


def test_compile_cache_counts_held_memory_and_its_growth(llama3):
    from xmask.compiler.held_bytes import held_bytes, static_bytes

    compiler = xmask.GrammarCompiler(llama3.info)
    assert compiler.cache_limit_bytes == 1 << 30  # bounded by default (XGrammar: -1)
    cg = compiler.compile_builtin_json_grammar()
    before = compiler.get_cache_size_bytes()
    # more than the runtime tables: the grammar and the automaton's Python data too
    assert before == held_bytes(cg) > cg.memory_size_bytes
    assert static_bytes(cg) == static_bytes(cg)  # deterministic
    m = xmask.GrammarMatcher(cg)
    for t in llama3.encode(DOCS[0]):
        fast_row(m, llama3.n_words)  # fills classify states: the mask cache grows
        assert m.accept_token(t)
    grown = compiler.get_cache_size_bytes()
    assert grown > before and grown - before == held_bytes(cg) - before
    assert compiler.cache_info()["memory_bytes"] == grown
    # the limit sees the grown size: a + b fit before a's fills, not after; a (least recently
    # used) is evicted when b is compiled
    b_size = held_bytes(xmask.GrammarCompiler(llama3.info).compile_regex("[a-z]+"))
    assert before + b_size < grown + b_size - 1
    small = xmask.GrammarCompiler(llama3.info, cache_limit_bytes=grown + b_size - 1)
    a = small.compile_builtin_json_grammar()
    m = xmask.GrammarMatcher(a)
    for t in llama3.encode(DOCS[0]):
        fast_row(m, llama3.n_words)
        assert m.accept_token(t)
    assert small.get_cache_size_bytes() == grown
    b = small.compile_regex("[a-z]+")
    assert small.get_cache_size_bytes() == b_size
    assert small.compile_regex("[a-z]+") is b
    assert small.compile_builtin_json_grammar() is not a
    with pytest.raises(ValueError, match="cache_limit_bytes"):
        xmask.GrammarCompiler(llama3.info, cache_limit_bytes=-5)
