"""GrammarCompiler / CompiledGrammar API: inputs, caching and eviction, immutability,
cache statistics, and thread-count independence of the compiled result."""

import dataclasses
import json
import threading

import numpy as np
import pytest
import tokenizers
from conftest import tokenizer_json
from maskutil import walk_equals_reference

import xmask
from xmask import Grammar
from xmask.compiler.held_bytes import held_bytes

G_A = 'root ::= "yes" | "no"'
G_B = "root ::= [0-9]+"
G_C = 'root ::= "(" [a-z]* ")"'

# a grammar with many distinct automaton states (more than one chunk of the cache builder)
G_RECORD = r"""
root   ::= "{" ws "\"name\"" ws ":" ws string ws "," ws "\"age\"" ws ":" ws int ws ","
           ws "\"email\"" ws ":" ws string ws "," ws "\"tags\"" ws ":" ws tags ws "}"
tags   ::= "[" ws (string (ws "," ws string)*)? ws "]"
string ::= "\"" ([^"\\] | "\\" ["\\/bfnrtu])* "\""
int    ::= "-"? ("0" | [1-9] [0-9]*)
ws     ::= [ \n]*
"""
RECORD_DOC = '{"name": "Ann \\"A\\"", "age": 42,\n "email": "a@b.c", "tags": ["x", "y z"]}'


def mask_walk(compiled, ids):
    """Masks before each token and after the last one."""
    vocab = compiled.tokenizer_info.vocab_size
    m = xmask.GrammarMatcher(compiled)
    out = []
    for tid in list(ids) + [None]:
        bm = np.asarray(xmask.allocate_token_bitmask(1, vocab))
        m.fill_next_token_bitmask(bm)
        out.append(bm)
        if tid is not None:
            assert m.accept_token(tid)
    return out


@pytest.fixture(scope="module")
def info():
    return xmask.default_tokenizer_info()


@pytest.fixture(scope="module")
def sizes(info):
    """Bytes held by G_A, G_B, G_C (from an uncached compiler), as the cache counts them."""
    c = xmask.GrammarCompiler(info, cache_enabled=False)
    return {g: held_bytes(c.compile_grammar(g)) for g in (G_A, G_B, G_C)}


@pytest.fixture(scope="module")
def llama3():
    path = str(tokenizer_json("llama3"))
    return xmask.TokenizerInfo.from_huggingface(path), tokenizers.Tokenizer.from_file(path)


# ---------------------------------------------------------------------------- inputs


def test_compile_str_and_grammar(info):
    c = xmask.GrammarCompiler(info)
    from_str = c.compile_grammar(G_C)
    g = Grammar.from_ebnf(G_C)
    from_grammar = c.compile_grammar(g)
    assert isinstance(from_str, xmask.CompiledGrammar)
    assert isinstance(from_grammar, xmask.CompiledGrammar)
    assert from_grammar.grammar is g
    assert from_str.grammar == g
    for cg in (from_str, from_grammar):
        m = xmask.GrammarMatcher(cg)
        assert m.accept_string("(abc")
        assert not m.accept_string("1")
        assert m.accept_string(")") and m.accept_token(info.stop_token_ids[0])
    assert [b.tobytes() for b in mask_walk(from_str, [])] == [
        b.tobytes() for b in mask_walk(from_grammar, [])
    ]


def test_compile_root_rule_name(info):
    c = xmask.GrammarCompiler(info)
    text = 'start ::= "s" other\nother ::= "o"'
    cg = c.compile_grammar(text, root_rule_name="start")
    assert cg.grammar.root == "start"
    assert xmask.GrammarMatcher(cg).accept_string("so")
    cg2 = c.compile_grammar(text, root_rule_name="other")
    assert cg2 is not cg
    m = xmask.GrammarMatcher(cg2)
    assert not m.accept_string("s") and m.accept_string("o")


def test_compiler_properties(info):
    c = xmask.GrammarCompiler(info)
    assert c.tokenizer_info is info
    cg = c.compile_grammar(G_A)
    assert cg.tokenizer_info is info
    assert isinstance(cg.grammar, Grammar)
    assert cg.grammar == Grammar.from_ebnf(G_A)
    assert isinstance(cg.memory_size_bytes, int) and cg.memory_size_bytes > 0
    assert "CompiledGrammar" in repr(cg)


# ---------------------------------------------------------------------------- caching


def test_same_object_returned_twice(info):
    c = xmask.GrammarCompiler(info)
    a = c.compile_grammar(G_A)
    assert c.compile_grammar(G_A) is a
    assert c.compile_builtin_json_grammar() is c.compile_builtin_json_grammar()
    g = Grammar.from_ebnf(G_B)
    b = c.compile_grammar(g)
    assert c.compile_grammar(g) is b
    assert c.compile_grammar(Grammar.from_ebnf(G_B)) is b  # an equal Grammar object
    # a different text is a different grammar, even if only whitespace differs
    assert c.compile_grammar(G_A.replace(" | ", "|")) is not a


def test_cache_disabled_returns_new_objects(info):
    c = xmask.GrammarCompiler(info, cache_enabled=False)
    a1 = c.compile_grammar(G_A)
    a2 = c.compile_grammar(G_A)
    assert a1 is not a2
    assert c.compile_builtin_json_grammar() is not c.compile_builtin_json_grammar()
    assert c.get_cache_size_bytes() == 0
    # ...but the results are the same
    assert [b.tobytes() for b in mask_walk(a1, [])] == [b.tobytes() for b in mask_walk(a2, [])]
    assert a1.cache_stats() == a2.cache_stats()


def test_cache_size_grows_then_clears(info, sizes):
    c = xmask.GrammarCompiler(info)
    assert c.get_cache_size_bytes() == 0
    a = c.compile_grammar(G_A)
    assert c.get_cache_size_bytes() == sizes[G_A] > a.memory_size_bytes
    c.compile_grammar(G_B)
    assert c.get_cache_size_bytes() == sizes[G_A] + sizes[G_B]
    c.compile_grammar(G_A)  # a hit: no growth
    assert c.get_cache_size_bytes() == sizes[G_A] + sizes[G_B]
    c.clear_cache()
    assert c.get_cache_size_bytes() == 0
    a2 = c.compile_grammar(G_A)
    assert a2 is not a  # a miss after clearing
    assert c.get_cache_size_bytes() == sizes[G_A]
    # the old object still works
    assert xmask.GrammarMatcher(a).accept_string("yes")


def test_cache_limit_keeps_only_the_newest(info, sizes):
    limit = max(sizes.values())  # any one grammar fits, no two do
    assert limit < min(sizes[x] + sizes[y] for x in sizes for y in sizes if x != y)
    c = xmask.GrammarCompiler(info, cache_limit_bytes=limit)
    assert c.cache_limit_bytes == limit
    assert xmask.GrammarCompiler(info).cache_limit_bytes == 1 << 30  # bounded by default
    objs = {}
    for g in (G_A, G_B, G_C):
        objs[g] = c.compile_grammar(g)
        assert c.get_cache_size_bytes() == sizes[g]
        assert c.compile_grammar(g) is objs[g]  # the newest is still cached
    assert c.compile_grammar(G_A) is not objs[G_A]  # evicted earlier
    assert c.get_cache_size_bytes() == sizes[G_A]
    assert c.compile_grammar(G_C) is not objs[G_C]  # evicted by G_A just now


def test_cache_limit_is_lru(info, sizes):
    limit = sizes[G_A] + sizes[G_B] + sizes[G_C] - 1  # two fit, three do not
    assert limit >= max(sizes[G_A] + sizes[G_B], sizes[G_A] + sizes[G_C], sizes[G_B] + sizes[G_C])
    c = xmask.GrammarCompiler(info, cache_limit_bytes=limit)
    a = c.compile_grammar(G_A)
    b = c.compile_grammar(G_B)
    assert c.compile_grammar(G_A) is a  # touch A: B is now the least recently used
    cc = c.compile_grammar(G_C)
    assert c.get_cache_size_bytes() == sizes[G_A] + sizes[G_C]
    assert c.compile_grammar(G_A) is a
    assert c.compile_grammar(G_C) is cc
    assert c.compile_grammar(G_B) is not b


def test_cache_limit_zero_caches_nothing(info):
    c = xmask.GrammarCompiler(info, cache_limit_bytes=0)
    a = c.compile_grammar(G_A)
    assert c.get_cache_size_bytes() == 0
    assert c.compile_grammar(G_A) is not a
    assert xmask.GrammarMatcher(a).accept_string("no")


def test_concurrent_compiles_share_one_object(info):
    c = xmask.GrammarCompiler(info)
    results = []
    barrier = threading.Barrier(4)

    def run():
        barrier.wait()
        results.append(c.compile_builtin_json_grammar())

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4
    assert all(r is results[0] for r in results)
    assert c.compile_builtin_json_grammar() is results[0]
    assert c.get_cache_size_bytes() == held_bytes(results[0])  # one entry


# ---------------------------------------------------------------------------- immutability


def test_compiled_grammar_is_immutable(info):
    cg = xmask.GrammarCompiler(info).compile_grammar(G_A)
    grammar = cg.grammar
    for name in ["grammar", "tokenizer_info", "memory_size_bytes", "_grammar", "_mask_cache",
                 "new"]:
        with pytest.raises(AttributeError):
            setattr(cg, name, None)
    # an equal grammar, rebuilt on access (compiled grammars do not keep their IR alive)
    assert str(cg.grammar) == str(grammar)
    assert cg.memory_size_bytes > 0
    assert not hasattr(cg, "__dict__")
    stats = cg.precompute().cache_stats()
    stats.clear()  # a copy: the grammar's own records are untouched
    assert cg.cache_stats()
    rec = cg.cache_stats()[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        rec.accepted = 0


def test_compiled_grammar_cannot_be_constructed_directly(info):
    with pytest.raises(TypeError):
        xmask.CompiledGrammar()
    with pytest.raises(TypeError):
        xmask.CompiledGrammar(Grammar.from_ebnf(G_A), info)


# ---------------------------------------------------------------------------- cache_stats


def _check_stats(cg):
    info = cg.tokenizer_info
    n_text = info.vocab_size - len(info.special_token_ids)  # grammar-eligible tokens
    n_words = (info.vocab_size + 31) // 32
    records = cg.precompute().cache_stats()
    assert records and len(records) == cg.cache_summary()["top_states"]
    rule_names = set(cg.grammar.rules)
    seen_states = set()
    for r in records:
        assert set(dataclasses.asdict(r)) == {
            "rule", "state", "accepted", "rejected", "uncertain", "storage", "bytes", "shared",
            "position", "entry_owner",
        }
        assert r.rule in rule_names
        assert r.state not in seen_states
        seen_states.add(r.state)
        assert min(r.accepted, r.rejected, r.uncertain) >= 0
        assert r.accepted + r.rejected + r.uncertain == n_text, r
        assert r.storage in {"accepted", "rejected", "bitset"}
        payload = {"accepted": r.accepted, "rejected": r.rejected, "bitset": n_words}[r.storage]
        assert r.bytes == 4 * (payload + r.uncertain), r
        assert payload == min(r.accepted, r.rejected, n_words), r  # the smallest form
        assert isinstance(r.shared, bool)
    assert sum(r.bytes for r in records if not r.shared) <= cg.memory_size_bytes
    return records


def test_cache_stats_default_tokenizer(info):
    c = xmask.GrammarCompiler(info)
    for g in [G_A, G_B, G_C, G_RECORD]:
        _check_stats(c.compile_grammar(g))
    records = _check_stats(c.compile_builtin_json_grammar())
    assert {r.storage for r in records} >= {"accepted", "bitset"}
    assert any(r.shared for r in records)
    assert any(r.uncertain for r in records)


def test_cache_stats_llama3(llama3):
    info, _ = llama3
    c = xmask.GrammarCompiler(info)
    records = _check_stats(c.compile_builtin_json_grammar())
    assert sum(r.accepted + r.rejected + r.uncertain for r in records) == len(records) * 128000
    _check_stats(c.compile_grammar(G_RECORD))


# ---------------------------------------------------------------------------- threads


def test_max_threads_does_not_change_the_result(llama3):
    info, tok = llama3
    docs = {
        "json": ('{"a": [1, {"b": null}], "c": "d\\u00e9\u4f60"}', None),
        "record": (RECORD_DOC, G_RECORD),
    }
    c1 = xmask.GrammarCompiler(info, max_threads=1, precompute=True)
    c4 = xmask.GrammarCompiler(info, max_threads=4, precompute=True)
    for name, (doc, grammar) in docs.items():
        if grammar is None:
            g1, g4 = c1.compile_builtin_json_grammar(), c4.compile_builtin_json_grammar()
        else:
            g1, g4 = c1.compile_grammar(grammar), c4.compile_grammar(grammar)
        assert len(g1.cache_stats()) > 32, name  # several chunks for the thread pool
        assert g1.cache_stats() == g4.cache_stats(), name
        assert g1.memory_size_bytes == g4.memory_size_bytes
        ids = tok.encode(doc, add_special_tokens=False).ids
        w1, w4 = mask_walk(g1, ids), mask_walk(g4, ids)
        assert len(w1) == len(ids) + 1
        for k, (a, b) in enumerate(zip(w1, w4)):
            np.testing.assert_array_equal(a, b, err_msg=f"{name} step {k}")
        # and the walk is right: the reference agrees at the end
        m = xmask.GrammarMatcher(g4)
        for tid in ids:
            assert m.accept_token(tid)
        ref = np.zeros_like(w4[-1])
        m._reference_fill_next_token_bitmask(ref)
        np.testing.assert_array_equal(w4[-1], ref)


def test_compile_json_schema_keeps_property_order():
    """The cache key canonicalization must not reorder ``properties`` (their order is the
    member order of the grammar): a dict, its JSON text, and the generated members agree."""
    info = xmask.TokenizerInfo.from_huggingface(xmask.default_tokenizer())
    comp = xmask.GrammarCompiler(info)
    schema = {"type": "object", "properties": {"zeta": {"type": "integer"}, "alpha": {"type": "string"}},
              "required": ["zeta", "alpha"], "additionalProperties": False}
    for s in (schema, json.dumps(schema)):
        cg = comp.compile_json_schema(s)
        assert xmask.GrammarMatcher(cg).accept_string('{"zeta": 1, "alpha": "a"}')
        assert not xmask.GrammarMatcher(cg).accept_string('{"alpha": "a", "zeta": 1}')


def test_schema_and_regex_errors_are_exported():
    """``xmask.UnsupportedSchemaError`` (with the JSON pointer) and ``xmask.RegexSyntaxError``
    (with the position) are the public names the issue fixes."""
    with pytest.raises(xmask.UnsupportedSchemaError) as e:
        xmask.Grammar.from_json_schema({"type": "object", "properties": {"a": {"type": "array", "uniqueItems": True}}})
    assert e.value.path == "#/properties/a/uniqueItems"
    with pytest.raises(xmask.RegexSyntaxError) as r:
        xmask.Grammar.from_regex("ab(?=c)")
    assert r.value.position == 2
    assert xmask.testing.is_grammar_accept_string('root ::= "a"+', "aa")


def test_compile_json_schema_deeply_nested():
    """A 1,000-deep schema goes through the compiler's canonicalization (json.dumps recursion)
    and compiles; the depth is enforced exactly."""
    s = {"type": "integer"}
    for _ in range(1000):
        s = {"type": "array", "items": s}
    info = xmask.TokenizerInfo.from_huggingface(xmask.default_tokenizer())
    comp = xmask.GrammarCompiler(info)
    text = '{"type": "array", "items": ' * 1000 + '{"type": "integer"}' + "}" * 1000
    for schema in (s, text):
        cg = comp.compile_json_schema(schema, any_whitespace=False)
        assert xmask.GrammarMatcher(cg).accept_string("[" * 1000 + "1" + "]" * 1000)
        assert not xmask.GrammarMatcher(cg).accept_string("[" * 999 + "1" + "]" * 999 + "]")


# ------------------------------------------------------------------------------ CompileLimits

@pytest.mark.parametrize("field,value,compile_call,message", [
    ("max_automaton_states", 50, lambda c: c.compile_json_schema({"type": "string", "maxLength": 40}),
     "CompileLimits.max_automaton_states"),
    ("max_repeat", 5, lambda c: c.compile_grammar('root ::= "a"{0,6}'), "CompileLimits.max_repeat"),
    ("max_nfa_states", 20, lambda c: c.compile_grammar('root ::= "abcdefghij"{3}'),
     "CompileLimits.max_nfa_states"),
    ("max_enum_values", 2, lambda c: c.compile_json_schema({"enum": [1, 2, 3]}),
     "enum with more than 2 values"),
    ("max_alternatives", 2,
     lambda c: c.compile_json_schema({"properties": {"a": {"anyOf": [
         {"type": "string"}, {"type": "integer"}, {"type": "null"}]}}}),
     "CompileLimits.max_alternatives"),
    ("max_schema_rules", 3,
     lambda c: c.compile_json_schema({"type": "array", "items": {"type": "array", "items": {
         "type": "array", "items": {"type": "array", "items": {"$ref": "#"}}}}}),
     "CompileLimits.max_schema_rules"),
])
def test_compile_limits_raise_clear_errors(info, field, value, compile_call, message):
    """Each configured limit stops the compile with a GrammarLimitError naming it; the same
    input compiles under the default limits."""
    tight = xmask.GrammarCompiler(info, cache_enabled=False,
                                  limits=xmask.CompileLimits(**{field: value}))
    with pytest.raises(xmask.GrammarLimitError, match=message.replace(".", r"\.")):
        compile_call(tight)
    assert isinstance(compile_call(xmask.GrammarCompiler(info, cache_enabled=False)),
                      xmask.CompiledGrammar)


def test_compile_limits_validation(info):
    with pytest.raises(ValueError, match="max_repeat must be a positive int"):
        xmask.CompileLimits(max_repeat=0)
    with pytest.raises(ValueError, match="max_enum_values"):
        xmask.CompileLimits(max_enum_values=2.5)
    with pytest.raises(TypeError, match="CompileLimits"):
        xmask.GrammarCompiler(info, limits={"max_repeat": 3})
    with pytest.raises(dataclasses.FrozenInstanceError):
        xmask.CompileLimits().max_repeat = 3


def test_compile_deadline(info):
    """max_compile_seconds stops a long compile with a GrammarLimitError naming the limit
    (a deadline already passed at the first check); a generous one changes nothing."""
    schema = {"type": "object", "properties": {
        f"p{i}": {"type": "string", "maxLength": 200, "pattern": "^[a-z]+@[a-z]+$"} for i in range(4)}}
    tight = xmask.GrammarCompiler(info, cache_enabled=False,
                                  limits=xmask.CompileLimits(max_compile_seconds=1e-9))
    with pytest.raises(xmask.GrammarLimitError, match=r"CompileLimits\.max_compile_seconds"):
        tight.compile_json_schema(schema)
    with pytest.raises(xmask.GrammarLimitError, match=r"CompileLimits\.max_compile_seconds"):
        tight.compile_grammar('root ::= [a-z]{0,5000}')
    roomy = xmask.GrammarCompiler(info, cache_enabled=False,
                                  limits=xmask.CompileLimits(max_compile_seconds=600))
    g = roomy.compile_json_schema({"type": "integer", "minimum": 3})
    assert xmask.GrammarMatcher(g).accept_string("3")
    assert not xmask.GrammarMatcher(g).accept_string("-")  # below the minimum: no prefix
    with pytest.raises(ValueError, match="max_compile_seconds"):
        xmask.CompileLimits(max_compile_seconds=0)


def test_limited_compiler_masks_equal_reference_llama3(llama3):
    """A compiler with explicit CompileLimits (time limit included) on the real Llama-3
    vocabulary: a schema exercising this session's automaton constructions (bounded-repeat
    copies of a JSON string character, nested optionals from a pattern DFA, a UTF-8 class)
    gives masks equal to the slow reference at every step, and every valid token is allowed."""
    info, hf = llama3
    compiler = xmask.GrammarCompiler(info, max_threads=2, cache_enabled=False, limits=xmask.CompileLimits(
        max_automaton_states=100_000, max_compile_seconds=600))
    schema = {"type": "object", "properties": {
        "name": {"type": "string", "minLength": 2, "maxLength": 40},
        "code": {"type": "string", "pattern": "^([0-9a-z]+)?$", "maxLength": 30},
        "greek": {"type": "string", "pattern": "^[α-ω]{1,6}$"},
    }, "required": ["name", "code", "greek"]}
    compiled = compiler.compile_json_schema(schema, strict_mode=True, any_whitespace=False)
    doc = json.dumps({"name": "Zoë \"Z\" 🙂 Ng", "code": "ab12cd", "greek": "αβγ"})
    ids = hf.encode(doc, add_special_tokens=False).ids
    walk_equals_reference(xmask.GrammarMatcher(compiled), ids + [info.stop_token_ids[0]], info.vocab_size)
    # over the limits: the schema needs more states than allowed.  An eager compile raises;
    # a two-part one leaves "name" (a plain bounded string) pending, so the limit its states
    # cross is raised by the first call that needs the whole grammar (README)
    small = xmask.CompileLimits(max_automaton_states=1_000)
    with pytest.raises(xmask.GrammarLimitError, match=r"CompileLimits\.max_automaton_states"):
        xmask.GrammarCompiler(info, cache_enabled=False, precompute=True,
                              limits=small).compile_json_schema(schema)
    lazy = xmask.GrammarCompiler(info, cache_enabled=False, limits=small).compile_json_schema(schema)
    with pytest.raises(xmask.GrammarLimitError, match=r"CompileLimits\.max_automaton_states"):
        xmask.GrammarMatcher(lazy).accept_string("{")
