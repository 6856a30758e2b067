"""The warm-up's helper threads (issue 10: a warm-up must not take the cores from a server's
other threads).

``compiled.precompute(max_threads=k)`` classifies on up to ``k`` threads of xmask's own
warm-up pool (never an OpenMP pool other code shares) while the caller waits.  The pool's
threads lower their OS priority once (Linux: nice +10), there are never more of them than the
CPUs the process may use, repeated warm-ups reuse them, and an error raised on one of them
reaches the caller.
"""

import os
import signal
import sys
import threading
import warnings

import pytest

import xmask
from conftest import tokenizer_json
from xmask.compiler.mask_cache import usable_cpus

pytest.importorskip("tokenizers")

# a grammar with hundreds of top states: its warm-up takes long enough to be watched
SCHEMA = {"type": "object", "properties": {
    "a": {"type": "string", "maxLength": 30}, "b": {"type": "integer", "maximum": 1000},
    "c": {"type": "array", "items": {"type": "string", "maxLength": 12}}},
    "required": ["a", "b", "c"]}


@pytest.fixture(scope="module")
def llama3_info():
    return xmask.TokenizerInfo.from_huggingface(str(tokenizer_json("llama3")))


def _nice_values() -> dict:
    """Thread id -> nice value, for every thread of this process (Linux /proc)."""
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # the thread ended meanwhile
        out[int(tid)] = int(fields[16])  # field 19 of stat: nice (fields[0] is field 3)
    return out


def test_usable_cpus_is_the_affinity_mask():
    want = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert usable_cpus() == want >= 1


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice is Linux's")
@pytest.mark.parametrize("max_threads", [1, 8])
def test_workers_run_at_a_lower_priority_and_the_caller_does_not(llama3_info, max_threads):
    compiler = xmask.GrammarCompiler(llama3_info, cache_enabled=False)
    base = os.getpriority(os.PRIO_PROCESS, 0)
    low = min(base + 10, 19)
    seen: dict = {}
    caller: list = []

    def warm():
        caller.append(threading.get_native_id())
        for _ in range(3):  # the pool's threads are reused, never multiplied
            compiler.compile_json_schema(SCHEMA).precompute(max_threads=max_threads)

    t = threading.Thread(target=warm)
    t.start()
    while t.is_alive():
        for tid, nice in _nice_values().items():
            seen.setdefault(tid, set()).add(nice)
    t.join()
    workers = {tid for tid, v in seen.items() if low in v}
    assert workers, "no low-priority warm-up thread was seen"
    assert len(workers) <= usable_cpus()  # never more pool threads than CPUs
    assert all(seen[tid] <= {base, low} for tid in workers)  # lowered once, at their start
    assert seen.get(caller[0], {base}) == {base}  # the caller keeps its priority
    assert seen[threading.get_native_id()] == {base}
    assert os.getpriority(os.PRIO_PROCESS, 0) == base


def test_threaded_precompute_matches_a_single_thread(llama3_info):
    compiler = xmask.GrammarCompiler(llama3_info, cache_enabled=False)
    one = compiler.compile_json_schema(SCHEMA).precompute(max_threads=1)
    many = compiler.compile_json_schema(SCHEMA).precompute(max_threads=8)
    assert one.cache_summary() == many.cache_summary()
    assert one.cache_stats() == many.cache_stats()


def test_a_limit_error_on_any_thread_reaches_the_caller(llama3_info):
    limits = xmask.CompileLimits(max_classify_tops=1)
    compiled = xmask.GrammarCompiler(llama3_info, cache_enabled=False, limits=limits) \
        .compile_grammar('root ::= (a | b)+\na ::= "x" [a-z]*\nb ::= "x" [0-9]*')
    with pytest.raises(xmask.GrammarLimitError, match="max_classify_tops"):
        compiled.precompute(max_threads=4)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_starts_its_own_pool(llama3_info):
    compiler = xmask.GrammarCompiler(llama3_info, cache_enabled=False)
    parent = compiler.compile_json_schema(SCHEMA).precompute(max_threads=2)  # the pool exists
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads (3.12+)
        pid = os.fork()
    if pid == 0:  # the child: a warm-up must finish (the parent's pool threads are not here)
        code = 1
        try:
            signal.alarm(60)
            child = compiler.compile_json_schema(SCHEMA).precompute(max_threads=2)
            code = 0 if child.cache_stats() == parent.cache_stats() else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status


def test_after_a_warm_up_no_fill_classifies_even_mid_character(llama3_info):
    """A long bounded string's character tail is called from every position (more return
    states than a walk follows): fills classify its states with the frame under them, as
    (state, return state) pairs.  The warm-up classifies those pairs too, so no fill of a
    warmed-up grammar classifies anything, and its masks equal a lazily built grammar's."""
    import tokenizers

    from xmask.runtime import _mask_cache

    schema = {"type": "object", "properties": {"t": {"type": "string", "maxLength": 120}},
              "required": ["t"]}
    compiler = xmask.GrammarCompiler(llama3_info, cache_enabled=False)
    # (without the overlays of states with many uncertain tokens, which fills make: see
    # test_pair_entries.test_a_warm_up_leaves_the_overlays_to_the_fills)
    old = _mask_cache.set_pair_min_uncertain(-1)
    try:
        warm = compiler.compile_json_schema(schema).precompute(max_threads=2)
        lazy = compiler.compile_json_schema(schema)
    finally:
        _mask_cache.set_pair_min_uncertain(old)
    tok = tokenizers.Tokenizer.from_file(str(tokenizer_json("llama3")))
    text = '{"t": "' + "é€😀\\u00e9\\\\ab" * 8 + '"}'
    ids = tok.encode(text, add_special_tokens=False).ids
    before = warm._mask_cache.memory_parts()
    assert before.get("pair_entries", 0) > 0
    mw, ml = xmask.GrammarMatcher(warm), xmask.GrammarMatcher(lazy)
    bw = xmask.allocate_token_bitmask(1, llama3_info.vocab_size)
    bl = xmask.allocate_token_bitmask(1, llama3_info.vocab_size)
    for tid in ids:
        mw.fill_next_token_bitmask(bw)
        ml.fill_next_token_bitmask(bl)
        assert (bw == bl).all()
        assert mw.accept_token(tid) and ml.accept_token(tid)
    assert warm._mask_cache.memory_parts() == before  # nothing classified by the fills
    assert lazy._mask_cache.memory_parts().get("pair_entries", 0) > 0  # the lazy one did


def test_a_warm_up_leaves_too_many_pairs_to_the_fills(llama3_info, monkeypatch):
    import tokenizers

    from xmask.compiler import mask_cache

    schema = {"type": "object", "properties": {"t": {"type": "string", "maxLength": 120}},
              "required": ["t"]}
    compiler = xmask.GrammarCompiler(llama3_info, cache_enabled=False)
    monkeypatch.setattr(mask_cache, "MAX_PAIR_WALKS", 10)
    warm = compiler.compile_json_schema(schema).precompute(max_threads=2)
    assert warm.cache_summary()["pending"] == 0  # every state, still
    before = warm._mask_cache.memory_parts()
    m = xmask.GrammarMatcher(warm)
    bitmask = xmask.allocate_token_bitmask(1, llama3_info.vocab_size)
    m.fill_next_token_bitmask(bitmask)
    assert m.accept_string('{"t": "ab')
    tok = tokenizers.Tokenizer.from_file(str(tokenizer_json("llama3")))
    for piece in ("Ã", "©"):  # "é" as two tokens: a boundary inside the character
        m.fill_next_token_bitmask(bitmask)
        assert m.accept_token(tok.token_to_id(piece))
    m.fill_next_token_bitmask(bitmask)
    # the fills classified pairs the warm-up left to them
    assert warm._mask_cache.memory_parts()["pair_entries"] > before.get("pair_entries", 0)
