"""Grammar literals that spell a special token's text may also be produced by that one token
(``xmask/compiler/special_literals.py``), on real tokenizers: gpt-oss's Harmony markers
(``<|channel|>``, ``<|message|>``, ``<|constrain|>``, ``<|start|>``: o200k special tokens),
Llama-3's ``<|python_tag|>``, Qwen2.5's ``<tool_call>``.  Free text (character classes,
``any_text``) still never allows a special token.  A stop token ends the output where the
grammar can end; elsewhere it may be a literal that spells its text (o200k's ``<|call|>``,
``<|return|>``, ``<|end|>`` are stop tokens of its tokenizer.json-derived TokenizerInfo, and
real gpt-oss output closes Harmony calls with them).  Masks equal the slow reference at every
step.
"""

import functools
import json

import numpy as np
import pytest
import tokenizers
from conftest import tokenizer_json
from maskutil import GreedyTokens, bit, walk_equals_reference
from model_messages import GOOD_CALLS, MALFORMED_CALLS, TOOLS, message

import xmask
from xmask import Grammar
from xmask.compiler.special_literals import StopLiteralToken
from xmask.grammar.ir import Bytes, Choice, Seq, TokenSet

CHANNEL, START, MESSAGE, CONSTRAIN = 200005, 200006, 200008, 200003
PYTHON_TAG, BEGIN_OF_TEXT, EOT = 128010, 128000, 128009
TOOL_CALL = 151657


@functools.lru_cache(maxsize=None)
def _tok(name, stops=None):
    path = str(tokenizer_json(name))
    info = xmask.TokenizerInfo.from_huggingface(
        path, **({} if stops is None else {"stop_token_ids": list(stops)}))
    return info, tokenizers.Tokenizer.from_file(path), GreedyTokens(info, name)


def encode_with_specials(name, text, stops=None):
    """``text`` as the tokenizer encodes it, special tokens as their ids; a stop token of the
    TokenizerInfo (o200k's ``<|end|>`` by default) is spelled with ordinary tokens, as stop
    tokens are never matched by a literal."""
    info, tk, greedy = _tok(name, stops)
    stop = set(info.stop_token_ids)
    out = []
    for t in tk.encode(text, add_special_tokens=False).ids:
        out.extend(greedy.ids(info.decoded_vocab[t]) if t in stop else [t])
    return out


@functools.lru_cache(maxsize=None)
def harmony(choice="auto", stops=None):
    info = _tok("gpt-oss-o200k", stops)[0]
    stag = xmask.get_model_structural_tag("harmony", TOOLS, choice, "enabled")
    return xmask.GrammarCompiler(info).compile_structural_tag(stag)


def accepts(compiled, ids):
    m = xmask.GrammarMatcher(compiled)
    return all(m.accept_token(t) for t in ids) and m.accept_token(
        compiled.tokenizer_info.stop_token_ids[0]) and m.is_terminated()


def test_rewrite_shape():
    info = xmask.TokenizerInfo.from_huggingface(str(tokenizer_json("gpt-oss-o200k")))
    from xmask.compiler.special_literals import allow_special_literals
    g = allow_special_literals(Grammar({"root": Bytes(b"<|start|>assistant<|channel|>")}), info)
    assert g.rules["root"] == Seq((Choice((Bytes(b"<|start|>"), TokenSet((START,)))),
                                   Bytes(b"assistant"),
                                   Choice((Bytes(b"<|channel|>"), TokenSet((CHANNEL,))))))
    plain = Grammar({"root": Bytes(b'{"a": 1}<|end|>')})  # <|end|> is a stop token here
    assert allow_special_literals(plain, info).rules["root"] == Seq((
        Bytes(b'{"a": 1}'), Choice((Bytes(b"<|end|>"), StopLiteralToken((200007,))))))
    assert allow_special_literals(Grammar({"root": Bytes(b"plain")}), info).rules["root"] \
        == Bytes(b"plain")


def test_harmony_accepts_real_gpt_oss_tokens_masks_equal_reference():
    text = message("harmony", "enabled")
    ids = encode_with_specials("gpt-oss-o200k", text)
    assert {CHANNEL, START, MESSAGE, CONSTRAIN} <= set(ids)
    info = _tok("gpt-oss-o200k")[0]
    walk_equals_reference(xmask.GrammarMatcher(harmony()), ids + [info.stop_token_ids[0]],
                          info.vocab_size)


def test_harmony_text_spelling_still_accepted():
    info, _, greedy = _tok("gpt-oss-o200k")
    assert accepts(harmony(), greedy.ids(message("harmony", "enabled").encode()))


def test_harmony_end_token_when_not_a_stop_token():
    # gpt-oss stops on <|return|> / <|call|>; with those stop ids <|end|> is an ordinary
    # special token and the literal "<|end|>" between channels takes the real token too.
    stops = (200002, 199999, 200012)
    ids = encode_with_specials("gpt-oss-o200k", message("harmony", "enabled"), stops)
    assert 200007 in ids and accepts(harmony(stops=stops), ids)


@pytest.mark.parametrize("mutation", sorted(MALFORMED_CALLS))
def test_harmony_malformed_call_rejected_with_real_tokens(mutation):
    ids = encode_with_specials("gpt-oss-o200k",
                               message("harmony", "enabled", MALFORMED_CALLS[mutation]))
    assert not accepts(harmony(), ids)


def test_harmony_required_call_with_real_tokens():
    ids = encode_with_specials("gpt-oss-o200k", message("harmony", "enabled", [GOOD_CALLS[1]]))
    assert accepts(harmony("required"), ids)
    final = encode_with_specials("gpt-oss-o200k",
                                 "<|channel|>final<|message|>Sunny.<|end|>")
    assert not accepts(harmony("required"), final)


def test_harmony_serialized_grammar_keeps_masks():
    cg = harmony()
    again = xmask.CompiledGrammar.deserialize_json(cg.serialize_json(), cg.tokenizer_info)
    ids = encode_with_specials("gpt-oss-o200k", message("harmony", "enabled"))
    assert accepts(again, ids)


def _rows(matcher, vocab_size):
    fast = np.asarray(xmask.allocate_token_bitmask(1, vocab_size))
    ref = np.asarray(xmask.allocate_token_bitmask(1, vocab_size))
    matcher.fill_next_token_bitmask(fast)
    matcher._reference_fill_next_token_bitmask(ref)
    assert np.array_equal(fast, ref)
    return fast


def test_llama_python_tag_literal_and_free_text():
    info, _, greedy = _tok("llama3")
    cg = xmask.GrammarCompiler(info).compile_grammar('root ::= "<|python_tag|>" [^\\n]* "\\n"')
    m = xmask.GrammarMatcher(cg)
    first = _rows(m, info.vocab_size)
    assert bit(first, PYTHON_TAG) and not bit(first, BEGIN_OF_TEXT)
    assert m.accept_token(PYTHON_TAG)
    inside = _rows(m, info.vocab_size)  # free text: no special token at all
    assert not any(bit(inside, t) for t in info.special_token_ids if t < info.vocab_size)
    for t in greedy.ids(b"print(1)"):
        assert m.accept_token(t)
    inside = _rows(m, info.vocab_size)
    assert not bit(inside, PYTHON_TAG) and not bit(inside, BEGIN_OF_TEXT)
    # the text spelling of the marker is still accepted
    m = xmask.GrammarMatcher(cg)
    assert all(m.accept_token(t) for t in greedy.ids(b"<|python_tag|>x\n"))
    assert m.is_completed()


def test_llama_any_text_never_allows_special_tokens():
    info = _tok("llama3")[0]
    stag = {"type": "structural_tag", "format": {"type": "sequence", "elements": [
        {"type": "const_string", "value": "<|python_tag|>"}, {"type": "any_text"}]}}
    m = xmask.GrammarMatcher(xmask.GrammarCompiler(info).compile_structural_tag(stag))
    assert m.accept_token(PYTHON_TAG)
    row = _rows(m, info.vocab_size)
    assert not bit(row, PYTHON_TAG) and not bit(row, BEGIN_OF_TEXT)
    assert bit(row, EOT)  # any_text may end: the stop token ends it, as usual


def test_llama_stop_token_in_literal_where_the_grammar_cannot_end():
    info, _, greedy = _tok("llama3")
    cg = xmask.GrammarCompiler(info).compile_grammar('root ::= "<|eot_id|>x" | "y" "<|eot_id|>"?')
    m = xmask.GrammarMatcher(cg)
    assert bit(_rows(m, info.vocab_size), EOT)  # cannot end: eot may be the literal
    assert m.accept_token(EOT) and not m.is_terminated()
    assert not bit(_rows(m, info.vocab_size), EOT)
    assert all(m.accept_token(t) for t in greedy.ids(b"x")) and m.is_completed()
    assert m.accept_token(EOT) and m.is_terminated()  # can end: eot ends the output
    m = xmask.GrammarMatcher(cg)
    assert all(m.accept_token(t) for t in greedy.ids(b"<|eot_id|>x")) and m.is_completed()
    # after "y" the grammar can end: eot is the stop token, not the optional literal
    m = xmask.GrammarMatcher(cg)
    assert m.accept_token(greedy.ids(b"y")[0]) and m.accept_token(EOT) and m.is_terminated()
    # an explicit Token(eot) element still never matches a stop token (as XGrammar)
    cg = xmask.GrammarCompiler(info).compile_grammar(f'root ::= Token({EOT}) "x" | "z"')
    m = xmask.GrammarMatcher(cg)
    assert not bit(_rows(m, info.vocab_size), EOT) and not m.accept_token(EOT)
    walk_equals_reference(xmask.GrammarMatcher(xmask.GrammarCompiler(info).compile_grammar(
        'root ::= "<|eot_id|>x" | "y" "<|eot_id|>"?')), [EOT] + greedy.ids(b"x") + [EOT],
        info.vocab_size)


def test_qwen_tool_call_literal_token_or_text():
    info, tk, _ = _tok("qwen2.5")
    cg = xmask.GrammarCompiler(info).compile_grammar('root ::= "<tool_call>\\n{}"')
    body = tk.encode("\n{}", add_special_tokens=False).ids
    m = xmask.GrammarMatcher(cg)
    assert bit(_rows(m, info.vocab_size), TOOL_CALL)
    assert all(m.accept_token(t) for t in [TOOL_CALL] + body) and m.is_completed()
    by_text = {b: i for i, b in enumerate(info.decoded_vocab) if b}
    plain = [by_text[b"<"], by_text[b"tool"], by_text[b"_call"], by_text[b">"]]
    m = xmask.GrammarMatcher(cg)
    assert all(m.accept_token(t) for t in plain + body) and m.is_completed()


def test_overlapping_special_texts_every_segmentation():
    # specials "<a>" (4) and "a>b" (5) overlap inside the literal "<a>b"
    info = xmask.TokenizerInfo(["<", "a", ">", "b", "<a>", "a>b", "</s>"],
                               stop_token_ids=[6], special_token_ids=[4, 5])
    cg = xmask.GrammarCompiler(info).compile_grammar('root ::= "<a>b"')
    for ids, ok in [([4, 3], True), ([0, 5], True), ([0, 1, 2, 3], True), ([4, 5], False),
                    ([0, 1, 5], False)]:
        m = xmask.GrammarMatcher(cg)
        got = all(m.accept_token(t) for t in ids) and m.is_completed()
        assert got == ok, ids


def test_compiled_grammar_keeps_the_users_grammar():
    info = _tok("llama3")[0]
    cg = xmask.GrammarCompiler(info).compile_grammar('root ::= "<|python_tag|>"')
    assert str(cg.grammar) == 'root ::= "<|python_tag|>"'
    assert json.loads(cg.serialize_json())  # the original grammar is what is serialized


TRIGGER_TAG = {"type": "structural_tag", "format": {
    "type": "triggered_tags", "triggers": ["<|channel|>"],
    "tags": [{"type": "tag", "begin": "<|channel|>commentary",
              "content": {"type": "const_string", "value": " ok"}, "end": "<|message|>"}]}}


def test_a_special_token_whose_text_is_a_trigger_fires_it():
    # Kimi / gpt-oss style: the trigger is a special token; after clean free text the token
    # itself fires the trigger, the masks equal the reference, and the text spelling still works
    info, tk, _ = _tok("gpt-oss-o200k")
    compiled = xmask.GrammarCompiler(info).compile_structural_tag(json.dumps(TRIGGER_TAG))
    ids = tk.encode("Some text<|channel|>commentary ok<|message|>more", add_special_tokens=False).ids
    assert CHANNEL in ids and MESSAGE in ids
    walk_equals_reference(xmask.GrammarMatcher(compiled), ids + [info.stop_token_ids[0]],
                          info.vocab_size)
    spelled = xmask.GrammarMatcher(compiled)
    assert spelled.accept_string("Some text<|channel|>commentary ok<|message|>more")
    bitmask = xmask.allocate_token_bitmask(1, info.vocab_size)
    free = xmask.GrammarMatcher(compiled)
    assert free.accept_string("Some text")
    free.fill_next_token_bitmask(bitmask)
    assert bit(bitmask, CHANNEL) and not bit(bitmask, START) and not bit(bitmask, MESSAGE)
    # with a partial match pending ("<"), the token would straddle it: only the text path
    pending = xmask.GrammarMatcher(compiled)
    assert pending.accept_string("Some <")
    pending.fill_next_token_bitmask(bitmask)
    assert not bit(bitmask, CHANNEL)
    # without a tokenizer (no special tokens known) the grammar is the character path only
    assert "Token(" not in str(xmask.Grammar.from_structural_tag(TRIGGER_TAG))


def real_gpt_oss(text):
    """``text`` as gpt-oss emits it: every special marker (stop tokens included) one token."""
    info, tk, _ = _tok("gpt-oss-o200k")
    return tk.encode(text, add_special_tokens=False).ids


def test_harmony_real_output_with_default_stop_tokens():
    # <|end|>, <|call|>, <|return|> are stop tokens of the tokenizer.json-derived info; the
    # real ids close the analysis message and the calls, masks equal the reference throughout
    info = _tok("gpt-oss-o200k")[0]
    assert {200007, 200012, 200002} <= set(info.stop_token_ids)
    ids = real_gpt_oss(message("harmony", "enabled"))  # two calls
    assert {200007, 200012} <= set(ids)
    m = xmask.GrammarMatcher(harmony())
    assert all(m.accept_token(t) for t in ids)
    assert m.is_completed() and not m.is_terminated()  # <|call|> was the tag's end literal
    # masks = reference at every step (one call); a second <|call|> now ends the output
    one = real_gpt_oss(message("harmony", "enabled", GOOD_CALLS[:1]))
    walk_equals_reference(xmask.GrammarMatcher(harmony()), one + [200012], info.vocab_size)


def test_harmony_final_message_ends_with_return_token():
    info = _tok("gpt-oss-o200k")[0]
    text = ("<|channel|>analysis<|message|>Think.<|end|><|start|>assistant"
            "<|channel|>final<|message|>Sunny.<|return|>")
    ids = real_gpt_oss(text)
    assert ids[-1] == 200002
    walk_equals_reference(xmask.GrammarMatcher(harmony()), ids + [200002], info.vocab_size)


@pytest.mark.parametrize("mutation", sorted(MALFORMED_CALLS))
def test_harmony_malformed_call_rejected_with_real_stop_tokens(mutation):
    ids = real_gpt_oss(message("harmony", "enabled", MALFORMED_CALLS[mutation]))
    assert not accepts(harmony(), ids)


def test_harmony_stop_token_is_not_free_text():
    # inside the analysis text the grammar cannot end and no literal is next: <|call|> and
    # <|return|>... only as the analysis tag's end strings (<|end|> / <|return|>)
    info = _tok("gpt-oss-o200k")[0]
    m = xmask.GrammarMatcher(harmony())
    for t in real_gpt_oss("<|channel|>analysis<|message|>Think"):
        assert m.accept_token(t)
    row = _rows(m, info.vocab_size)
    assert bit(row, 200007) and bit(row, 200002) and not bit(row, 200012)
    assert not bit(row, 199999)


def test_ebnf_tag_dispatch_trigger_fired_by_its_special_token():
    # XGrammar matches a special token's text in TagDispatch triggers; compiled from EBNF text
    # xmask lets the token fire the trigger after clean free text, as for structural tags
    info, tk, _ = _tok("gpt-oss-o200k")
    ebnf = ('root ::= TagDispatch(("<|channel|>", ch), ("<x>", ch))\n'
            'ch ::= "commentary ok" "<|message|>"')
    compiled = xmask.GrammarCompiler(info).compile_grammar(ebnf)
    text = "Some text<|channel|>commentary ok<|message|>more<x>commentary ok<|message|>"
    ids = tk.encode(text, add_special_tokens=False).ids
    assert CHANNEL in ids and MESSAGE in ids
    walk_equals_reference(xmask.GrammarMatcher(compiled), ids + [info.stop_token_ids[0]],
                          info.vocab_size)
    assert xmask.GrammarMatcher(compiled).accept_string(text)
    pending = xmask.GrammarMatcher(compiled)
    assert pending.accept_string("Some <")
    assert not bit(_rows(pending, info.vocab_size), CHANNEL)
    # the same grammar parsed without a tokenizer: characters only
    m = xmask.GrammarMatcher(xmask.GrammarCompiler(info).compile_grammar(
        xmask.Grammar.from_ebnf(ebnf)))
    assert m.accept_string("Some text") and not bit(_rows(m, info.vocab_size), CHANNEL)
