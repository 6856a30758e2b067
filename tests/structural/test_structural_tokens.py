"""Token-level structural-tag formats on Llama-3 and Qwen2.5 (padded): token strings resolve
against the tokenizer (special tokens included), masks equal the slow reference, a special-token
trigger dispatches, and a token string the vocabulary lacks names its JSON path."""

import pytest
from stag_util import Tok, allowed

import xmask

SPECIAL = {"llama3": "<|python_tag|>", "qwen2.5": "<|box_start|>"}
SPECIAL_END = {"llama3": "<|end_header_id|>", "qwen2.5": "<|box_end|>"}  # not stop tokens


@pytest.fixture(scope="module", params=["llama3", "qwen2.5"])
def tok(request):
    return Tok(request.param)


def _id(tok, text):
    from xmask.tokenizer.token_lookup import resolve_token

    return resolve_token(tok.info, text)


def _st(fmt):
    return {"type": "structural_tag", "format": fmt}


def test_special_token_trigger_dispatches(tok):
    begin, end = SPECIAL[tok.name], SPECIAL_END[tok.name]
    fmt = {"type": "token_triggered_tags", "trigger_tokens": [begin], "tags": [{
        "begin": {"type": "token", "token": begin},
        "content": {"type": "json_schema", "json_schema": {"type": "object", "properties": {
            "q": {"type": "integer"}}, "required": ["q"]}},
        "end": {"type": "token", "token": end}}]}
    compiled = tok.compiler.compile_structural_tag(_st(fmt))
    b, e = _id(tok, begin), _id(tok, end)
    ids = tok.encode("some text ") + [b] + tok.encode('{"q": 5}') + [e] + tok.encode(" more") + \
        [b] + tok.encode('{"q": 6}') + [e]
    m = tok.walk(compiled, ids, tok.name)
    assert m.is_completed()
    # inside the arguments the end token is masked until the JSON is complete
    m = xmask.GrammarMatcher(compiled)
    for t in tok.encode("x") + [b] + tok.encode('{"q"'):
        assert m.accept_token(t)
    fast, ref = tok.rows(m)
    assert (fast == ref).all() and not allowed(fast, e) and not allowed(fast, b)


def test_tag_with_token_begin_and_string_end(tok):
    begin = SPECIAL[tok.name]
    fmt = {"type": "tag", "begin": {"type": "token", "token": begin},
           "content": {"type": "any_text"}, "end": "</end>"}
    compiled = tok.compiler.compile_structural_tag(_st(fmt))
    ids = [_id(tok, begin)] + tok.encode("free </en text</end>")
    assert tok.walk(compiled, ids, tok.name).is_completed()
    m = xmask.GrammarMatcher(compiled)
    fast, _ = tok.rows(m)
    assert allowed(fast, _id(tok, begin)) and sum(bin(int(w) & 0xFFFFFFFF).count("1") for w in fast) == 1


def test_any_tokens_exclude_token_and_token_dispatch(tok):
    special = _id(tok, SPECIAL[tok.name])
    comma = tok.encode(",")[0]
    fmt = {"type": "sequence", "elements": [
        {"type": "any_tokens", "exclude_tokens": [","], "max_tokens": 3},
        {"type": "token", "token": ","},
        {"type": "exclude_token", "exclude_tokens": [SPECIAL[tok.name]]},
        {"type": "token_dispatch", "rules": [[SPECIAL[tok.name], {"type": "const_string",
                                                                  "value": "!"}]],
         "exclude_tokens": [","]}]}
    compiled = tok.compiler.compile_structural_tag(_st(fmt))
    ids = tok.encode("ab") + [comma] + tok.encode("x") + tok.encode("yz") + [special] + \
        tok.encode("!") + tok.encode("end")
    assert tok.walk(compiled, ids, tok.name).is_completed()
    m = xmask.GrammarMatcher(compiled)
    for t in tok.encode("a") * 3:
        assert m.accept_token(t)
    fast, ref = tok.rows(m)  # three tokens used: only the comma may follow
    assert (fast == ref).all() and allowed(fast, comma) and not allowed(fast, tok.encode("a")[0])


def test_unknown_token_string_names_the_path(tok):
    fmt = {"type": "sequence", "elements": [{"type": "const_string", "value": "a"},
                                            {"type": "token", "token": "<|no such token|>"}]}
    with pytest.raises(xmask.InvalidStructuralTagError) as info:
        tok.compiler.compile_structural_tag(_st(fmt))
    assert info.value.path == "format.elements[1].token"
    with pytest.raises(xmask.InvalidStructuralTagError) as info:
        tok.compiler.compile_structural_tag(_st({"type": "token", "token": 10 ** 7}))
    assert info.value.path == "format.token"


def test_token_begin_not_among_triggers(tok):
    fmt = {"type": "token_triggered_tags", "trigger_tokens": [SPECIAL[tok.name]], "tags": [{
        "begin": {"type": "token", "token": SPECIAL_END[tok.name]},
        "content": {"type": "const_string", "value": "x"}, "end": "y"}]}
    with pytest.raises(xmask.InvalidStructuralTagError) as info:
        tok.compiler.compile_structural_tag(_st(fmt))
    assert info.value.path == "format.tags[0].begin"
