"""Many threads filling masks on ONE lazily compiled grammar (issue 10, "Tests").

A fresh lazy grammar classifies states as fills meet them, with the GIL released, and racing
threads publish entries for the same states (first writer wins).  Eight threads, each with its
own matcher, walk documents concurrently on one fresh grammar -- different documents, and all
the same document (the most races on one entry) -- and must get exactly the masks one thread
computes sequentially on its own fresh grammar; afterwards the shared grammar has classified
exactly the states the sequential walks classified.  ``precompute()`` running in two threads while
four others fill, and ``serialize_json`` / pickle snapshots taken while threads fill, change no
mask (a snapshot is a consistent, exact grammar).  ``BatchGrammarMatcher`` with
``max_threads`` > 1 on a fresh lazy grammar fills the same rows as per-matcher fills.
"""

import threading

import numpy as np
import pytest

import xmask
from lazy_walks import case_docs, compile_case, record_key, record_walk, tok

pytest.importorskip("tokenizers")

THREADS = 8
ROUNDS = 2  # fresh grammars raced on per case (races differ from run to run)

CASES = [
    ("llama3", "builtin-json"),
    ("qwen2.5", "builtin-json"),
    ("llama2", "gbnf-c"),
    ("llama3", "mb-Github_hard---o74005"),
    ("llama3", "mb-Kubernetes---kb_18_Normalized"),
]


def _walk_concurrently(compiled, docs_ids, words):
    """``record_walk`` of every document, one thread each, all released at once."""
    barrier = threading.Barrier(len(docs_ids))
    results = [None] * len(docs_ids)
    errors = []

    def run(i):
        try:
            barrier.wait()
            results[i] = record_walk(compiled, docs_ids[i], words)
        except BaseException as e:  # reported by the main thread
            errors.append((i, repr(e)))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(docs_ids))]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=300)
    assert not any(th.is_alive() for th in threads), "a walking thread did not finish"
    assert not errors, errors
    return results


def _first_difference(a, b):
    rows = np.nonzero((a != b).any(axis=1))[0]
    return int(rows[0]) if len(rows) else None


def _check_reference_at_start(t, compiled, ids, steps=4):
    m = xmask.GrammarMatcher(compiled)
    bm = t.bitmask(2)
    for tid in ids[:steps]:
        m.fill_next_token_bitmask(bm, 0)
        m._reference_fill_next_token_bitmask(bm, 1)
        assert np.array_equal(bm[0], bm[1])
        assert m.accept_token(tid)


@pytest.mark.parametrize("same_document", [False, True], ids=["different-docs", "same-doc"])
@pytest.mark.parametrize("tokenizer,case", CASES, ids=[f"{t}-{c}" for t, c in CASES])
def test_threads_on_one_lazy_grammar_get_one_threads_masks(tokenizer, case, same_document):
    t = tok(tokenizer)
    docs = [t.encode(d) for d in case_docs(case)]
    ids = [docs[0 if same_document else i % len(docs)] for i in range(THREADS)]

    single = compile_case(t.compiler(), case)
    expected = [record_walk(single, x, t.words) for x in ids]
    _check_reference_at_start(t, single, ids[0])

    for rnd in range(ROUNDS):
        shared = compile_case(t.compiler(), case)
        assert shared.cache_summary()["classified"] == 0, "a lazy compile classified states"
        got = _walk_concurrently(shared, ids, t.words)
        for i in range(THREADS):
            step = _first_difference(got[i], expected[i])
            assert step is None, (
                f"round {rnd} thread {i}: mask at step {step} differs from one thread's")
        s = shared.cache_summary()
        assert s["classified"] + s["pending"] == s["top_states"]
        assert s["classified"] == single.cache_summary()["classified"]
        assert s["entries"] == single.cache_summary()["entries"]
        # the same walks classify the same states, however the threads interleaved
        assert sorted(map(record_key, shared.cache_stats())) == sorted(map(record_key, single.cache_stats()))


BATCH_CASES = [("llama3", "builtin-json"), ("llama3", "mb-Github_hard---o74005"),
               ("qwen2.5", "gbnf-json")]


@pytest.mark.parametrize("tokenizer,case", BATCH_CASES, ids=[f"{t}-{c}" for t, c in BATCH_CASES])
def test_batch_fill_with_threads_on_a_fresh_lazy_grammar(tokenizer, case):
    t = tok(tokenizer)
    docs = [t.encode(d) for d in case_docs(case)]
    ids = [docs[i % len(docs)] for i in range(THREADS)]
    fresh = compile_case(t.compiler(), case)
    twin = compile_case(t.compiler(), case)
    ms = [xmask.GrammarMatcher(fresh) for _ in ids]
    twins = [xmask.GrammarMatcher(twin) for _ in ids]
    # matchers on the same document are staggered by a few tokens (before the first fill)
    pos = [3 * (i // len(docs)) for i in range(THREADS)]
    for i in range(THREADS):
        for tid in ids[i][:pos[i]]:
            assert ms[i].accept_token(tid) and twins[i].accept_token(tid)
    batch = xmask.BatchGrammarMatcher(max_threads=4)
    step = 0
    while True:
        active = [i for i in range(THREADS) if pos[i] <= len(ids[i])]
        if not active:
            break
        got = t.bitmask(THREADS)
        batch.batch_fill_next_token_bitmask([ms[i] for i in active], got, indices=active)
        want = t.bitmask(THREADS)
        for i in active:
            twins[i].fill_next_token_bitmask(want, i)
        for i in active:
            assert np.array_equal(got[i], want[i]), (
                f"step {step} row {i} (token {pos[i]}): batch fill != single fill")
            if pos[i] < len(ids[i]):
                tid = ids[i][pos[i]]
                assert ms[i].accept_token(tid) and twins[i].accept_token(tid)
            pos[i] += 1
        step += 1
    assert step > 20


def _start_walkers(compiled, docs_ids, words, extra=()):
    """Threads walking ``docs_ids`` (``record_walk``) plus ``extra`` callables, released
    together; returns (join function -> walk results, errors list)."""
    n = len(docs_ids) + len(extra)
    barrier = threading.Barrier(n)
    results = [None] * len(docs_ids)
    errors = []

    def walk(i):
        try:
            barrier.wait()
            results[i] = record_walk(compiled, docs_ids[i], words)
        except BaseException as e:
            errors.append(("walk", i, repr(e)))

    def call(fn):
        try:
            barrier.wait()
            fn()
        except BaseException as e:
            errors.append(("extra", repr(e)))

    threads = [threading.Thread(target=walk, args=(i,)) for i in range(len(docs_ids))]
    threads += [threading.Thread(target=call, args=(fn,)) for fn in extra]
    for th in threads:
        th.start()

    def join():
        for th in threads:
            th.join(timeout=300)
        assert not any(th.is_alive() for th in threads), "a thread did not finish"
        assert not errors, errors
        return results

    return join


@pytest.mark.parametrize("tokenizer,case", [("llama3", "mb-Github_hard---o74005"),
                                            ("qwen2.5", "builtin-json")])
def test_precompute_while_threads_fill(tokenizer, case):
    t = tok(tokenizer)
    docs = [t.encode(d) for d in case_docs(case)]
    ids = [docs[i % len(docs)] for i in range(4)]
    single = compile_case(t.compiler(), case)
    expected = [record_walk(single, x, t.words) for x in ids]
    eager = compile_case(t.compiler(precompute=True), case)
    shared = compile_case(t.compiler(), case)
    got = _start_walkers(shared, ids, t.words, extra=[lambda: shared.precompute(max_threads=2),
                                                      lambda: shared.precompute(max_threads=1)])()
    for i in range(len(ids)):
        step = _first_difference(got[i], expected[i])
        assert step is None, f"thread {i}: mask at step {step} differs from one thread's"
    s = shared.cache_summary()
    assert s["pending"] == 0 and s["entries"] == eager.cache_summary()["entries"], s
    assert sorted(map(record_key, shared.cache_stats())) == sorted(map(record_key, eager.cache_stats()))


@pytest.mark.parametrize("how", ["json", "pickle"])
def test_serialize_while_threads_fill(how):
    import pickle

    t = tok("llama3")
    case = "mb-Github_hard---o74005"
    docs = [t.encode(d) for d in case_docs(case)]
    ids = [docs[i % len(docs)] for i in range(4)]
    single = compile_case(t.compiler(), case)
    expected = [record_walk(single, x, t.words) for x in ids]
    shared = compile_case(t.compiler(), case)
    snapshots = []

    def snapshot():
        for _ in range(6):
            if how == "json":
                snapshots.append(shared.serialize_json())
            else:
                snapshots.append(pickle.dumps(shared))

    got = _start_walkers(shared, ids, t.words, extra=[snapshot])()
    for i in range(len(ids)):
        assert _first_difference(got[i], expected[i]) is None
    top = shared.cache_summary()["top_states"]
    classified = []
    for blob in snapshots:
        if how == "json":
            loaded = xmask.CompiledGrammar.deserialize_json(blob, t.info)
        else:
            loaded = pickle.loads(blob)
        s = loaded.cache_summary()
        assert s["classified"] + s["pending"] == s["top_states"] == top, s
        assert len(loaded.cache_stats()) == s["classified"]
        classified.append(s["classified"])
        # a snapshot taken mid-walk is a consistent, exact grammar
        for x, want in zip(ids[:2], expected[:2]):
            assert _first_difference(record_walk(loaded, x, t.words), want) is None
    assert classified == sorted(classified), classified
