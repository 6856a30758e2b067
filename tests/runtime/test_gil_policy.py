"""Which single-matcher calls leave the GIL (README, "Threads"): a fill, ``accept_token`` or
``accept_string`` keeps it when its work is a few microseconds (JSON: always) and releases it
when the matcher's parse steps are slow, as in an ambiguous grammar whose every byte closes over
thousands of stack frames.  (Batch fills and > 4 KiB strings: test_thread_stress.py.)

As there, the switch interval is set to 1,000 s, so a counter thread advances only while the
main thread is inside a call that released the GIL; each check repeats its call so that the
counter thread gets scheduled even on a busy machine.
"""

import sys
import threading
import time

import numpy as np
import pytest
from matchers_util import DOCS, Tok, fast_row, reference_row

import xmask

# Every "-" opens a frame; a frame may end (""), so each further byte closes over all of them:
# ~depth work units a byte (~1 ms for a 96-byte token at depth 1,000).
DASHES = 'root ::= "-" root | "-" root "b" | ""'
DEPTH = 1000


@pytest.fixture(scope="module")
def llama():
    return Tok("llama3")


def _progress_during(call, repeat):
    counter = [0]
    stop = threading.Event()

    def count():
        while not stop.is_set():
            counter[0] += 1
            time.sleep(0)

    before = sys.getswitchinterval()
    sys.setswitchinterval(1000.0)
    th = threading.Thread(target=count)
    try:
        th.start()
        time.sleep(0.05)
        c0 = counter[0]
        for _ in range(repeat):
            call()
        c1 = counter[0]
    finally:
        stop.set()
        th.join()
        sys.setswitchinterval(before)
    return c1 - c0


def _deep(compiled):
    m = xmask.GrammarMatcher(compiled)
    for _ in range(DEPTH // 100):
        assert m.accept_string("-" * 100)
    return m


def test_slow_steps_release_the_gil(llama):
    compiled = llama.compiler.compile_grammar(DASHES)
    dash = max((i for i, b in enumerate(llama.info.decoded_vocab) if b and set(b) == {45}),
               key=lambda i: len(llama.info.decoded_vocab[i]))
    m = _deep(compiled)
    assert m._debug_call_work() > 50_000  # the last 100 bytes: ~1,000 units each

    def accept_and_undo():
        assert m.accept_token(dash)
        m.rollback(1)

    assert _progress_during(accept_and_undo, 50) > 0
    assert _progress_during(lambda: m.accept_string("-" * 40) and m.rollback(1), 50) > 0
    bm = np.zeros((1, llama.n_words), np.int32)
    assert _progress_during(lambda: m.fill_next_token_bitmask(bm), 50) > 0
    np.testing.assert_array_equal(fast_row(m, llama.n_words), reference_row(m, llama.n_words))
    assert m.limit_error is None


def test_accept_string_releases_the_gil_once_its_steps_get_slow(llama):
    # a fresh matcher predicts cheap steps; the string's own work reveals they are not
    compiled = llama.compiler.compile_grammar(DASHES)
    m = xmask.GrammarMatcher(compiled)

    def accept_fresh():
        m.reset()
        assert m.accept_string("-" * 1000)

    assert _progress_during(accept_fresh, 10) > 0
    assert m.limit_error is None


def test_json_calls_keep_the_gil(llama):
    # the control: cheap calls never hand the GIL over
    ids = llama.encode(DOCS[0])
    m = xmask.GrammarMatcher(llama.json)
    bm = np.zeros((1, llama.n_words), np.int32)

    def walk():
        m.reset()
        for t in ids:
            m.fill_next_token_bitmask(bm)
            assert m.accept_token(t)
        m.reset()
        assert m.accept_string(DOCS[1])

    walk()  # classify the states first (a first fill of a state may release the GIL)
    assert _progress_during(walk, 5) == 0


def test_threads_on_slow_steps_match_one_thread(llama):
    # the released-GIL paths run in parallel on one compiled grammar: same traces as alone
    import hashlib

    compiled = llama.compiler.compile_grammar(DASHES)
    voc = llama.info.decoded_vocab
    dashes = [i for i, b in enumerate(voc) if b and set(b) == {45}]
    b_tok = voc.index(b"b")

    def script(seed):
        rng = np.random.default_rng(seed)
        m = _deep(compiled)
        bm = np.zeros((1, llama.n_words), np.int32)
        trace = []
        for _ in range(40):
            r = rng.random()
            if r < 0.4:
                trace.append(m.accept_token(int(rng.choice(dashes))))
            elif r < 0.55:
                trace.append(m.accept_token(b_tok))
            elif r < 0.7:
                trace.append(m.accept_string("-" * int(rng.integers(1, 60)) + "b"))
            elif r < 0.85 and m.num_accepted_tokens > 0:
                m.rollback(1)
                trace.append("rollback")
            else:
                m.fill_next_token_bitmask(bm)
                trace.append(hashlib.blake2b(bm.tobytes(), digest_size=8).hexdigest())
        trace.append((m.num_accepted_tokens, m.limit_error is None))
        return trace

    alone = [script(s) for s in range(4)]
    got, errors = [None] * 4, []

    def body(i):
        try:
            got[i] = script(i)
        except BaseException as e:  # reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=body, args=(i,)) for i in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=600)
    assert not errors, errors
    assert got == alone
