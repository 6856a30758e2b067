"""A compile leaves no reference cycles behind: everything it does not keep is freed by
reference counting at once.  Cyclic garbage waits for the cyclic collector, and a collection
runs in whichever thread allocates next, holding the GIL for as long as it scans (issue 10:
compiles in a background thread must not stall the server's other threads)."""

import gc

import pytest

import xmask

SCHEMA = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "pattern": "^[A-Z]{2}[0-9]{3,5}$", "maxLength": 8},
        "n": {"type": "integer", "minimum": -5, "maximum": 1234, "multipleOf": 3},
        "x": {"type": "number", "exclusiveMinimum": 0.5, "maximum": 1e3},
        "tags": {"type": "array", "items": {"enum": ["a", "ab", "abc"]}, "maxItems": 3},
        "when": {"type": "string", "format": "date-time"},
    },
    "patternProperties": {"^k_[a-z]+$": {"type": "boolean"}},
    "additionalProperties": False,
    "required": ["id"],
}


@pytest.fixture(scope="module")
def compiler():
    info = xmask.TokenizerInfo.from_huggingface(xmask.default_tokenizer())
    return xmask.GrammarCompiler(info, cache_enabled=False)


JOBS = {
    "json_schema": lambda c: c.compile_json_schema(SCHEMA),
    "ebnf": lambda c: c.compile_grammar('root ::= "[" item ("," item)* "]"\nitem ::= [a-z]+ | root'),
    "regex": lambda c: c.compile_regex(r"[a-z]+@[a-z]+\.(com|org){1,3}"),
    "lark": lambda c: c.compile_lark('start: "a" b\nb: /[0-9]+/ | "(" start ")"'),
    "structural_tag": lambda c: c.compile_structural_tag({
        "type": "structural_tag", "format": {"type": "triggered_tags", "triggers": ["<f"], "tags": [
            {"begin": "<f>", "content": {"type": "json_schema", "json_schema": SCHEMA}, "end": "</f>"}]}}),
}


def _compile_and_fill(compiler, kind):
    compiled = JOBS[kind](compiler)
    bitmask = xmask.allocate_token_bitmask(1, compiled.tokenizer_info.vocab_size)
    xmask.GrammarMatcher(compiled).fill_next_token_bitmask(bitmask)
    # a JSON schema compiled in two parts: its rest is built in the background worker after
    # the fill (and pauses the collector meanwhile); wait for it, so it is checked too
    compiled._resolved()


@pytest.mark.parametrize("kind", sorted(JOBS))
def test_compile_leaves_no_cyclic_garbage(compiler, kind):
    _compile_and_fill(compiler, kind)  # warm the process-wide memos and lazy imports
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        _compile_and_fill(compiler, kind)
        gc.collect()
        garbage = [type(o).__qualname__ + ":" + getattr(o, "__qualname__", "") for o in gc.garbage]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert garbage == []


def test_objects_a_compile_keeps_skip_the_young_collections(compiler):
    """When the compile's GC pause ends, what it keeps (the compiled grammar's IR tree) is in
    the oldest generation: no young collection has to scan it (xmask/_gc_pause.py)."""
    _compile_and_fill(compiler, "json_schema")
    gc.collect()
    compiled = JOBS["json_schema"](compiler)
    # a two-part compile's rest first (its own pause): the first part it frees when installed
    # must not leave ids that the grammar's objects could take after the snapshot
    compiled._resolved()
    young = {id(o) for o in gc.get_objects(0)} | {id(o) for o in gc.get_objects(1)}
    kept = [e for _, e in compiled.grammar]
    assert kept and not any(id(e) in young for e in kept)
    assert gc.isenabled()


def test_an_application_freeze_is_left_alone(compiler, monkeypatch):
    from xmask import _gc_pause

    monkeypatch.setattr(_gc_pause, "_app_froze", False)  # (restored after: later tests promote)
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        JOBS["regex"](compiler)
        assert gc.get_freeze_count() > frozen - 100  # still frozen (a few were freed meanwhile)
    finally:
        gc.unfreeze()
