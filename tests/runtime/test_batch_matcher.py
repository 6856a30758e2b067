"""BatchGrammarMatcher: batch results equal per-matcher results (and the slow reference) for 1..N
threads, on Llama-3 and Qwen2.5 (padded vocabulary), with the built-in JSON grammar and a
MaskBench schema; every bad argument raises before any row is written or any token accepted."""

import inspect

import numpy as np
import pytest
from matchers_util import DOCS, Tok, advanced, maskbench_schemas, reference_row, spread

import xmask


@pytest.fixture(scope="module", params=["llama3", "qwen2.5"])
def tok(request):
    return Tok(request.param, vocab_size=151936 if request.param == "qwen2.5" else None)


@pytest.fixture(scope="module")
def schema_case(tok):
    schema, valid = maskbench_schemas(["Github_easy---o13111.json"])[0]
    compiled = tok.compiler.compile_json_schema(schema)
    return compiled, [tok.encode(text) for text in valid]


def per_matcher(matchers, n_words):
    return np.stack([reference_row(m, n_words) for m in matchers])


@pytest.mark.parametrize("threads", [1, 2, 4, "auto"])
def test_batch_fill_equals_reference(tok, schema_case, threads):
    docs = [tok.encode(d) for d in DOCS]
    matchers = spread(tok.json, docs, 24) + spread(schema_case[0], schema_case[1], 24)
    bm = np.full((len(matchers), tok.n_words), -1, np.int32)
    xmask.BatchGrammarMatcher(threads).batch_fill_next_token_bitmask(matchers, bm)
    np.testing.assert_array_equal(bm, per_matcher(matchers, tok.n_words))


def test_batch_fill_indices_torch_and_untouched_rows(tok):
    torch = pytest.importorskip("torch")
    docs = [tok.encode(d) for d in DOCS]
    matchers = spread(tok.json, docs, 5)
    bm = torch.full((8, tok.n_words), 7, dtype=torch.int32)
    indices = [6, 0, 3, 7, 2]
    xmask.BatchGrammarMatcher(2).batch_fill_next_token_bitmask(matchers, bm, indices)
    ref = per_matcher(matchers, tok.n_words)
    for i, row in enumerate(indices):
        np.testing.assert_array_equal(bm[row].numpy(), ref[i])
    assert (bm[[1, 4, 5]] == 7).all()
    for as_array in (np.array, torch.tensor):  # indices as servers hold them
        bm.fill_(7)
        xmask.BatchGrammarMatcher(2).batch_fill_next_token_bitmask(matchers, bm, as_array(indices))
        for i, row in enumerate(indices):
            np.testing.assert_array_equal(bm[row].numpy(), ref[i])
    # a strided 2-D view of a 3-D speculative buffer
    buf = torch.zeros((5, 3, tok.n_words), dtype=torch.int32)
    xmask.BatchGrammarMatcher(2).batch_fill_next_token_bitmask(matchers, buf[:, 2, :])
    np.testing.assert_array_equal(buf[:, 2, :].numpy(), ref)
    assert (buf[:, :2] == 0).all()


def test_batch_fill_long_work_uses_threads_and_stays_exact(tok):
    """Many matchers in uncertain-heavy states (inside strings and numbers): enough estimated
    work that the call leaves the GIL and runs the OpenMP loop."""
    ids = tok.encode(DOCS[0])
    matchers = [advanced(tok.json, ids, k) for k in range(len(ids))] * 1
    bm = np.zeros((len(matchers), tok.n_words), np.int32)
    for threads in (1, 2, 3):
        bm[:] = 0
        xmask.BatchGrammarMatcher(threads).batch_fill_next_token_bitmask(matchers, bm)
        np.testing.assert_array_equal(bm, per_matcher(matchers, tok.n_words))


def test_batch_accept_and_rollback_equal_per_matcher(tok):
    docs = [tok.encode(d) for d in DOCS]
    a = spread(tok.json, docs, 12)
    b = [m.fork() for m in a]
    rng = np.random.default_rng(0)
    for step in range(6):
        tokens = []
        for i, m in enumerate(a):
            doc = docs[i % len(docs)]
            k = m.num_accepted_tokens
            tokens.append(doc[k] if k < len(doc) and rng.random() < 0.7
                          else int(rng.integers(tok.info.vocab_size)))
        got = xmask.BatchGrammarMatcher.batch_accept_token(a, tokens)
        assert got == [m.accept_token(t) for m, t in zip(b, tokens)]
        assert all(type(x) is bool for x in got)
    strings = ['"', "1", ", ", "]", "}", "x", "", b"2"] * 2
    strings = strings[: len(a)]
    assert (xmask.BatchGrammarMatcher.batch_accept_string(a, strings)
            == [m.accept_string(s) for m, s in zip(b, strings)])
    counts = [min(2, m.num_accepted_tokens) for m in a]
    xmask.BatchGrammarMatcher.batch_rollback(a, counts)
    for m, k in zip(b, counts):
        m.rollback(k)
    xmask.BatchGrammarMatcher.batch_rollback(a, 0)
    bm_a = np.zeros((len(a), tok.n_words), np.int32)
    bm_b = np.zeros_like(bm_a)
    xmask.BatchGrammarMatcher(2).batch_fill_next_token_bitmask(a, bm_a)
    for i, m in enumerate(b):
        m.fill_next_token_bitmask(bm_b, i)
    np.testing.assert_array_equal(bm_a, bm_b)


def test_errors_raise_before_any_work(tok):
    docs = [tok.encode(d) for d in DOCS]
    ms = spread(tok.json, docs, 4)
    batch = xmask.BatchGrammarMatcher(2)
    bm = np.full((4, tok.n_words), 3, np.int32)
    cases = [
        (lambda: batch.batch_fill_next_token_bitmask([ms[0], ms[1], ms[0]], bm), xmask.XmaskError,
         "same GrammarMatcher"),
        (lambda: batch.batch_fill_next_token_bitmask(ms, bm, [0, 1, 1, 2]), xmask.BitmaskError,
         "repeat"),
        (lambda: batch.batch_fill_next_token_bitmask(ms, bm, [0, 1, 2, 4]), xmask.BitmaskError,
         "out of range"),
        (lambda: batch.batch_fill_next_token_bitmask(ms, bm, [0, 1]), xmask.XmaskError, "entries"),
        (lambda: batch.batch_fill_next_token_bitmask(ms, bm[:3]), xmask.BitmaskError, "rows"),
        (lambda: batch.batch_fill_next_token_bitmask(ms, bm[:, :-1]), xmask.BitmaskError,
         "words per row"),
        (lambda: batch.batch_fill_next_token_bitmask(ms, bm.astype(np.int64)), xmask.BitmaskError,
         "int32"),
        (lambda: batch.batch_fill_next_token_bitmask(ms + ["m"], bm), xmask.XmaskError,
         "not a GrammarMatcher"),
    ]
    for call, err, words in cases:
        with pytest.raises(err, match=words):
            call()
        assert (bm == 3).all()
    done = advanced(tok.json, tok.encode("[1]"), 3)
    assert done.accept_token(done.stop_token_ids[0])
    with pytest.raises(xmask.XmaskError, match=r"matchers\[2\] has terminated"):
        batch.batch_fill_next_token_bitmask([ms[0], ms[1], done], bm)
    assert (bm == 3).all()


def test_accept_errors_leave_every_matcher_unchanged(tok):
    ms = [xmask.GrammarMatcher(tok.json) for _ in range(3)]
    bracket = tok.encode("[")[0]
    for bad in ([bracket, bracket, tok.vocab_size], [bracket, -1, bracket], [bracket, 1.5, 2]):
        with pytest.raises(xmask.InvalidTokenError, match=r"tokens\[[12]\]"):
            xmask.BatchGrammarMatcher.batch_accept_token(ms, bad)
        assert [m.num_accepted_tokens for m in ms] == [0, 0, 0]
    with pytest.raises(xmask.XmaskError, match="same GrammarMatcher"):
        xmask.BatchGrammarMatcher.batch_accept_token([ms[0], ms[0]], [bracket, bracket])
    with pytest.raises(TypeError, match=r"strings\[1\]"):
        xmask.BatchGrammarMatcher.batch_accept_string(ms, ["[", 5, "["])
    with pytest.raises(xmask.XmaskError, match="entries"):
        xmask.BatchGrammarMatcher.batch_accept_string(ms, ["["])
    assert [m.num_accepted_tokens for m in ms] == [0, 0, 0]
    assert xmask.BatchGrammarMatcher.batch_accept_string(ms, ["[", "[", "["]) == [True] * 3
    with pytest.raises(ValueError, match=r"matchers\[2\]"):
        xmask.BatchGrammarMatcher.batch_rollback(ms, [1, 1, 2])
    assert [m.num_accepted_tokens for m in ms] == [1, 1, 1]
    with pytest.raises(xmask.XmaskError, match="entries"):
        xmask.BatchGrammarMatcher.batch_rollback(ms, [1, 1])


def test_signatures_follow_xgrammar():
    b = xmask.BatchGrammarMatcher
    assert list(inspect.signature(b.batch_fill_next_token_bitmask).parameters) == [
        "self", "matchers", "bitmask", "indices", "debug_print"]
    for name in ("batch_accept_token", "batch_accept_string", "batch_rollback",
                 "batch_fill_temperature"):
        assert isinstance(inspect.getattr_static(b, name), staticmethod), name
    assert b().max_threads >= 1 and b(3).max_threads == 3
    for bad in (0, -1, "many", 1.5, True):
        with pytest.raises(ValueError):
            b(bad)


def test_batch_fill_temperature(tok):
    torch = pytest.importorskip("torch")
    ms = [xmask.GrammarMatcher(tok.json), xmask.GrammarMatcher(tok.json, default_temperature=0.7)]
    temps = torch.zeros(4, dtype=torch.float32)
    xmask.BatchGrammarMatcher.batch_fill_temperature(ms, temps, [3, 1])
    assert temps.tolist() == pytest.approx([0.0, 0.7, 0.0, -1.0])
    arr = np.zeros(2, np.float32)
    xmask.BatchGrammarMatcher.batch_fill_temperature(ms, arr)
    assert arr.tolist() == pytest.approx([-1.0, 0.7])
    for bad in (np.zeros(2, np.float64), np.zeros((2, 1), np.float32), [0.0, 0.0]):
        with pytest.raises(xmask.XmaskError, match="float32"):
            xmask.BatchGrammarMatcher.batch_fill_temperature(ms, bad)
    with pytest.raises(xmask.XmaskError, match="out of range"):
        xmask.BatchGrammarMatcher.batch_fill_temperature(ms, arr, [0, 2])


def test_concurrent_batches_from_python_threads(tok):
    """Two Python threads filling disjoint batches of one compiled grammar at once (both release
    the GIL into OpenMP loops): every row still equals the reference."""
    import threading

    docs = [tok.encode(d) for d in DOCS]
    groups = [spread(tok.json, docs, 64) for _ in range(2)]
    assert all(sum(m._debug_fill_cost() for m in g) > 20_000 for g in groups)  # leaves the GIL
    refs = [per_matcher(g, tok.n_words) for g in groups]
    errors = []

    def work(g, ref):
        bm = np.zeros((len(g), tok.n_words), np.int32)
        batch = xmask.BatchGrammarMatcher(2)
        for _ in range(20):
            bm[:] = 0
            batch.batch_fill_next_token_bitmask(g, bm)
            if not np.array_equal(bm, ref):
                errors.append("mismatch")

    threads = [threading.Thread(target=work, args=(g, r)) for g, r in zip(groups, refs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
