"""A compiled grammar keeps how to rebuild its grammar IR, not the IR (issue 10: the IR's
objects made every full GC collection scan tens of thousands of objects per kept grammar).
The rebuilt grammar must equal the one compiled, serialization must be unchanged, a rebuild
must say nothing (the compile already warned), and grammars with captures keep their IR."""

import gc
import pickle
import types
import warnings

import pytest

import xmask

from test_compile_leaves_no_cycles import JOBS, SCHEMA


@pytest.fixture(scope="module")
def info():
    return xmask.TokenizerInfo.from_huggingface(xmask.default_tokenizer())


@pytest.fixture(scope="module")
def compiler(info):
    return xmask.GrammarCompiler(info, cache_enabled=False)


FRESH = {
    "json_schema": lambda info: xmask.Grammar.from_json_schema(SCHEMA),
    "regex": lambda info: xmask.Grammar.from_regex(r"[a-z]+@[a-z]+\.(com|org){1,3}"),
    "builtin_json": lambda info: xmask.Grammar.builtin_json_grammar(),
}


def _tracked_size(obj) -> int:
    """GC-tracked objects reachable from ``obj`` (the grammar slot of a compiled grammar) that
    belong to it: functions, modules and the shared tokenizer are not followed."""
    shared = (type, types.FunctionType, types.BuiltinFunctionType, types.MethodType,
              types.ModuleType, xmask.TokenizerInfo)
    seen, stack = set(), [obj]
    while stack:
        o = stack.pop()
        if id(o) in seen:
            continue
        seen.add(id(o))
        if not isinstance(o, shared):
            stack.extend(r for r in gc.get_referents(o) if gc.is_tracked(r))
    return len(seen)


@pytest.mark.parametrize("kind", sorted(JOBS))
def test_rebuilt_grammar_equals_compiled_one(compiler, info, kind):
    compiled = JOBS[kind](compiler)
    first, again = str(compiled.grammar), str(compiled.grammar)
    assert first == again
    if kind in FRESH:
        assert first == str(FRESH[kind](info))
    # the grammar slot holds a few objects, not the IR tree
    assert _tracked_size(compiled._grammar) < 40


def test_builtin_json_rebuilt(compiler, info):
    compiled = compiler.compile_builtin_json_grammar()
    assert str(compiled.grammar) == str(FRESH["builtin_json"](info))


@pytest.mark.parametrize("kind", sorted(JOBS))
def test_serialization_round_trip_unchanged(compiler, info, kind):
    compiled = JOBS[kind](compiler)
    text = compiled.serialize_json()
    again = xmask.CompiledGrammar.deserialize_json(text, info)
    assert again.serialize_json() == text
    assert str(pickle.loads(pickle.dumps(compiled)).grammar) == str(compiled.grammar)


def test_rebuild_does_not_warn_again(compiler):
    schema = {"type": "object", "properties": {"a": {"type": "string", "maxLenght": 3}}}
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        compiled = compiler.compile_json_schema(schema)
        n = len(got)
        compiled.grammar
        compiled.serialize_json()
    assert n >= 1  # the compile warned about the misspelt keyword
    assert len(got) == n


def test_user_grammar_is_kept(compiler):
    g = xmask.Grammar.from_ebnf('root ::= "a" [0-9]+')
    compiled = compiler.compile_grammar(g)
    assert compiled.grammar is g or str(compiled.grammar) == str(g)


def test_grammar_with_captures_keeps_its_ir(compiler):
    compiled = compiler.compile_lark('start: a\na[capture="n"]: /[0-9]+/')
    assert compiled._captured_grammar() is not None
    m = xmask.GrammarMatcher(compiled)
    assert m.accept_string("42")
    assert m.get_captures()


def test_matcher_creation_never_rebuilds(compiler, monkeypatch):
    compiled = compiler.compile_json_schema(SCHEMA)
    from xmask.compiler import grammar_source

    def boom(self):
        raise AssertionError("a matcher rebuilt the grammar")

    monkeypatch.setattr(grammar_source.GrammarSource, "build", boom)
    bitmask = xmask.allocate_token_bitmask(1, compiled.tokenizer_info.vocab_size)
    xmask.GrammarMatcher(compiled).fill_next_token_bitmask(bitmask)
