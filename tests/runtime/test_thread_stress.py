"""Thread-safety stress tests (fixed seeds), the contract README's "Threads" paragraph states:

* one ``CompiledGrammar`` shared by many threads, each with its own matcher running a random
  mix of accept / fill / rollback / fork / reset, gives every thread exactly the trace one
  thread gets running the same scripts one after another on its own fresh grammar;
* several threads compiling on one ``GrammarCompiler`` (its cache shared) get grammars whose
  masks equal those of grammars compiled by one thread on a fresh compiler;
* long fills (a big batch) and long accepts (a long string) leave the GIL, so another Python
  thread makes progress during them; a short accept keeps it (the GIL hand-off would cost
  more than the work);
* the recursion-limit guard of one compile stays raised while another thread's compile still
  runs.

The GIL checks set the switch interval to 1,000 s: then no thread is ever forced off the GIL,
and a counter thread can only advance while the main thread is inside a call that released it.
"""

import hashlib
import json
import sys
import threading
import time

import numpy as np
import pytest
from conftest import require_data
from matchers_util import DOCS, Tok, advanced

import xmask

THREADS = 8
STEPS = 150


@pytest.fixture(scope="module")
def llama():
    return Tok("llama3")


SCHEMA = {"type": "object", "properties": {
    "name": {"type": "string", "maxLength": 12},
    "n": {"type": "integer", "minimum": -40, "maximum": 4000},
    "tags": {"type": "array", "items": {"enum": ["alpha", "b\u00e9ta", "gamma"]}},
    "x": {"anyOf": [{"type": "number"}, {"type": "null"}]}}, "required": ["name", "n"]}


# a long bounded string: one state per position calling a shared character tail, whose states
# get one entry per (state, position) pair, classified by whichever thread meets it first
SCHEMA_LONG = {"type": "object", "properties": {
    "text": {"type": "string", "maxLength": 300}, "n": {"type": "integer"}}, "required": ["text"]}


def _digest(row):
    return hashlib.blake2b(row.tobytes(), digest_size=8).hexdigest()


def _script(compiled, words, seed, reference_every=0):
    """Run a random op mix with ``seed`` on a new matcher; the trace of every result and mask.
    With ``reference_every``, every such step's mask is also checked against the reference."""
    rng = np.random.default_rng(seed)
    m = xmask.GrammarMatcher(compiled)
    bm = np.zeros((2, words), np.int32)
    accepted = 0
    trace = []
    for step in range(STEPS):
        if m.is_terminated():  # a stop token was accepted: no mask until a rollback or reset
            if accepted:
                m.rollback(1)
                accepted -= 1
            else:
                m.reset()
            trace.append(("terminated",))
            continue
        m.fill_next_token_bitmask(bm, 0)
        trace.append(("mask", _digest(bm[0])))
        if reference_every and step % reference_every == 0:
            m._reference_fill_next_token_bitmask(bm, 1)
            assert np.array_equal(bm[0], bm[1]), f"seed {seed} step {step}: mask != reference"
        r = rng.random()
        if r < 0.6:
            allowed = np.flatnonzero(np.unpackbits(bm[0].view(np.uint8), bitorder="little"))
            t = int(allowed[rng.integers(len(allowed))])
            ok = m.accept_token(t)
            accepted += ok
            trace.append(("accept", t, ok))
        elif r < 0.7:
            t = int(rng.integers(compiled.tokenizer_info.vocab_size))
            ok = m.accept_token(t)
            accepted += ok
            trace.append(("accept?", t, ok))
        elif r < 0.85 and accepted:
            k = int(rng.integers(1, min(3, accepted) + 1))
            m.rollback(k)
            accepted -= k
            trace.append(("rollback", k))
        elif r < 0.92:
            m = m.fork()
            trace.append(("fork",))
        elif r < 0.95:
            m.reset()
            accepted = 0
            trace.append(("reset",))
        else:
            ok = m.accept_string('"a\u00e9')
            trace.append(("string", ok))
            if ok:
                m.reset()  # keeps the token count exact for rollback
                accepted = 0
    trace.append(("end", m.is_terminated(), m.find_jump_forward_string()))
    return trace


def _run_threads(fn, n):
    results, errors = [None] * n, []
    barrier = threading.Barrier(n)

    def body(i):
        try:
            barrier.wait()
            results[i] = fn(i)
        except BaseException as e:  # reported by the main thread
            errors.append((i, repr(e)))

    threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=600)
    assert not any(th.is_alive() for th in threads), "a thread did not finish"
    assert not errors, errors
    return results


@pytest.mark.parametrize("grammar", ["builtin_json", "schema", "long_string"])
def test_threads_sharing_one_compiled_grammar_match_one_thread(llama, grammar):
    def fresh():
        compiler = xmask.GrammarCompiler(llama.info, cache_enabled=False)
        return (compiler.compile_builtin_json_grammar() if grammar == "builtin_json"
                else compiler.compile_json_schema(SCHEMA if grammar == "schema" else SCHEMA_LONG))

    alone = fresh()
    expected = [_script(alone, llama.n_words, 100 + i, reference_every=50 if i < 2 else 0)
                for i in range(THREADS)]
    shared = fresh()  # a fresh lazy cache: the threads race to classify its states
    got = _run_threads(lambda i: _script(shared, llama.n_words, 100 + i), THREADS)
    for i in range(THREADS):
        assert got[i] == expected[i], f"thread {i}: trace differs from the one-thread run"


MASKBENCH = ["BFCL_java_10.json", "BFCL_multiple_35.json", "BFCL_simple_152.json",
             "Github_easy---o32246.json", "Github_easy---o59671.json",
             "Github_easy---o83684.json", "Github_medium---o8448.json",
             "Github_trivial---o58640.json"]


def _fingerprint(compiled, tok, text):
    """Digests of the masks along ``text``'s tokens (and the accept results)."""
    m = xmask.GrammarMatcher(compiled)
    bm = np.zeros((1, tok.n_words), np.int32)
    out = []
    for t in tok.encode(text)[:40]:
        m.fill_next_token_bitmask(bm)
        out.append((_digest(bm[0]), m.accept_token(t)))
    return out


def test_threads_compiling_on_one_compiler_match_one_thread(llama):
    jobs = []
    for name in MASKBENCH:
        entry = json.loads(require_data("maskbench", name).read_text())
        text = json.dumps(next(t["data"] for t in entry["tests"] if t["valid"]))
        for ws in (True, False):
            jobs.append((entry["schema"], ws, text))
    jobs.append((SCHEMA, True, '{"name": "x", "n": 7, "tags": ["alpha"]}'))

    def compile_all(compiler, order):
        return {k: _fingerprint(compiler.compile_json_schema(jobs[k][0], any_whitespace=jobs[k][1]),
                                llama, jobs[k][2]) for k in order}

    expected = compile_all(xmask.GrammarCompiler(llama.info), range(len(jobs)))
    shared = xmask.GrammarCompiler(llama.info)  # cache on: threads hit each other's entries
    rng = np.random.default_rng(7)
    orders = [rng.permutation(len(jobs)).tolist() for _ in range(4)]
    got = _run_threads(lambda i: compile_all(shared, orders[i]), 4)
    for i in range(4):
        assert got[i] == expected, f"thread {i}: a grammar compiled on the shared compiler differs"
    info = shared.cache_info()
    assert info["memory_entries"] == len(jobs)
    # 4 x len(jobs) requests; two threads may both miss a key they race for
    assert info["memory_hits"] >= len(jobs)


# ----------------------------------------------------------------------------- the GIL

def _progress_during(call):
    """How far a counter thread advanced while ``call()`` ran (0: the call kept the GIL)."""
    counter = [0]
    stop = threading.Event()

    def count():
        while not stop.is_set():
            counter[0] += 1
            time.sleep(0)  # gives the GIL back at once when the main thread wants it

    before = sys.getswitchinterval()
    sys.setswitchinterval(1000.0)  # no forced switches: only a released GIL lets it run
    th = threading.Thread(target=count)
    try:
        th.start()
        time.sleep(0.05)  # the counter thread is running
        c0 = counter[0]
        call()
        c1 = counter[0]
    finally:
        stop.set()
        th.join()
        sys.setswitchinterval(before)
    return c1 - c0


# Long calls by construction, not by luck: each takes tens to hundreds of milliseconds, so the
# counter thread gets a core even when other processes load the machine.
BATCH_ROWS = 2048  # ~30-100 ms of fills on 2 threads (128 rows took ~0.4 ms: too short to see)
AB = 'root ::= "a" root | "a" root "b" | ""'  # O(depth) per byte even under the GSS
AB_BYTES = 5000  # > 4 KiB (accept_string releases the GIL past that), ~0.3 s: 12.5M closure items


def test_long_batch_fill_and_long_accept_leave_the_gil(llama):
    ids = llama.encode(DOCS[0])
    bases = [advanced(llama.json, ids, k) for k in range(len(ids))]
    matchers = [bases[k % len(bases)].fork() for k in range(BATCH_ROWS)]
    bm = np.zeros((len(matchers), llama.n_words), np.int32)
    batch = xmask.BatchGrammarMatcher(2)
    batch.batch_fill_next_token_bitmask(matchers, bm)  # warm the lazy cache
    assert _progress_during(lambda: batch.batch_fill_next_token_bitmask(matchers, bm)) > 0

    ab = llama.compiler.compile_grammar(AB)
    m = xmask.GrammarMatcher(ab, limits=xmask.RuntimeLimits(max_work_per_call=10**9))
    ok = []
    assert _progress_during(lambda: ok.append(m.accept_string("a" * AB_BYTES))) > 0
    assert ok == [True]


def test_short_accept_keeps_the_gil(llama):
    # the control for the two checks above: a call that keeps the GIL shows no progress
    m = xmask.GrammarMatcher(llama.json)
    t = llama.encode("[")[0]
    assert _progress_during(lambda: m.accept_token(t)) == 0


# ------------------------------------------------------------------- the recursion guard

def test_recursion_limit_stays_raised_while_another_thread_compiles():
    from xmask._recursion import deep_recursion

    base = sys.getrecursionlimit()
    inside, release, seen = threading.Event(), threading.Event(), []

    def long_compile():
        with deep_recursion():
            inside.set()
            release.wait(60)
            seen.append(sys.getrecursionlimit())

    th = threading.Thread(target=long_compile)
    th.start()
    assert inside.wait(60)
    with deep_recursion():  # a second compile starts and ends while the first still runs
        pass
    # a real compile too, ending while the first still runs
    xmask.Grammar.from_json_schema({"type": "array", "items": {"type": "integer"}})
    release.set()
    th.join()
    assert seen and seen[0] > base  # still raised when the first compile went on
    assert sys.getrecursionlimit() == base  # restored after the last one
