"""The warm-up's helper threads (issue 10: a warm-up must not take the cores from a server's
other threads).

``compiled.precompute(max_threads=k)`` classifies on the calling thread plus helper threads
of its own (started and joined per call, never an OpenMP pool other code shares).  The helpers
lower their OS priority (Linux: nice +10), there are never more threads than the CPUs the
process may use, and errors raised on a helper still reach the caller.
"""

import os
import sys
import threading

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
@pytest.mark.skipif(usable_cpus() < 2, reason="one CPU: the warm-up runs on the caller alone")
def test_helpers_run_at_a_lower_priority_and_the_caller_does_not(llama3_info):
    compiled = xmask.GrammarCompiler(llama3_info, cache_enabled=False).compile_json_schema(SCHEMA)
    base = os.getpriority(os.PRIO_PROCESS, 0)
    before = set(_nice_values())
    seen: dict = {}
    caller: list = []

    def warm():
        caller.append(threading.get_native_id())
        compiled.precompute(max_threads=8)

    t = threading.Thread(target=warm)
    t.start()
    while t.is_alive():
        for tid, nice in _nice_values().items():
            if tid not in before:
                seen.setdefault(tid, set()).add(nice)
    t.join()
    assert compiled.cache_summary()["pending"] == 0
    helpers = {tid: v for tid, v in seen.items() if tid != caller[0]}
    assert helpers, "no helper thread was seen while the warm-up ran"
    # never more threads than CPUs: the caller and at most usable_cpus() - 1 helpers
    assert len(helpers) <= usable_cpus() - 1
    assert all(v <= {min(base + 10, 19), base} for v in helpers.values()), helpers
    assert any(min(base + 10, 19) in v for v in helpers.values()), helpers
    assert seen.get(caller[0], {base}) == {base}  # the caller keeps its priority
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
