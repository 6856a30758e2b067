"""GrammarMatcher under abuse: objects made without __init__, re-init, two threads on one matcher,
odd integer types, copy.copy / copy.deepcopy.  Whatever the caller does, the answer is a clear
xmask error or a correct result (masks equal the slow reference), never a crash.  Crash repros
run in a subprocess so a segfault fails the test instead of killing pytest."""

import copy
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest
from matchers_util import DOCS, Tok, advanced, fast_row, reference_row

import xmask


@pytest.fixture(scope="module")
def llama():
    return Tok("llama3")


def run_python(code):
    """Run ``code`` in a fresh interpreter; (returncode, stdout, stderr)."""
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                       text=True, timeout=120, cwd=os.path.dirname(__file__))
    return r.returncode, r.stdout, r.stderr


# --------------------------------------------------------------- created without __init__

UNINIT_CALLS = {
    "reset": "m.reset()",
    "repr": "repr(m)",
    "find_jump_forward_string": "m.find_jump_forward_string()",
    "accept_token": "m.accept_token(1)",
    "accept_token_np": "m.accept_token(np.int64(1))",
    "accept_string": "m.accept_string('[')",
    "accept_string_long": "m.accept_string('[' * 10000)",
    "fill": "m.fill_next_token_bitmask(np.zeros((1, 4008), np.int32))",
    "reference_fill": "m._reference_fill_next_token_bitmask(np.zeros((1, 4008), np.int32))",
    "rollback": "m.rollback(1)",
    "rollback0": "m.rollback(0)",
    "is_terminated": "m.is_terminated()",
    "is_completed": "m.is_completed()",
    "fork": "m.fork()",
    "copy": "copy.copy(m)",
    "deepcopy": "copy.deepcopy(m)",
    "traverse_draft_tree": "m.traverse_draft_tree([-1], [-1], [0], np.zeros((1, 4008), np.int32))",
    "stop_token_ids": "m.stop_token_ids",
    "num_accepted_tokens": "m.num_accepted_tokens",
    "temperature": "m.temperature",
    "max_rollback_tokens": "m.max_rollback_tokens",
    "compiled_grammar": "m.compiled_grammar",
    "debug_state": "m._debug_print_internal_state()",
    "debug_tops": "m._debug_top_states()",
    "debug_cost": "m._debug_fill_cost()",
    "debug_nodes": "m._debug_arena_nodes()",
    "batch_fill": "xmask.BatchGrammarMatcher(2).batch_fill_next_token_bitmask("
                  "[m], np.zeros((1, 4008), np.int32))",
    "batch_fill_mixed": "xmask.BatchGrammarMatcher(2).batch_fill_next_token_bitmask("
                        "[good, m], np.zeros((2, 4008), np.int32))",
    "batch_accept_token": "xmask.BatchGrammarMatcher.batch_accept_token([m], [1])",
    "batch_accept_string": "xmask.BatchGrammarMatcher.batch_accept_string([m], ['['])",
    "batch_rollback": "xmask.BatchGrammarMatcher.batch_rollback([m], 0)",
    "batch_temperature": "xmask.BatchGrammarMatcher.batch_fill_temperature("
                         "[m], np.zeros(1, np.float32))",
}


def test_uninitialized_matcher_raises_clear_error_never_crashes(llama):
    # One interpreter runs every call on a GrammarMatcher.__new__ object and prints what each
    # raised; a segfault anywhere shows as a negative return code.
    code = f"""
        import copy, sys
        sys.path.insert(0, "..")
        import numpy as np
        import xmask
        from matchers_util import Tok
        good = xmask.GrammarMatcher(Tok("llama3").json)
        calls = {UNINIT_CALLS!r}
        for name, call in calls.items():
            m = xmask.GrammarMatcher.__new__(xmask.GrammarMatcher)
            try:
                value = eval(call)
                print(name, "RETURNED", value if name == "repr" else type(value), flush=True)
            except Exception as e:
                print(name, type(e).__name__, isinstance(e, xmask.XmaskError), str(e), flush=True)
        print("DONE")
        """
    rc, out, err = run_python(code)
    assert rc == 0, f"crashed (rc {rc}) after:\n{out}\n{err[-2000:]}"
    lines = {ln.split(" ", 1)[0]: ln for ln in out.splitlines()}
    assert "DONE" in lines
    for name in UNINIT_CALLS:
        if name == "repr":  # repr never raises (debuggers, error reports): it says so instead
            assert lines[name] == "repr RETURNED <GrammarMatcher not initialized>"
            continue
        assert "XmaskError True GrammarMatcher is not initialized" in lines[name], lines[name]


def test_uninitialized_matcher_can_be_initialized_later(llama):
    # (Calls before __init__ are checked in a subprocess above: a regression would crash.)
    m = xmask.GrammarMatcher.__new__(xmask.GrammarMatcher)
    assert repr(m) == "<GrammarMatcher not initialized>"
    m.__init__(llama.json)
    ids = llama.encode(DOCS[1])
    for t in ids[:6]:
        assert m.accept_token(t)
    np.testing.assert_array_equal(fast_row(m, llama.n_words), reference_row(m, llama.n_words))


# ------------------------------------------------------------------- reference fill checks


def test_reference_fill_validates_like_fill(llama):
    m = xmask.GrammarMatcher(llama.json)
    good = np.zeros((2, llama.n_words), np.int32)
    bad_inputs = [
        (good, 100000), (good, 2), (good, -1), (good, 1.0), (good, True),
        (np.zeros((2, llama.n_words + 1), np.int32), 0),
        (np.zeros((2, llama.n_words), np.int64), 0),
        (np.zeros((2, llama.n_words), np.int32)[:, ::-1], 0),
        ([[0] * llama.n_words], 0),
    ]
    for bitmask, index in bad_inputs:
        with pytest.raises(xmask.BitmaskError) as fast:
            m.fill_next_token_bitmask(bitmask, index)
        with pytest.raises(xmask.BitmaskError) as ref:
            m._reference_fill_next_token_bitmask(bitmask, index)
        assert str(ref.value) == str(fast.value)
    ref = np.full((2, llama.n_words), 7, np.int32)
    m._reference_fill_next_token_bitmask(ref, np.int64(1))
    np.testing.assert_array_equal(ref[1], fast_row(m, llama.n_words))
    assert (ref[0] == 7).all()


def test_reference_fill_after_stop_token_raises_like_fill(llama):
    m = advanced(llama.json, llama.encode(DOCS[1]), len(llama.encode(DOCS[1])))
    assert m.accept_token(llama.info.stop_token_ids[0]) and m.is_terminated()
    bm = np.zeros((1, llama.n_words), np.int32)
    with pytest.raises(xmask.XmaskError, match="terminated"):
        m.fill_next_token_bitmask(bm)
    with pytest.raises(xmask.XmaskError, match="terminated"):
        m._reference_fill_next_token_bitmask(bm)


# ------------------------------------------------------------------------------- threads


def test_two_threads_on_one_matcher_get_clear_errors_or_correct_results(llama):
    m = xmask.GrammarMatcher(llama.json)
    ids = llama.encode(DOCS[0])
    errors = []

    def hammer(kind):
        bm = np.zeros((1, llama.n_words), np.int32)
        for _ in range(40):
            try:
                if kind == 0:
                    m._reference_fill_next_token_bitmask(bm)  # long, without the GIL
                    m.accept_string("[" * 5000)  # > 4096 bytes: without the GIL
                    m.fill_next_token_bitmask(bm)
                    m.find_jump_forward_string()
                elif kind == 1:
                    m.reset()
                    for t in ids[:8]:
                        m.accept_token(t)
                    m.fill_next_token_bitmask(bm)
                    m.is_completed()
                    m.rollback(2)
                else:  # re-init and batch calls, with a second matcher nobody else uses
                    m.__init__(llama.json)
                    batch.batch_fill_next_token_bitmask([other, m], bm2)
                    xmask.BatchGrammarMatcher.batch_accept_token([other, m], [ids[0], ids[0]])
                    xmask.BatchGrammarMatcher.batch_rollback([other, m], 1)
            except Exception as e:  # noqa: BLE001 - every exception is classified below
                errors.append(e)

    other = xmask.GrammarMatcher(llama.json)
    batch = xmask.BatchGrammarMatcher(2)
    bm2 = np.zeros((2, llama.n_words), np.int32)
    threads = [threading.Thread(target=hammer, args=(i % 3,)) for i in range(5)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for e in errors:
        assert isinstance(e, xmask.XmaskError), repr(e)
        msg = str(e)
        assert ("used by another thread" in msg or "cannot roll back" in msg
                or "terminated" in msg), msg
    # Used correctly afterwards, the matchers are sound (a batch that found `m` busy left
    # `other` unchanged and usable).
    for mm in (m, other):
        mm.reset()
        for t in ids[:5]:
            assert mm.accept_token(t)
        np.testing.assert_array_equal(fast_row(mm, llama.n_words),
                                      reference_row(mm, llama.n_words))
    m.reset()
    for t in ids:
        np.testing.assert_array_equal(fast_row(m, llama.n_words), reference_row(m, llama.n_words))
        assert m.accept_token(t)
    assert m.is_completed()


def test_concurrent_use_is_detected(llama):
    # A thread inside a long GIL-free call; the other thread's calls during it must raise the
    # "used by another thread" error (the call releases the GIL, so the main thread runs).
    m = xmask.GrammarMatcher(llama.json)
    m.accept_string('{"a": "')

    def worker():
        bm = np.zeros((1, llama.n_words), np.int32)
        for _ in range(10):
            m._reference_fill_next_token_bitmask(bm)

    th = threading.Thread(target=worker)
    th.start()
    busy = ok = 0
    while th.is_alive():
        try:
            m.is_completed()
            ok += 1
        except xmask.XmaskError as e:
            assert "used by another thread" in str(e)
            busy += 1
    th.join()
    assert busy >= 1
    np.testing.assert_array_equal(fast_row(m, llama.n_words), reference_row(m, llama.n_words))


# --------------------------------------------------------------------------------- re-init


def _rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif("asan" in os.environ.get("LD_PRELOAD", ""),
                    reason="AddressSanitizer keeps freed memory in quarantine: RSS grows anyway")
def test_reinit_frees_previous_buffers(llama):
    ids = llama.encode(DOCS[0])
    m = xmask.GrammarMatcher(llama.json)

    def loop(n):
        for _ in range(n):
            m.__init__(llama.json)
            for t in ids[:10]:
                assert m.accept_token(t)

    loop(300)  # warm up: the allocator reuses what earlier tests freed
    before = _rss()
    loop(1000)
    # Leaking per-matcher buffers is ~150 KB per re-init on Llama-3 (150 MB here).
    assert _rss() - before < 30e6
    m.reset()
    for t in ids:
        np.testing.assert_array_equal(fast_row(m, llama.n_words), reference_row(m, llama.n_words))
        assert m.accept_token(t)


def test_reinit_to_another_vocabulary_works(llama):
    big = Tok("llama3", vocab_size=llama.vocab_size + 4000)
    m = xmask.GrammarMatcher(llama.json)
    assert m.accept_string("[1")
    m.__init__(big.json, override_stop_tokens=[big.vocab_size - 1])
    assert m.num_accepted_tokens == 0 and m.stop_token_ids == [big.vocab_size - 1]
    ids = big.encode(DOCS[1])
    for t in ids:
        np.testing.assert_array_equal(fast_row(m, big.n_words), reference_row(m, big.n_words))
        assert m.accept_token(t)
    assert m.accept_token(big.vocab_size - 1) and m.is_terminated()


def test_failed_reinit_leaves_a_sound_matcher(llama):
    big = Tok("llama3", vocab_size=llama.vocab_size + 4000)
    ids = llama.encode(DOCS[1])
    m = advanced(llama.json, ids, 3)
    bad_calls = [
        ((big.json,), {"override_stop_tokens": [big.vocab_size + 5]}),
        ((big.json,), {"override_stop_tokens": [1, "x"]}),
        ((big.json,), {"default_temperature": "hot"}),
        (("not a grammar",), {}),
    ]
    for args, kwargs in bad_calls:
        with pytest.raises((xmask.XmaskError, TypeError, ValueError)):
            m.__init__(*args, **kwargs)
        # Either the old matcher survives intact or every call raises "not initialized"; never
        # an out-of-bounds read with the other vocabulary's size.
        with pytest.raises(xmask.InvalidTokenError):
            m.accept_token(llama.vocab_size + 10)
        assert m.num_accepted_tokens == 3
        np.testing.assert_array_equal(fast_row(m, llama.n_words), reference_row(m, llama.n_words))
    for t in ids[3:]:
        assert m.accept_token(t)
    assert m.is_completed()


# --------------------------------------------------------------------------- integer types


def _torch_int(v):
    torch = pytest.importorskip("torch")
    return torch.tensor(v)


INTS = [np.int64(1), np.int32(1), np.uint8(1), "torch"]


@pytest.mark.parametrize("kind", range(len(INTS)))
def test_integral_types_accepted_everywhere(llama, kind):
    one = _torch_int(1) if INTS[kind] == "torch" else INTS[kind]
    ids = llama.encode(DOCS[1])
    m = advanced(llama.json, ids, 4)
    m.rollback(one)
    assert m.num_accepted_tokens == 3
    stop = _torch_int(128009) if INTS[kind] == "torch" else np.int64(128009)
    assert xmask.GrammarMatcher(llama.json, override_stop_tokens=stop).stop_token_ids == [128009]
    assert xmask.GrammarMatcher(llama.json, override_stop_tokens=[stop]).stop_token_ids == [128009]
    assert m.accept_token(_torch_int(ids[3]) if INTS[kind] == "torch" else np.int64(ids[3]))
    bm = np.zeros((2, llama.n_words), np.int32)
    m.fill_next_token_bitmask(bm, one)
    np.testing.assert_array_equal(bm[1], reference_row(m, llama.n_words))
    m._reference_fill_next_token_bitmask(bm, one)
    other = advanced(llama.json, ids, 2)
    xmask.BatchGrammarMatcher.batch_rollback([m, other], one)
    xmask.BatchGrammarMatcher.batch_rollback([m, other], [one, one])
    assert (m.num_accepted_tokens, other.num_accepted_tokens) == (2, 0)
    tree = np.zeros((2, llama.n_words), np.int32)
    first = ids[2]
    assert m.traverse_draft_tree(np.array([1, -1], np.int32), np.array([-1, -1], np.int16),
                                 [0, np.int64(first)], tree)
    np.testing.assert_array_equal(tree[0], reference_row(m, llama.n_words))


BAD_COUNTS = [1.0, 1.5, "1", None, True, False, [1], -1, np.int64(-1), np.float64(1.0)]


@pytest.mark.parametrize("bad", BAD_COUNTS, ids=repr)
def test_bad_counts_and_ids_raise_clear_errors(llama, bad):
    m = advanced(llama.json, llama.encode(DOCS[1]), 3)
    bm = np.zeros((1, llama.n_words), np.int32)
    with pytest.raises(xmask.XmaskError):
        m.rollback(bad)
    with pytest.raises(xmask.XmaskError):
        xmask.BatchGrammarMatcher.batch_rollback([m], [bad])
    if bad is not None and not isinstance(bad, list):
        with pytest.raises(xmask.XmaskError):
            xmask.BatchGrammarMatcher.batch_rollback([m], bad)
    with pytest.raises(xmask.XmaskError):
        m.accept_token(bad)
    with pytest.raises(xmask.XmaskError):
        m.fill_next_token_bitmask(bm, bad)
    assert m.num_accepted_tokens == 3


def test_draft_tree_rejects_non_integer_arrays(llama):
    m = xmask.GrammarMatcher(llama.json)
    bm = np.zeros((2, llama.n_words), np.int32)
    tok = llama.info.decoded_vocab.index(b"[")
    for nxt, sib, toks in [
        ([1.0, -1.0], [-1, -1], [0, tok]),
        ([1, -1], [-1.5, -1], [0, tok]),
        ([1, -1], [-1, -1], [0, float(tok)]),
        ([True, False], [-1, -1], [0, tok]),
        ([1, -1], [-1, -1], ["0", "1"]),
    ]:
        with pytest.raises(ValueError, match="integer"):
            m.traverse_draft_tree(nxt, sib, toks, bm)


# ------------------------------------------------------------------------------- copying


@pytest.mark.parametrize("how", [copy.copy, copy.deepcopy], ids=["copy", "deepcopy"])
def test_copy_is_a_fork(llama, how):
    a_ids, b_ids = llama.encode(DOCS[0]), llama.encode(DOCS[2])
    parent = advanced(llama.json, a_ids, 5)
    child = how(parent)
    assert isinstance(child, xmask.GrammarMatcher) and child is not parent
    assert child.compiled_grammar is parent.compiled_grammar
    assert child.num_accepted_tokens == 5 and child.stop_token_ids == parent.stop_token_ids
    child.rollback(5)
    for step in range(max(len(a_ids), len(b_ids))):
        for m, ids, k in ((parent, a_ids, 5 + step), (child, b_ids, step)):
            if k < len(ids):
                np.testing.assert_array_equal(fast_row(m, llama.n_words),
                                              reference_row(m, llama.n_words))
                assert m.accept_token(ids[k])
    assert parent.is_completed() and child.is_completed()
    holder = {"m": parent}
    assert copy.deepcopy(holder)["m"] is not parent


@pytest.mark.parametrize("bad", ["hot", b"1", True, None, float("nan"), [1.0]])
def test_float_arguments_name_themselves(llama, bad):
    compiled = llama.json
    if bad is not None:
        with pytest.raises(ValueError, match="default_temperature must be a number"):
            xmask.GrammarMatcher(compiled, default_temperature=bad)
    matcher = xmask.GrammarMatcher(compiled, default_temperature=np.float32(0.5))
    assert matcher.temperature == 0.5
    bitmask = np.full((1, (compiled.tokenizer_info.vocab_size + 31) // 32), -1, np.int32)
    with pytest.raises(ValueError, match="time_threshold must be a number"):
        matcher.traverse_draft_tree([-1], [-1], [0], bitmask, time_threshold=bad)
