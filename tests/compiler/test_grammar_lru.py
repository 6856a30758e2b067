"""The compiler's LRU cache (``grammar_lru``): a compile's cost does not grow with the number of
cached grammars, and the byte limit still holds, exactly for small caches and within
``RECOUNT_EVERY`` compiles for large ones (cached grammars grow as fills classify states)."""

import doctest

import pytest

import xmask
from xmask.compiler import grammar_lru
from xmask.compiler.held_bytes import held_bytes


@pytest.fixture(scope="module")
def info():
    return xmask.default_tokenizer_info()


def _grammar(i: int) -> str:
    return f'root ::= "w{i}" [a-z]*'


def test_module_doctest():
    assert doctest.testmod(grammar_lru).failed == 0


def test_an_insert_counts_only_the_new_grammar_in_a_large_cache(info, monkeypatch):
    compiler = xmask.GrammarCompiler(info)  # default limit: 1 GiB, never reached here
    n = grammar_lru.EXACT_UP_TO + 10
    for i in range(n):
        compiler.compile_grammar(_grammar(i))
    calls = []
    real = grammar_lru.held_bytes

    def counting(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(grammar_lru, "held_bytes", counting)
    for i in range(n, n + 10):
        compiler.compile_grammar(_grammar(i))
    # one count per insert (none of the older grammars: the recount comes every RECOUNT_EVERY)
    assert len(calls) == 10
    calls.clear()
    size = compiler.get_cache_size_bytes()  # asked for: counted exactly
    assert len(calls) == n + 10
    assert size == sum(held_bytes(c) for c in compiler._cache.values())


def _grow(compiled, info, text="w0abcdefghij"):
    """Fills over ``text``: the grammar's token-mask cache classifies states (it grows)."""
    m = xmask.GrammarMatcher(compiled)
    bitmask = xmask.allocate_token_bitmask(1, info.vocab_size)
    for ch in text:
        m.fill_next_token_bitmask(bitmask)
        assert m.accept_string(ch)


def test_a_large_cache_that_grew_is_evicted_within_recount_every_compiles(info):
    grammars = [_grammar(i) for i in range(grammar_lru.EXACT_UP_TO + 4)]
    probe = xmask.GrammarCompiler(info, cache_enabled=False)
    sizes = [held_bytes(probe.compile_grammar(g)) for g in grammars]
    g0 = probe.compile_grammar(grammars[0])
    _grow(g0, info)
    growth = held_bytes(g0) - sizes[0]
    assert growth > 0
    limit = sum(sizes) + growth // 2  # all fit as compiled, not once the first has grown
    compiler = xmask.GrammarCompiler(info, cache_limit_bytes=limit)
    cached = [compiler.compile_grammar(g) for g in grammars]
    assert len(compiler._cache) == len(grammars)
    _grow(cached[0], info)
    assert sum(held_bytes(c) for c in cached) > limit
    # within RECOUNT_EVERY compiles the cache is counted again and fits its limit
    for i in range(grammar_lru.RECOUNT_EVERY):
        compiler.compile_grammar(f'root ::= "{i}"')
    assert compiler.get_cache_size_bytes() <= limit
    assert compiler.compile_grammar(grammars[0]) is not cached[0]  # evicted: least recently used


def test_small_caches_stay_exact_at_every_compile(info):
    grammars = [_grammar(i) for i in range(4)]
    probe = xmask.GrammarCompiler(info, cache_enabled=False)
    sizes = [held_bytes(probe.compile_grammar(g)) for g in grammars]
    limit = sum(sizes[:3])  # three fit, four do not
    compiler = xmask.GrammarCompiler(info, cache_limit_bytes=limit)
    first = compiler.compile_grammar(grammars[0])
    _grow(first, info)  # the next inserts must see it
    for g in grammars[1:3]:
        compiler.compile_grammar(g)
    total = compiler.get_cache_size_bytes()
    assert total <= limit
    assert total == sum(held_bytes(c) for c in compiler._cache.values())
    assert compiler.compile_grammar(grammars[0]) is not first  # it grew: evicted first
