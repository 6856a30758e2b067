"""A JSON Schema compiled in two parts (issue 10, ``xmask/compiler/lazy_schema.py``).

``compile_json_schema`` builds the first part (pending rules as stubs) and the whole grammar
later.  Checked on real schemas and tokenizers:

* the first mask equals the eager compile's (the same grammar through ``compile_grammar``) and
  the slow reference (every token tried on the whole grammar's parser), whether it came from
  the first part or the walk met a stub and the matcher moved to the whole grammar;
* both outcomes occur on the sample (the checks are not vacuous);
* after the first fill every operation answers for the whole grammar: masks along valid
  documents, fork, rollback, reset, serialization, ``grammar``, cache views;
* many threads starting on one lazy grammar get the single-thread masks;
* a compile limit the rest crosses is raised where the whole grammar is first needed.
"""

import json
import pickle
import threading
import time

import numpy as np
import pytest

import xmask
from xmask.compiler import first_reach
from conftest import require_data

pytest.importorskip("tokenizers")

from lazy_walks import tok  # noqa: E402
pytestmark = pytest.mark.filterwarnings("ignore::xmask.SchemaKeywordWarning")

OPTIONS = [{"any_whitespace": False}, {"any_whitespace": True, "strict_mode": False},
           {"any_whitespace": False, "indent": 2}]


@pytest.fixture(scope="module")
def info():
    return tok("llama3").info


def _compilers(info):
    # no cache: the lazy and the eager grammar never share a compiled object
    return (xmask.GrammarCompiler(info, cache_enabled=False),
            xmask.GrammarCompiler(info, cache_enabled=False))


def _mask(matcher, info, reference=False):
    bm = xmask.allocate_token_bitmask(1, info.vocab_size)
    if reference:
        matcher._reference_fill_next_token_bitmask(bm)
    else:
        matcher.fill_next_token_bitmask(bm)
    return bm.numpy().copy() if hasattr(bm, "numpy") else np.array(bm)


def _entries(stride):
    out = []
    for f in sorted(require_data("maskbench").glob("*.json"))[::stride]:
        entry = json.loads(f.read_text(encoding="utf-8"))
        out.append((f.name, entry))
    return out


def _eager(compiler, schema, opts):
    return compiler.compile_grammar(xmask.Grammar.from_json_schema(schema, **opts))


@pytest.mark.parametrize("horizon", [None, 1])
def test_first_mask_is_exact_on_maskbench(info, horizon, monkeypatch):
    # horizon: the default (value rules within FIRST_HORIZON bytes of the start built), or 1,
    # where every value after the first byte is a stub (first_reach.py)
    if horizon is not None:
        monkeypatch.setattr(first_reach, "FIRST_HORIZON", horizon)
    lazy_c, eager_c = _compilers(info)
    seen = {"first_part": 0, "moved": 0, "refused": 0, "whole": 0}
    for k, (name, entry) in enumerate(_entries(45)):
        schema = entry["schema"]
        opts = OPTIONS[k % len(OPTIONS)]
        try:
            eager = _eager(eager_c, schema, opts)
        except xmask.XmaskError as e:
            with pytest.raises(type(e)) as got:
                lazy_c.compile_json_schema(schema, **opts)
            assert str(got.value) == str(e), name
            seen["refused"] += 1
            continue
        lazy = lazy_c.compile_json_schema(schema, **opts)
        first = None if lazy._rest is None else lazy._rest.first
        if first is None:
            seen["whole"] += 1  # nothing could wait
        m = xmask.GrammarMatcher(lazy)
        got = _mask(m, info)
        if first is not None:
            seen["moved" if first[0].stub_hit else "first_part"] += 1
        want = _mask(xmask.GrammarMatcher(eager), info)
        assert np.array_equal(got, want), name
        assert np.array_equal(got, _mask(xmask.GrammarMatcher(eager), info, reference=True)), name
        # the rest answers for the whole grammar too
        assert str(lazy.grammar) == str(eager.grammar), name
    print(seen)
    assert seen["first_part"] >= 20 and seen["refused"] >= 3, seen
    # at horizon 1 tokens do step into stubs (the move to the whole grammar is exercised);
    # at the default one a value a first token reaches is generated (first_reach's near)
    assert seen["moved"] >= 3 if horizon == 1 else seen["moved"] <= 2, seen


def test_a_token_entering_a_stub_moves_to_the_whole_grammar(info, monkeypatch):
    # (at horizon 1 the item is not near the start: it stays pending, a stub)
    monkeypatch.setattr(first_reach, "FIRST_HORIZON", 1)
    lazy_c, eager_c = _compilers(info)
    schema = {"type": "array", "items": {"type": "string"}}
    lazy = lazy_c.compile_json_schema(schema, any_whitespace=False)
    assert lazy._rest is not None and lazy._automaton.has_stubs
    first = lazy._rest.first
    m = xmask.GrammarMatcher(lazy)
    got = _mask(m, info)
    # '["' reads the item's quote: the stub's first byte
    assert first[0].stub_hit and lazy._rest.first is None
    opening = [i for i, t in enumerate(info.decoded_vocab) if t == b'["']
    assert opening and all(got[0, i // 32] >> (i % 32) & 1 for i in opening)
    eager = _eager(eager_c, schema, {"any_whitespace": False})
    assert np.array_equal(got, _mask(xmask.GrammarMatcher(eager), info))
    # a matcher created now starts on the whole grammar at once
    assert np.array_equal(_mask(xmask.GrammarMatcher(lazy), info), got)


@pytest.mark.parametrize("horizon", [1, 2, 3])
def test_member_chains_stubbed_after_the_brace(info, horizon, monkeypatch):
    # Every property optional: after '{' come member chains (generated rules, not values;
    # non-strict: with extra keys of any first character).  Cut at a small horizon they are
    # stubs with the any-byte placeholder: a token into them steps into the stub (the matcher
    # moves to the whole grammar), one past them ('{}') is not, and the first mask is exact.
    monkeypatch.setattr(first_reach, "FIRST_HORIZON", horizon)
    import xmask.compiler.lazy_schema as lazy_schema

    seen = []
    real = lazy_schema.partial_grammar

    def recording(rules, stubs, values=None):
        g = real(rules, stubs, values)
        seen.append({s for s in stubs if g.rules[s] is lazy_schema.ANY_BYTE_STUB_BODY})
        return g

    monkeypatch.setattr(lazy_schema, "partial_grammar", recording)
    schema = {"type": "object", "properties": {"é": {"type": "string"},
                                               "b": {"type": "integer"}}}
    lazy_c, eager_c = _compilers(info)
    for opts in ({"any_whitespace": False}, {"any_whitespace": False, "strict_mode": False},
                 {"any_whitespace": True}):
        seen.clear()
        lazy = lazy_c.compile_json_schema(schema, **opts)
        # (the chain of the members after the first is referenced right after the '{')
        assert horizon > 1 or seen[0], opts  # a non-value rule was cut
        got = _mask(xmask.GrammarMatcher(lazy), info)
        eager = _eager(eager_c, schema, opts)
        assert np.array_equal(got, _mask(xmask.GrammarMatcher(eager), info)), opts
        assert np.array_equal(got, _mask(xmask.GrammarMatcher(eager), info, reference=True))
        empty = [i for i, t in enumerate(info.decoded_vocab) if t == b"{}"]
        assert empty and all(got[0, i // 32] >> (i % 32) & 1 for i in empty)


def test_first_part_mask_then_background_rest(info):
    lazy_c, eager_c = _compilers(info)
    schema = {"type": "object", "properties": {"name": {"type": "string"},
                                               "n": {"type": "integer", "minimum": 0}},
              "required": ["name"]}
    lazy = lazy_c.compile_json_schema(schema, any_whitespace=False)
    eager = _eager(eager_c, schema, {"any_whitespace": False})
    part = lazy._rest.first
    assert part is not None
    m = xmask.GrammarMatcher(lazy)
    first = _mask(m, info)
    assert not part[0].stub_hit
    deadline = time.monotonic() + 30
    while lazy._rest.first is not None and time.monotonic() < deadline:
        time.sleep(0.01)  # the background thread builds the rest after the first fill
    assert lazy._rest.first is None and lazy._automaton_tables is not part[0]
    assert np.array_equal(first, _mask(xmask.GrammarMatcher(eager), info))
    # the document's masks match the eager grammar's at every step
    doc = json.dumps({"name": "caf\u00e9", "n": 12}, ensure_ascii=False)
    ids = tok("llama3").encode(doc)
    e = xmask.GrammarMatcher(eager)
    for t in ids:
        assert np.array_equal(_mask(m, info), _mask(e, info))
        assert m.accept_token(t) and e.accept_token(t)
    assert m.is_completed() and e.is_completed()


def test_every_operation_answers_for_the_whole_grammar(info):
    lazy_c, eager_c = _compilers(info)
    schema = {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}},
                                               "b": {"type": "boolean"}}}
    opts = {"any_whitespace": False}
    eager = _eager(eager_c, schema, opts)
    doc = json.dumps({"a": [1, 22], "b": True})
    ids = tok("llama3").encode(doc)

    def fresh():
        cg = lazy_c.compile_json_schema(schema, **opts)
        assert cg._rest is not None and cg._rest.first is not None
        return cg, xmask.GrammarMatcher(cg)

    # before any fill: accept, fork, rollback, reset, is_completed move to the whole grammar
    cg, m = fresh()
    assert m.accept_token(ids[0])
    assert cg._rest.first is None
    assert np.array_equal(_mask(m, info), _mask(_advanced(eager, ids[:1]), info))
    for op in (lambda m: m.fork(), lambda m: m.rollback(0), lambda m: m.reset(),
               lambda m: m.is_completed(), lambda m: m.accept_string('{"a"')):
        cg, m = fresh()
        op(m)
        assert cg._rest.first is None
    cg, m = fresh()
    m.fill_next_token_bitmask(xmask.allocate_token_bitmask(1, info.vocab_size))
    child = m.fork()
    for t in ids:
        assert child.accept_token(t)
    assert child.is_completed()
    # the compiled grammar's views are the whole grammar's
    cg = lazy_c.compile_json_schema(schema, **opts)
    assert str(cg.grammar) == str(eager.grammar)
    cg = lazy_c.compile_json_schema(schema, **opts)
    assert cg.cache_summary()["top_states"] == eager.cache_summary()["top_states"]
    cg = lazy_c.compile_json_schema(schema, **opts)
    again = xmask.CompiledGrammar.deserialize_json(cg.serialize_json(), info)
    assert str(again.grammar) == str(eager.grammar)
    assert np.array_equal(_mask(_advanced(again, ids[:3]), info), _mask(_advanced(eager, ids[:3]), info))
    cg = lazy_c.compile_json_schema(schema, **opts)
    back = pickle.loads(pickle.dumps(cg))
    assert back._rest is None and str(back.grammar) == str(eager.grammar)
    cg = lazy_c.compile_json_schema(schema, **opts)
    assert cg.precompute() is cg and cg.cache_summary()["pending"] == 0
    assert cg.memory_size_bytes == eager.precompute().memory_size_bytes


def _advanced(compiled, ids):
    m = xmask.GrammarMatcher(compiled)
    for t in ids:
        assert m.accept_token(t)
    return m


def test_threads_starting_on_one_lazy_grammar(info):
    lazy_c, eager_c = _compilers(info)
    schema = {"type": "object", "properties": {"id": {"type": "integer"},
                                               "tags": {"type": "array", "items": {"type": "string"}},
                                               "meta": {"type": "object", "properties": {
                                                   "x": {"type": "number"}}}}}
    opts = {"any_whitespace": True}
    doc = '{"id": 7, "tags": ["a", "bc"], "meta": {"x": 1.5}}'
    ids = tok("llama3").encode(doc)
    eager = _eager(eager_c, schema, opts)
    e = xmask.GrammarMatcher(eager)
    want = []
    for t in ids:
        want.append(_mask(e, info))
        assert e.accept_token(t)
    for _ in range(3):
        lazy = lazy_c.compile_json_schema(schema, **opts)
        errors = []

        def run():
            try:
                m = xmask.GrammarMatcher(lazy)
                for k, t in enumerate(ids):
                    assert np.array_equal(_mask(m, info), want[k]), k
                    assert m.accept_token(t)
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=run) for _ in range(6)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert not errors, errors[0]


def test_a_limit_the_rest_crosses_is_raised_where_it_is_needed(info):
    # the first part fits, the whole grammar does not: the error comes from the first call
    # that needs the whole grammar (here accept_token), as the eager compile's does at compile
    inner = {"type": "object", "properties": {f"k{i}": {"type": "string", "maxLength": 200}
                                              for i in range(40)}}
    schema = {"type": "object", "properties": {"big": inner}}
    opts = {"any_whitespace": False}
    probe = xmask.GrammarCompiler(info, cache_enabled=False).compile_json_schema(schema, **opts)
    assert probe._rest.first is not None
    first_states = probe._automaton.n_states
    whole_states = probe._resolved()._automaton.n_states
    assert whole_states > first_states
    limits = xmask.CompileLimits(max_automaton_states=(first_states + whole_states) // 2)
    compiler = xmask.GrammarCompiler(info, cache_enabled=False, limits=limits)
    with pytest.raises(xmask.GrammarLimitError) as eager_err:
        compiler.compile_grammar(xmask.Grammar.from_json_schema(schema, **opts))
    cg = compiler.compile_json_schema(schema, **opts)
    m = xmask.GrammarMatcher(cg)
    _mask(m, info)  # the first mask needs only the first part
    with pytest.raises(xmask.GrammarLimitError) as late:
        m.accept_token(tok("llama3").encode("{")[0])
    assert str(late.value) == str(eager_err.value)
    with pytest.raises(xmask.GrammarLimitError):
        xmask.GrammarMatcher(cg).accept_string("{")  # kept: every later caller gets it


def test_batch_fill_of_provisional_matchers(info, monkeypatch):
    # a batch fill keeps provisional matchers on their first part, and one whose walk met a
    # stub is filled again on the whole grammar: every row equals the eager compile's
    lazy_c, eager_c = _compilers(info)
    schemas = [{"type": "object", "properties": {"alpha": {"type": "string"}}},
               {"type": "array", "items": {"type": "string"}},
               {"type": "object", "properties": {"b": {"type": "array", "items": {"type": "integer"}}}}]
    opts = {"any_whitespace": False}
    lazy = []
    for k, s in enumerate(schemas):
        with monkeypatch.context() as mp:
            if k == 1:  # its item stays a stub (at the default horizon it is generated)
                mp.setattr(first_reach, "FIRST_HORIZON", 1)
            lazy.append(lazy_c.compile_json_schema(s, **opts))
    firsts = [cg._rest.first for cg in lazy]
    ms = [xmask.GrammarMatcher(cg) for cg in lazy]
    bm = xmask.allocate_token_bitmask(5, info.vocab_size)
    xmask.BatchGrammarMatcher(2).batch_fill_next_token_bitmask(ms, bm, [4, 0, 2])
    rows = bm.numpy().copy() if hasattr(bm, "numpy") else np.array(bm)
    assert [f[0].stub_hit for f in firsts] == [False, True, False]
    for row, s in zip((4, 0, 2), schemas):
        want = _mask(xmask.GrammarMatcher(_eager(eager_c, s, opts)), info)
        assert np.array_equal(rows[row:row + 1], want), s


def test_two_parts_only_where_nothing_needs_the_whole_grammar_at_once(info, tmp_path):
    from xmask.compiler.grammar_compiler import set_two_part_schemas

    schema = {"type": "object", "properties": {"alpha": {"type": "string"}}}
    assert xmask.GrammarCompiler(info, cache_enabled=False).compile_json_schema(schema)._rest
    for compiler, opts in ((xmask.GrammarCompiler(info, cache_enabled=False, precompute=True), {}),
                           (xmask.GrammarCompiler(info, cache_enabled=False, cache_dir=tmp_path), {}),
                           (xmask.GrammarCompiler(info, cache_enabled=False), {"lenient": True})):
        assert compiler.compile_json_schema(schema, **opts)._rest is None
    old = set_two_part_schemas(False)
    try:
        assert xmask.GrammarCompiler(info, cache_enabled=False).compile_json_schema(schema)._rest is None
    finally:
        assert set_two_part_schemas(old) is False
