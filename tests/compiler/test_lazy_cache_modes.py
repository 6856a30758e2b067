"""The lazy token-mask cache's bookkeeping, serialization and limits (issue 10, "Tests").

* ``cache_summary()``: a lazy compile classifies nothing; fills classify states, so
  ``pending`` only goes down while ``classified + pending == top_states``; ``entries``,
  ``bytes`` and ``memory_size_bytes`` only grow; ``cache_stats()`` lists the classified states
  only; ``precompute()`` classifies the rest, returns the grammar and is idempotent, with any
  ``max_threads``, and ends where an eager compile starts.
* ``serialize_json`` / pickle of a partially classified grammar carry the classified entries;
  pending states stay pending after loading and are classified lazily; masks stay exact.
  A disk cache written by a lazy compiler does not make an eager compiler return pending states.
* Compile limits hold in every mode (same error lazily and eagerly), and the compile deadline
  stops an eager compile that classifies for too long (run in a capped child process).
"""

import json
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from conftest import child_address_cap

import xmask
from lazy_walks import (JSON_DOCS, case_docs, compile_case, record_key, reference_step,
                        tok)
from maskutil import bit

pytest.importorskip("tokenizers")

SUMMARY_KEYS = {"top_states", "classified", "pending", "entries", "bytes"}


def _check_summary(g, top_states=None):
    s = g.cache_summary()
    assert SUMMARY_KEYS <= set(s) and all(type(s[k]) is int for k in SUMMARY_KEYS), s
    assert s["classified"] + s["pending"] == s["top_states"], s
    assert 0 <= s["entries"] <= s["classified"] and s["bytes"] >= 0, s
    if top_states is not None:
        assert s["top_states"] == top_states, s
    stats = g.cache_stats()
    assert len(stats) == s["classified"], (len(stats), s)
    assert len({(r.rule, r.state) for r in stats}) == len(stats)
    return s


def _walk_exact(t, g, ids, every=1, start=0, matcher=None):
    """Walk ids[start:] (the matcher has accepted ids[:start]); masks equal the reference."""
    m = xmask.GrammarMatcher(g) if matcher is None else matcher
    bm = t.bitmask(2)
    for step in range(start, len(ids) + 1):
        m.fill_next_token_bitmask(bm, 0)
        if reference_step(step, len(ids), every):
            m._reference_fill_next_token_bitmask(bm, 1)
            assert np.array_equal(bm[0], bm[1]), f"step {step}: mask != reference"
        if step == len(ids):
            break
        assert bit(bm, ids[step]) and m.accept_token(ids[step]), f"step {step}"
    return m


# ---- cache_summary / cache_stats / memory_size_bytes ------------------------------------------

def test_cache_summary_tracks_lazy_classification():
    t = tok("llama3")
    case = "mb-Github_hard---o74005"
    g = compile_case(t.compiler(), case)
    s0 = _check_summary(g)
    assert s0["top_states"] > 100 and s0["classified"] == 0 and s0["entries"] == 0, s0
    assert g.cache_stats() == []
    m = xmask.GrammarMatcher(g)
    bm = t.bitmask(1)
    ids = t.encode(case_docs(case)[0])
    prev, prev_mem, grew = s0, g.memory_size_bytes, 0
    for step in range(len(ids) + 1):
        m.fill_next_token_bitmask(bm)
        s = _check_summary(g, s0["top_states"])
        if step == 0:
            assert s["classified"] > 0, "the first fill classified nothing"
        assert s["pending"] <= prev["pending"] and s["entries"] >= prev["entries"], (prev, s)
        assert s["bytes"] >= prev["bytes"] and g.memory_size_bytes >= prev_mem, (prev, s)
        grew += s["classified"] > prev["classified"]
        prev, prev_mem = s, g.memory_size_bytes
        if step < len(ids):
            assert m.accept_token(ids[step])
    assert grew > 1 and 0 < prev["pending"] < s0["pending"], (s0, prev)
    assert prev["bytes"] > s0["bytes"] and prev_mem > 0

    # filling states already classified classifies nothing
    again = xmask.GrammarMatcher(g)
    for tid in ids[:20]:
        again.fill_next_token_bitmask(bm)
        assert again.accept_token(tid)
    assert g.cache_summary() == prev

    assert g.precompute() is g
    done = _check_summary(g, s0["top_states"])
    assert done["pending"] == 0 and done["classified"] == done["top_states"]
    assert done["bytes"] >= prev["bytes"] and g.memory_size_bytes >= prev_mem
    stats = g.cache_stats()
    assert g.precompute(max_threads=4) is g  # idempotent
    assert g.cache_summary() == done and g.cache_stats() == stats

    eager = compile_case(t.compiler(precompute=True), case)
    s_eager = _check_summary(eager)
    assert s_eager["pending"] == 0
    assert (done["top_states"], done["entries"]) == (s_eager["top_states"], s_eager["entries"])
    assert sorted(map(record_key, stats)) == sorted(map(record_key, eager.cache_stats()))


@pytest.mark.parametrize("case", ["builtin-json", "gbnf-c", "mb-Github_hard---o74005"])
def test_precompute_with_any_threads_equals_an_eager_compile(case):
    t = tok("llama3")
    eager1 = compile_case(t.compiler(precompute=True, max_threads=1), case)
    eager2 = compile_case(t.compiler(precompute=True, max_threads=2), case)
    lazy1 = compile_case(t.compiler(), case).precompute(max_threads=1)
    lazy4 = compile_case(t.compiler(), case).precompute(max_threads=4)
    want = eager1.cache_stats()
    assert eager1.cache_summary()["pending"] == 0 and len(want) > 0
    for g in (eager2, lazy1, lazy4):
        assert g.cache_summary() == eager1.cache_summary()
        assert g.cache_stats() == want
        assert g.memory_size_bytes == eager1.memory_size_bytes


@pytest.mark.parametrize("threads", [1, 2])
def test_precompute_progress_counts_up_to_every_walk_and_changes_no_entry(threads):
    t = tok("llama3")
    case = "mb-Github_hard---o74005"
    calls = []
    g = compile_case(t.compiler(), case).precompute(
        max_threads=threads, progress=lambda done, total: calls.append((done, total)))
    eager = compile_case(t.compiler(precompute=True), case)
    assert g.cache_summary() == eager.cache_summary() and g.cache_stats() == eager.cache_stats()
    totals = {total for _, total in calls}
    done = [d for d, _ in calls]
    assert len(totals) == 1 and len(calls) > 1, calls  # chunked: a bar has something to show
    assert done == sorted(done) and done[-1] == totals.pop() and len(set(done)) == len(done)
    # nothing left to classify: one call saying so, not a silent bar
    again = []
    g.precompute(progress=lambda done, total: again.append((done, total)))
    assert again == [(0, 0)]
    with pytest.raises(TypeError, match="progress must be a callable"):
        g.precompute(progress=5)


def test_precompute_rejects_bad_max_threads():
    t = tok("llama3")
    g = compile_case(t.compiler(), "gbnf-arithmetic")
    for bad in (0, -1):
        with pytest.raises(ValueError, match="max_threads"):
            g.precompute(max_threads=bad)
    assert g.cache_summary()["classified"] == 0
    for bad in ("no", 1, None):  # a truthy string would silently mean "eager"
        with pytest.raises(TypeError, match="precompute must be a bool"):
            xmask.GrammarCompiler(t.info, precompute=bad)


# ---- every entry point that reads the cache classifies on demand ------------------------------

def _chain_with_siblings(chain, alts):
    """Draft tree arrays: root, a chain of ``chain`` tokens, each chain node with a sibling."""
    n = 1 + 2 * len(chain)
    nxt, sib, tokens = [-1] * n, [-1] * n, [0] * n
    for j, (a, b) in enumerate(zip(chain, alts)):
        nxt[j] = j + 1
        tokens[j + 1], sib[j + 1] = a, len(chain) + 1 + j
        tokens[len(chain) + 1 + j] = b
    return nxt, sib, tokens


@pytest.mark.parametrize("case", ["builtin-json", "mb-Github_hard---o74005"])
def test_draft_tree_fork_and_jump_forward_on_a_fresh_lazy_grammar(case):
    t = tok("llama3")
    docs = [t.encode(d) for d in case_docs(case)]
    ids, other = docs[0], docs[-1] if len(docs) > 1 else t.encode(JSON_DOCS[1])
    fresh = compile_case(t.compiler(), case)
    eager = compile_case(t.compiler(precompute=True), case)
    lazy_m, eager_m = xmask.GrammarMatcher(fresh), xmask.GrammarMatcher(eager)
    pos = 0
    for start in range(0, len(ids) - 12, max(1, len(ids) // 5)):
        for tid in ids[pos:start]:  # advance without filling
            assert lazy_m.accept_token(tid) and eager_m.accept_token(tid)
        pos = start
        nxt, sib, tokens = _chain_with_siblings(ids[start:start + 12], other[start:start + 12])
        got, want = t.bitmask(len(tokens)), t.bitmask(len(tokens))
        assert lazy_m.traverse_draft_tree(nxt, sib, tokens, got) is True
        assert eager_m.traverse_draft_tree(nxt, sib, tokens, want) is True
        assert np.array_equal(got, want), f"draft tree from token {start}: rows differ"
        assert lazy_m.find_jump_forward_string() == eager_m.find_jump_forward_string()
        forked, row = lazy_m.fork(), t.bitmask(2)
        forked.fill_next_token_bitmask(row, 0)
        forked._reference_fill_next_token_bitmask(row, 1)
        assert np.array_equal(row[0], row[1]) and np.array_equal(row[0], want[0])
    assert fresh.cache_summary()["classified"] > 0


# ---- serialization ---------------------------------------------------------------------------

def _round_trip(g, how):
    if how == "json":
        return xmask.CompiledGrammar.deserialize_json(g.serialize_json(), g.tokenizer_info)
    return pickle.loads(pickle.dumps(g))


@pytest.mark.parametrize("how", ["json", "pickle"])
@pytest.mark.parametrize("tokenizer", ["llama3", "qwen2.5"])
def test_partially_classified_grammar_round_trips_and_stays_lazy(tokenizer, how):
    t = tok(tokenizer)
    g = compile_case(t.compiler(), "builtin-json")
    ids = t.encode(JSON_DOCS[0])
    half = len(ids) // 4
    m = _walk_exact(t, g, ids[:half])
    before = _check_summary(g)
    stats = g.cache_stats()
    assert 0 < before["classified"] and before["pending"] > 0

    loaded = _round_trip(g, how)
    assert loaded.cache_summary() == before
    assert loaded.cache_stats() == stats

    # continue the walk on the loaded grammar (a new matcher replays the prefix)
    m2 = xmask.GrammarMatcher(loaded)
    for tid in ids[:half]:
        assert m2.accept_token(tid)
    _walk_exact(t, loaded, ids, start=half, matcher=m2)
    after = _check_summary(loaded, before["top_states"])
    assert after["pending"] < before["pending"], "the loaded grammar classified nothing new"
    assert g.cache_summary() == before, "fills on the loaded copy changed the original"

    # the original continues too, and both end with the same classified states
    _walk_exact(t, g, ids, start=half, matcher=m)
    assert sorted(map(record_key, g.cache_stats())) == sorted(map(record_key, loaded.cache_stats()))

    # once precomputed, the loaded grammar has an eager compile's records
    loaded.precompute(max_threads=2)
    eager = compile_case(t.compiler(precompute=True), "builtin-json")
    assert loaded.cache_summary()["pending"] == 0
    assert loaded.cache_summary()["entries"] == eager.cache_summary()["entries"]
    assert sorted(map(record_key, loaded.cache_stats())) == sorted(map(record_key, eager.cache_stats()))


@pytest.mark.parametrize("how", ["json", "pickle"])
def test_fresh_and_precomputed_grammars_round_trip(how):
    t = tok("llama3")
    ids = t.encode(case_docs("gbnf-json")[1])
    fresh = compile_case(t.compiler(), "gbnf-json")
    loaded = _round_trip(fresh, how)
    s = _check_summary(loaded)
    assert s == fresh.cache_summary() and s["classified"] == 0
    _walk_exact(t, loaded, ids, every=3)
    assert loaded.cache_summary()["classified"] > 0
    assert fresh.cache_summary()["classified"] == 0

    eager = compile_case(t.compiler(precompute=True), "gbnf-json")
    loaded = _round_trip(eager, how)
    assert loaded.cache_summary() == eager.cache_summary()
    assert loaded.cache_summary()["pending"] == 0
    assert loaded.cache_stats() == eager.cache_stats()
    _walk_exact(t, loaded, ids, every=3)
    assert loaded.cache_summary() == eager.cache_summary()


def test_disk_cache_of_a_lazy_compiler_does_not_leak_pending_states_into_eager(tmp_path):
    t = tok("llama3")
    text = 'root ::= "{" ( [a-z]+ ":" [0-9]+ ) ( "," [a-z]+ ":" [0-9]+ )* "}"'
    lazy = xmask.GrammarCompiler(t.info, cache_dir=tmp_path).compile_grammar(text)
    assert lazy.cache_summary()["classified"] == 0
    eager = xmask.GrammarCompiler(t.info, cache_dir=tmp_path, precompute=True).compile_grammar(text)
    assert eager.cache_summary()["pending"] == 0, "an eager compile returned pending states"
    again = xmask.GrammarCompiler(t.info, cache_dir=tmp_path).compile_grammar(text)
    _walk_exact(t, again, t.encode("{ab:12,c:3}"))


def test_pickled_compilers_keep_their_mode():
    info = xmask.default_tokenizer_info()
    text = 'root ::= ("a" | "bc")+ "."'
    for precompute in (False, True):
        compiler = pickle.loads(pickle.dumps(xmask.GrammarCompiler(info, precompute=precompute)))
        s = compiler.compile_grammar(text).cache_summary()
        assert (s["pending"] == 0) == precompute and s["top_states"] > 0, (precompute, s)


# ---- compile limits and the deadline ---------------------------------------------------------

MODE_KW = {"lazy": {}, "eager": {"precompute": True}}

LIMIT_CASES = [
    ("max_context_work", {"max_context_work": 10_000}, "ebnf", 'root ::= ("[" root "]"){0,300} | "x"'),
    ("max_automaton_states", {"max_automaton_states": 50}, "gbnf", "gbnf-json"),
    ("max_nfa_states", {"max_nfa_states": 300}, "regex", "(a{0,10}b?){0,10}"),
    ("max_repeat", {"max_repeat": 100}, "regex", "a{0,1000}"),
    ("max_enum_values", {"max_enum_values": 2}, "schema", {"enum": [1, 2, 3]}),
]


@pytest.mark.parametrize("field,limits,kind,what", LIMIT_CASES, ids=[c[0] for c in LIMIT_CASES])
def test_compile_limits_hold_in_every_mode(field, limits, kind, what):
    info = xmask.default_tokenizer_info()
    messages = {}
    for mode, kw in MODE_KW.items():
        compiler = xmask.GrammarCompiler(info, cache_enabled=False,
                                         limits=xmask.CompileLimits(**limits), **kw)
        with pytest.raises(xmask.GrammarLimitError) as err:
            if kind == "ebnf":
                compiler.compile_grammar(what)
            elif kind == "gbnf":
                compile_case(compiler, what)
            elif kind == "regex":
                compiler.compile_regex(what)
            else:
                compiler.compile_json_schema(what)
        messages[mode] = str(err.value)
    assert messages["lazy"] == messages["eager"], messages
    if field != "max_enum_values":  # its message predates the field names ("enum with more than")
        assert f"CompileLimits.{field}" in messages["lazy"], messages


# A recursive rule inside a big repeat: a fast front end (~0.3 s), then ~2e8 classification walks
# (tens of seconds) when each walk goes on into root's 10,000 return sites (the child asks for
# that: by default a rule called from that many places is walked up to its end only, which is
# fast).  With the context-work cap lifted, only the deadline can stop classifying.
DEADLINE_GRAMMAR = 'root ::= ("[" root "]"){0,10000} | "x"'
DEADLINE_LIMITS = {"max_compile_seconds": 2, "max_context_work": 10 ** 12}
CHILD_AS_BYTES = child_address_cap(3 << 30)
CHILD_TIMEOUT = 120

_CHILD = textwrap.dedent(
    """
    import json, resource, sys
    resource.setrlimit(resource.RLIMIT_AS, ({cap}, {cap}))
    import numpy as np
    import xmask
    mode, text, limits = json.loads(sys.argv[1])
    from xmask.runtime._mask_cache import set_max_ctx_walk
    set_max_ctx_walk(10 ** 9)  # walk into every return site (see DEADLINE_GRAMMAR)
    info = xmask.default_tokenizer_info()
    kw = {{"precompute": True}} if mode == "eager" else {{}}
    compiler = xmask.GrammarCompiler(info, max_threads=2, cache_enabled=False,
                                     limits=xmask.CompileLimits(**limits), **kw)
    out = {{}}
    def outcome(fn):
        try:
            fn()
            return {{"result": "ok"}}
        except xmask.GrammarLimitError as e:
            return {{"result": "GrammarLimitError", "message": str(e)}}
        except BaseException as e:
            return {{"result": type(e).__name__, "message": str(e)[:500]}}
    box = []
    out["compile"] = outcome(lambda: box.append(compiler.compile_grammar(text)))
    if box:
        g = box[0]
        m = xmask.GrammarMatcher(g)
        bm = np.zeros((2, (info.vocab_size + 31) // 32), np.int32)
        same = []
        for ch in "[[x][]]":
            m.fill_next_token_bitmask(bm, 0)
            m._reference_fill_next_token_bitmask(bm, 1)
            same.append(bool((bm[0] == bm[1]).all()))
            assert m.accept_string(ch)
        out["masks_exact"] = all(same)
        out["summary"] = g.cache_summary()
        if mode == "lazy":  # a later warm-up is bounded by the compiler's deadline too
            out["precompute"] = outcome(lambda: g.precompute(max_threads=2))
            out["after"] = g.cache_summary()
    print(json.dumps(out))
    """
).format(cap=CHILD_AS_BYTES)


def _run_child(mode):
    arg = json.dumps([mode, DEADLINE_GRAMMAR, DEADLINE_LIMITS])
    try:
        proc = subprocess.run([sys.executable, "-c", _CHILD, arg], capture_output=True, text=True,
                              timeout=CHILD_TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{mode}: ran past {CHILD_TIMEOUT} s")
    lines = proc.stdout.strip().splitlines()
    assert proc.returncode == 0 and lines, f"{mode}: child exited {proc.returncode}: {proc.stderr[-2000:]}"
    return json.loads(lines[-1])


def test_deadline_stops_an_eager_compile():
    out = _run_child("eager")
    assert out["compile"]["result"] == "GrammarLimitError", out
    assert "CompileLimits.max_compile_seconds" in out["compile"]["message"], out


def test_deadline_in_lazy_mode():
    # the front end is well within the deadline: the lazy compile succeeds and the states a
    # walk meets are classified on demand, exactly.  ``compiled.precompute()`` afterwards
    # (classifying all of this grammar takes ~40 s) stops at the compiler's deadline, keeping
    # what it classified.
    out = _run_child("lazy")
    assert out["compile"]["result"] == "ok", out
    assert out["masks_exact"], out
    assert 0 < out["summary"]["classified"] and out["summary"]["pending"] > 0, out
    assert out["precompute"]["result"] == "GrammarLimitError", out
    assert "CompileLimits.max_compile_seconds" in out["precompute"]["message"], out
    after = out["after"]
    assert out["summary"]["classified"] <= after["classified"] and after["pending"] > 0, out
    assert after["classified"] + after["pending"] == after["top_states"], out
