"""Reading the token-mask cache (issue 13, "Inspecting cache memory in notebooks").

* ``cache_stats()`` places each state in the grammar (``rule``, dotted ``position``) and its
  totals add up: ``memory`` parts sum to ``memory_size_bytes``, ``stored_bytes`` to the entry
  payload (``cache_summary()["bytes"]``), shared entries name their owner, lazily and eagerly.
* ``xmask.inspect``: ``cache_frame`` / ``memory_frame`` / ``walk_latency`` DataFrames agree with
  the records and the reference mask; the plots draw (Agg); missing pandas / matplotlib give a
  clear ImportError.  Under ``CI=true`` a missing pandas or matplotlib fails instead of skipping.
"""

import json
import sys

import numpy as np
import pytest

import xmask
from conftest import require_module, tokenizer_json

NESTED = """root ::= "[" list "]"
list ::= item ("," item)*
item ::= [0-9]+ | "(" list ")"
"""


@pytest.fixture(scope="module")
def info():
    return xmask.default_tokenizer_info()


@pytest.fixture(scope="module")
def plt():
    require_module("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    yield plt
    plt.close("all")


def _check_totals(cg):
    stats = cg.cache_stats()
    summary = cg.cache_summary()
    assert sum(stats.memory.values()) == cg.memory_size_bytes == stats.totals["memory_size_bytes"]
    # (pair_entries: once a state with many uncertain tokens was classified over a frame)
    assert set(stats.memory) - {"pair_entries"} == {
        "automaton", "context_tables", "state_index", "dedup_table", "entry_headers",
        "entry_payloads"}
    assert sum(r.stored_bytes for r in stats) == stats.memory["entry_payloads"] == summary["bytes"]
    assert stats.totals["entries"] == summary["entries"]
    assert stats.totals["states"] == len(stats) == summary["classified"]
    by_state = {r.state: r for r in stats}
    shared = [r for r in stats if r.shared]
    assert stats.totals["shared_states"] == len(shared)
    assert stats.totals["shared_bytes"] == sum(r.bytes for r in shared)
    for r in stats:
        owner = by_state[r.entry_owner]
        assert r.shared == (r.entry_owner != r.state) and not owner.shared
        if r.shared:
            assert r.entry_owner < r.state and r.stored_bytes == 0
            assert (r.accepted, r.rejected, r.uncertain, r.storage, r.bytes) == (
                owner.accepted, owner.rejected, owner.uncertain, owner.storage, owner.bytes)
        assert r.position.count("•") == 1, r
    return stats


def test_rules_and_positions_of_a_small_grammar(info):
    cg = xmask.GrammarCompiler(info).compile_grammar(NESTED).precompute()
    got = [(r.rule, r.state, r.position) for r in _check_totals(cg)]
    assert got == [
        ("root", 0, '• "["'),
        ("root", 2, '"[" list • "]"'),
        ("list", 5, 'item • "," | (end)'),
        ("item", 6, "• [(0-9]"),
        ("item", 8, "[0-9] • [0-9] | (end)"),
        ("item", 9, '"(" list • ")"'),
    ]
    n_text = info.vocab_size - len(info.special_token_ids)
    assert all(r.accepted + r.rejected + r.uncertain == n_text for r in cg.cache_stats())


def test_positions_escape_bytes_and_cut_long_paths(info):
    cg = xmask.GrammarCompiler(info).compile_grammar(
        'root ::= "a\\"\\\\\\n" [\\x00-\\x1f] "0123456789abcdef" "\\u00e9" [^a]').precompute()
    pos = [r.position for r in _check_totals(cg)]
    assert pos[0] == '• "a"' and pos[1] == '"a" • "\\""'
    assert pos[4] == '"a\\"\\\\\\n" • [\\x00-\\x1f]'
    assert pos[5].startswith('"a\\"\\\\\\n" [\\x00-\\x1f] • "0"')
    assert any(p.startswith("… ") for p in pos)  # paths longer than the cut keep their end
    assert any(p.endswith('cdef" • "\\xc3"') for p in pos)  # a partial UTF-8 character
    # whole characters print as themselves; [^a] is any UTF-8 character but "a"
    assert any(p.endswith('abcdefé" • [^a\\x80-\\xc1\\xf5-\\xff]') for p in pos)


def test_totals_add_up_lazily_and_after_precompute(info):
    compiler = xmask.GrammarCompiler(info)
    cg = compiler.compile_builtin_json_grammar()
    stats = _check_totals(cg)
    assert stats == [] and stats.memory["entry_payloads"] == 0 and cg.memory_size_bytes > 0
    m = xmask.GrammarMatcher(cg)
    bm = xmask.allocate_token_bitmask(1, info.vocab_size)
    for tid in xmask.default_tokenizer().encode('{"a": [1, "b"]}', add_special_tokens=False).ids:
        m.fill_next_token_bitmask(bm)
        assert m.accept_token(tid)
        _check_totals(cg)
    partial = len(cg.cache_stats())
    stats = _check_totals(cg.precompute())
    assert 0 < partial < len(stats)
    assert any(r.shared for r in stats)  # JSON's string states inside keys and values
    assert stats.memory["pair_entries"] > 0  # a string's end, per frame the walk met
    eager = xmask.GrammarCompiler(info, precompute=True).compile_builtin_json_grammar()
    assert [(r.rule, r.state, r.position) for r in eager.cache_stats()] == [
        (r.rule, r.state, r.position) for r in stats]
    # the records survive serialization unchanged, positions included
    again = xmask.CompiledGrammar.deserialize_json(eager.serialize_json(), info)
    assert again.cache_stats() == eager.cache_stats()
    assert again.cache_stats().memory == eager.cache_stats().memory


def test_json_positions_on_llama3():
    info = xmask.TokenizerInfo.from_huggingface(str(tokenizer_json("llama3")))
    cg = xmask.GrammarCompiler(info, precompute=True).compile_builtin_json_grammar()
    stats = _check_totals(cg)
    pos = {(r.rule, r.position) for r in stats}
    assert ("object", '"{" member • [,}]') in pos
    assert ("array", '"[" element "," • [\\t\\n\\r ] | element') in pos
    assert ("member", '"\\"\\"" • [\\t\\n\\r :]') in pos
    assert sum(r.accepted + r.rejected + r.uncertain for r in stats) == len(stats) * 128000


# ---- xmask.inspect ---------------------------------------------------------------------------

def test_cache_frame_matches_the_records(info):
    require_module("pandas")
    from xmask import inspect as xi

    cg = xmask.GrammarCompiler(info).compile_builtin_json_grammar()
    assert len(xi.cache_frame(cg)) == 0
    frame = xi.cache_frame(cg, precompute=True)
    stats = cg.cache_stats()
    assert list(frame.columns) == ["rule", "state", "position", "accepted", "rejected",
                                   "uncertain", "storage", "bytes", "shared", "entry_owner",
                                   "stored_bytes"]
    assert frame["state"].tolist() == [r.state for r in stats]
    assert frame["position"].tolist() == [r.position for r in stats]
    assert int(frame["stored_bytes"].sum()) == frame.attrs["memory"]["entry_payloads"]
    assert frame.attrs["memory"] == stats.memory and frame.attrs["totals"] == stats.totals
    by_rule = frame.groupby("rule")["stored_bytes"].sum()
    assert set(by_rule.index) == {"value", "object", "member", "array", "element"}

    mem = xi.memory_frame(cg)
    assert int(mem["bytes"].sum()) == cg.memory_size_bytes
    assert abs(float(mem["share"].sum()) - 1.0) < 1e-9
    kinds = mem.set_index("part")["bytes"]
    assert kinds["entries: uncertain positions"] == 4 * int(
        frame.loc[~frame["shared"], "uncertain"].sum())


def test_walk_latency_records_every_fill(info):
    require_module("pandas")
    from xmask import inspect as xi

    tok = xmask.default_tokenizer()
    doc = json.dumps({"k": [1, 2.5, "x"], "ok": True})
    ids = tok.encode(doc, add_special_tokens=False).ids
    cg = xmask.GrammarCompiler(info).compile_builtin_json_grammar()
    walk = xi.walk_latency(cg, ids, repeat=2)
    assert len(walk) == len(ids) + 1 and walk["token_id"].tolist() == ids + [-1]
    assert walk["offset"].iloc[-1] == len(doc.encode())
    assert (walk["fill_us"] > 0).all() and (walk["warm_us"] <= walk["fill_us"]).all()
    assert walk["new_states"].iloc[0] > 0
    assert int(walk["new_states"].sum()) == cg.cache_summary()["classified"]
    # allowed counts equal the reference mask's
    m = xmask.GrammarMatcher(cg)
    bm = np.full((1, (info.vocab_size + 31) // 32), -1, dtype=np.int32)
    for step, tid in enumerate(ids + [None]):
        m._reference_fill_next_token_bitmask(bm, 0)
        assert walk["allowed"].iloc[step] == int(np.unpackbits(bm.view(np.uint8)).sum())
        if tid is not None:
            assert m.accept_token(tid)
    bad = tok.encode("]", add_special_tokens=False).ids
    with pytest.raises(ValueError, match="rejects token .* at step 0"):
        xi.walk_latency(cg, bad)
    with pytest.raises(ValueError, match="repeat"):
        xi.walk_latency(cg, ids, repeat=0)


def test_plots_draw(info, plt):
    require_module("pandas")
    from xmask import inspect as xi

    cg = xmask.GrammarCompiler(info).compile_builtin_json_grammar()
    ids = xmask.default_tokenizer().encode('{"a": 1}', add_special_tokens=False).ids
    walk = xi.walk_latency(cg, ids)
    frame = xi.cache_frame(cg, precompute=True)
    axes = [
        xi.plot_memory_by_rule(frame),
        xi.plot_memory_by_rule(cg, top=2),
        xi.plot_memory_parts(cg),
        xi.plot_token_split(frame, max_states=10),
        xi.plot_uncertain_histogram(frame),
        xi.plot_walk_latency({"lazy": walk, "again": xi.walk_latency(cg, ids)}, by="step"),
        xi.plot_walk_latency(walk, y="warm_us"),
    ]
    for ax in axes:
        assert ax.get_title()
    assert len(axes[1].get_yticklabels()) == 2
    assert len(axes[3].patches) == 3 * 10
    with pytest.raises(ValueError, match="by must be"):
        xi.plot_walk_latency(walk, by="time")


def test_missing_optional_libraries_say_what_to_install(info, monkeypatch):
    from xmask import inspect as xi

    cg = xmask.GrammarCompiler(info).compile_grammar(NESTED)
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match="need pandas.*pip install pandas"):
        xi.cache_frame(cg)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match="need matplotlib.*pip install matplotlib"):
        xi.plot_uncertain_histogram(object())


def test_import_xmask_does_not_import_pandas_or_matplotlib():
    import subprocess

    code = ("import sys, xmask, xmask.inspect; "
            "print(sorted(m for m in ('pandas', 'matplotlib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def test_document_tokens_spell_the_text_exactly():
    tokenizers = require_module("tokenizers")
    from xmask import inspect as xi

    path = str(tokenizer_json("llama2"))
    tok, info = tokenizers.Tokenizer.from_file(path), xmask.TokenizerInfo.from_huggingface(path)
    text = json.dumps({"name": "café", "n": [1, -2.5]})
    own = tok.encode(text, add_special_tokens=False).ids
    assert b"".join(info.decoded_vocab[i] for i in own) == b" " + text.encode()  # sentencepiece
    ids = xi.document_tokens(text, tok, info)
    assert b"".join(info.decoded_vocab[i] for i in ids) == text.encode()
    cg = xmask.GrammarCompiler(info).compile_builtin_json_grammar()
    walk = xi.walk_latency(cg, ids)  # the grammar accepts every token
    assert walk["offset"].iloc[-1] == len(text.encode())
    llama3 = str(tokenizer_json("llama3"))
    tok3, info3 = tokenizers.Tokenizer.from_file(llama3), xmask.TokenizerInfo.from_huggingface(llama3)
    assert xi.document_tokens(text, tok3, info3) == tok3.encode(text, add_special_tokens=False).ids
