"""The string-body shortcut of the token classifier never changes a cache entry.

A state whose own byte transitions (and tail calls) accept every plain-string token (valid UTF-8
without '"', '\\' or control bytes) gets those tokens as accepted without walking them, and
only the other tokens are walked (runtime/_classify.pyx); free text that refuses a few ASCII
bytes (a trigger's) takes the plain tokens without those bytes.  Here every state of real grammars is classified with
the shortcut and with the full walk, on real tokenizers, and the entries must be identical.
"""

import codecs
import json
import os
import random

import numpy as np
import pytest
import tokenizers
from conftest import require_data, tokenizer_json
from maskutil import cache_entries

import xmask
from xmask.runtime import _classify, _plain_depth

GRAMMARS = [
    ("builtin", None),
    ("schema", {"type": "object", "properties": {
        "name": {"type": "string"},
        "code": {"type": "string", "pattern": "^[A-Z]{2}-[0-9]+$"},
        "short": {"type": "string", "maxLength": 3},
        "tags": {"type": "array", "items": {"type": "string", "enum": ['a"b', "é", "x"]}},
        "when": {"type": "string", "format": "date-time"},
        "n": {"type": "number"}}, "required": ["name"]}),
    ("ebnf", 'root ::= "<" [^<>]* ">" | "\\"" ([^"\\\\] | "\\\\" ["nt])* "\\""'),
    ("ebnf", 'root ::= "s" [^\\x00-\\x7f]* "e" | [a-z\\u00e0-\\u00ff]+'),
    ("ebnf", 'root ::= ("\\n" | "\\"" | "\\\\") [^"\\\\\\x00-\\x1f]* ";"'),
    ("ebnf", 'root ::= [^<]* ("<" [a-z]+ ">")?'),
    ("stag", {"type": "triggered_tags", "triggers": ["<tool_call>", "<|x"], "tags": [
        {"begin": "<tool_call>\n", "content": {"type": "json_schema", "json_schema": {
            "type": "object", "properties": {"a": {"type": "string"}}}}, "end": "\n</tool_call>"},
        {"begin": "<|x|>", "content": {"type": "const_string", "value": "y"}, "end": "~"}],
        "excludes": ["DROP", "\n\n\n"]}),
    ("stag", {"type": "any_text", "excludes": ["</s>"]}),
    # bounded string bodies: chains of positions that read every plain string of up to the
    # room they have left (the depth shortcut, runtime/_plain_depth.pyx)
    ("schema", {"type": "object", "properties": {
        "s": {"type": "string", "minLength": 2, "maxLength": 40},
        "t": {"type": "string", "maxLength": 24, "pattern": "^[a-z ]*$"}}}),
    ("ebnf", 'root ::= "\\"" [^"\\\\\\x00-\\x1f]{0,50} "\\"" | "<" [^<>]{3,20} ">"'),
    # long bounded strings: one state per position, which calls a shared rule for every
    # character but ASCII (the plain-text search follows the call)
    ("schema", {"type": "object", "properties": {
        "s": {"type": "string", "maxLength": 100},
        "t": {"type": "string", "minLength": 70, "maxLength": 150},
        "u": {"type": "string", "minLength": 66}}}),
] + [("maskbench", name) for name in (
    "Github_trivial---o75594.json", "Glaiveai2K---calculate_area_b4863a84.json",
    "Github_medium---o27154.json")]


def _compile(compiler, kind, what):
    if kind == "builtin":
        return compiler.compile_builtin_json_grammar()
    if kind == "schema":
        return compiler.compile_json_schema(what)._resolved()
    if kind == "stag":
        fmt = dict(what)
        for tag in fmt.get("tags", ()):
            tag.setdefault("type", "tag")
        return compiler.compile_structural_tag({"type": "structural_tag", "format": fmt})
    if kind == "maskbench":
        path = require_data("maskbench", what)
        return compiler.compile_json_schema(json.loads(path.read_text())["schema"],
                                            strict_mode=False)._resolved()
    return compiler.compile_grammar(what)


def _entries(compiled):
    compiled.precompute()
    return cache_entries(compiled)


@pytest.mark.parametrize("tok_name", ["llama3", "qwen2.5"])
def test_shortcut_entries_equal_full_walk(tok_name):
    tok = tokenizers.Tokenizer.from_file(str(tokenizer_json(tok_name)))
    info = xmask.TokenizerInfo.from_huggingface(tok)
    compiler = xmask.GrammarCompiler(info, cache_enabled=False)
    shortcut_states = 0
    for kind, what in GRAMMARS:
        try:
            _classify.set_plain_fast_path(True)
            fast = _entries(_compile(compiler, kind, what))
            _classify.set_plain_fast_path(False)
            full = _entries(_compile(compiler, kind, what))
        finally:
            _classify.set_plain_fast_path(True)
        assert fast.keys() == full.keys()
        for s in fast:
            assert fast[s] == full[s], f"{kind} state {s}"
        shortcut_states += sum(1 for e in fast.values() if e[0] != 0)
    assert shortcut_states > 0  # string bodies were met (they accept most of the vocabulary)


def test_shortcut_tokens_are_what_a_json_string_holds():
    # the per-tokenizer split the shortcut relies on: per first byte b, a token is a shortcut
    # token iff its text after b -- or all of it, when b can start plain text -- is strict
    # UTF-8 (the last character may be cut short) without '"', '\\' or bytes below 0x20
    tok = tokenizers.Tokenizer.from_file(str(tokenizer_json("llama3")))
    info = xmask.TokenizerInfo.from_huggingface(tok)
    arrays = xmask.GrammarCompiler(info)._vocab_tables.arrays
    n_sorted = len(arrays["sorted_ids"])
    offs, data = arrays["tok_offsets"], arrays["tok_bytes"].tobytes()
    group, sc_off, rest_off = (arrays[k].tolist() for k in ("group_off", "shortcut_off",
                                                             "rest_off"))
    sc = arrays["shortcut_pos"].tolist()[: sc_off[256]]
    rest = arrays["rest_pos"].tolist()[: rest_off[256]]
    lcp = arrays["rest_lcp"].tolist()
    assert group[256] == n_sorted and len(sc) + len(rest) == n_sorted
    assert not set(sc) & set(rest) and len(rest) < len(sc)

    def plain(b):
        if any(c < 0x20 or c in (0x22, 0x5C) for c in b):
            return False
        try:  # an incremental decoder keeps a valid cut-off last character pending
            codecs.getincrementaldecoder("utf-8")().decode(b, final=False)
        except UnicodeDecodeError:
            return False
        return True

    def token(pos):
        return data[offs[pos]:offs[pos + 1]]

    for b in range(256):
        members = range(group[b], group[b + 1])
        assert all(token(p)[0] == b for p in members)
        lead_plain = plain(bytes([b]))
        expected = [p for p in members
                    if (plain(token(p)) if lead_plain else plain(token(p)[1:]))]
        assert sc[sc_off[b]:sc_off[b + 1]] == expected, b
        others = rest[rest_off[b]:rest_off[b + 1]]
        taken = set(expected)
        assert others == [p for p in members if p not in taken], b
        for i in range(1, len(others)):
            x, y = token(others[i - 1]), token(others[i])
            assert lcp[rest_off[b] + i] == len(os.path.commonprefix([x, y]))


def test_bounded_string_positions_read_plain_text_up_to_their_room():
    # in {"s": <string of at most 40 characters>} each position of the chain reads every plain
    # string of as many bytes as it has characters of room (a plain byte is at most one
    # character), and none reads every plain string: the depth shortcut, not the whole one
    info = xmask.TokenizerInfo.from_huggingface(str(tokenizer_json("llama3")))
    compiler = xmask.GrammarCompiler(info, cache_enabled=False)
    compiled = compiler.compile_json_schema(
        {"type": "object", "properties": {"s": {"type": "string", "maxLength": 40}},
         "required": ["s"]})._resolved()
    tables = compiled._automaton_tables
    matcher = xmask.GrammarMatcher(compiled)
    assert matcher.accept_string('{"s": "')
    seen = []
    for k in range(40):
        (state,) = matcher._debug_top_states()
        seen.append(_plain_depth.plain_depth_of(tables, state, 128))
        assert matcher.accept_string("x")
    assert seen[0] == (40, False) and seen[30] == (10, False) and seen[39] == (1, False)
    assert [d for d, _ in seen] == list(range(40, 0, -1))
    # an unbounded string body is closed: every plain string
    free = compiler.compile_json_schema({"type": "string"})._resolved()
    m = xmask.GrammarMatcher(free)
    assert m.accept_string('"ab')
    (state,) = m._debug_top_states()
    assert _plain_depth.plain_depth_of(free._automaton_tables, state, 128) == (128, True)


def test_long_bounded_string_positions_follow_the_character_call():
    # from 64 characters on, a position reads ASCII itself and calls the shared character tail
    # for the rest, which returns to the next position: the depth search follows that call, so
    # a position reads every plain string of up to its room (in bytes: a plain byte is at most
    # one character), a multi-byte character and an escape included; the tail's own top is
    # covered by the position's (one top in the fill's eyes, two on the stack)
    info = xmask.TokenizerInfo.from_huggingface(str(tokenizer_json("llama3")))
    compiler = xmask.GrammarCompiler(info, cache_enabled=False)
    compiled = compiler.compile_json_schema({"type": "string", "maxLength": 200})._resolved()
    tables = compiled._automaton_tables
    names = compiled._automaton.rule_names
    tail = int(compiled._automaton.rule_start[names.index("str_char_tail")])
    matcher = xmask.GrammarMatcher(compiled)
    assert matcher.accept_string('"')
    for k, piece in enumerate(["é", "x", "\\n", "😀", "中"] * 40):
        tops = matcher._debug_top_states()
        assert len(tops) == 2 and tail in tops  # the position and the tail it calls
        (pos,) = [t for t in tops if t != tail]
        room = 200 - k
        assert _plain_depth.plain_depth_of(tables, pos, 128) == (min(room, 128), False)
        assert matcher.accept_string(piece)
    assert matcher.accept_string('"') and matcher.is_completed()
    # minLength only: past the bound the loop state reads every plain string (closed)
    loop = compiler.compile_json_schema({"type": "string", "minLength": 64})._resolved()
    tail = int(loop._automaton.rule_start[loop._automaton.rule_names.index("str_char_tail")])
    m = xmask.GrammarMatcher(loop)
    assert m.accept_string('"' + "é" * 64)
    (pos,) = [t for t in m._debug_top_states() if t >= 0 and t != tail]
    assert _plain_depth.plain_depth_of(loop._automaton_tables, pos, 128) == (128, True)


def test_free_text_states_take_the_shortcut():
    # the root free-text state of a triggered tag reads plain text but the trigger's last byte
    # (after "<tool_call" only "\n" may follow '>'), through the tail calls of the
    # one-rule-per-state trigger automaton
    info = xmask.TokenizerInfo.from_huggingface(str(tokenizer_json("llama3")))
    compiled = _compile(xmask.GrammarCompiler(info, cache_enabled=False), *GRAMMARS[6])
    tables = compiled._automaton_tables
    start = int(compiled._automaton.rule_start[compiled._automaton.rule_names.index("triggered_tags")])
    ok, avoid = _classify.plain_text_check(tables, start)
    assert ok and avoid != 0 and avoid & (1 << (ord(">") & 63))
    assert not avoid & (1 << (ord("a") & 63))  # letters are taken without a walk


def test_shortcut_signatures_name_the_ascii_bytes_after_the_first():
    tok = tokenizers.Tokenizer.from_file(str(tokenizer_json("qwen2.5")))
    arrays = xmask.GrammarCompiler(xmask.TokenizerInfo.from_huggingface(tok))._vocab_tables.arrays
    offs, data = arrays["tok_offsets"], arrays["tok_bytes"].tobytes()
    n = int(arrays["shortcut_off"][256])
    for i in range(0, n, 97):
        pos = int(arrays["shortcut_pos"][i])
        tail = data[offs[pos] + 1:offs[pos + 1]]
        expected = 0
        for c in tail:
            if c < 0x80:
                expected |= 1 << (c & 63)
        assert int(arrays["shortcut_sig"][i]) == expected


@pytest.mark.parametrize("plain_share", [0.01, 0.5, 0.95])
def test_bulk_plain_tokens_give_every_entry_form(plain_share):
    # A string body takes its plain tokens as bits at once (VocabTables.plain_bits), walking
    # only those longer than its room; on real tokenizers the entry is then a rejected list
    # (the tests above).  A vocabulary where plain tokens are few gives accepted ids, one where
    # they are many a bitset; every entry equals the full walk's.
    rng = random.Random(7)
    plain_chars = "abcdefghij é中"
    other = ['"', "\\", "\n", "\x01", '",', '"}', "a\"b"]
    vocab = []
    for i in range(4000):
        if rng.random() < plain_share:
            # (one first byte: a group big enough for the shortcut even when plain tokens are few)
            vocab.append("a" + "".join(rng.choice(plain_chars) for _ in range(rng.randint(0, 24))))
        else:
            # (no valid escape: few tokens but plain ones are accepted)
            vocab.append(rng.choice(other) + "".join(rng.choice("xyz")
                                                     for _ in range(rng.randint(0, 8))))
    vocab = list(dict.fromkeys(vocab)) + ["</s>"]
    info = xmask.TokenizerInfo(vocab, stop_token_ids=[len(vocab) - 1])
    compiler = xmask.GrammarCompiler(info, cache_enabled=False)
    schema = {"type": "object", "properties": {"s": {"type": "string", "maxLength": 30},
                                               "t": {"type": "string"}}}
    try:
        _classify.set_plain_fast_path(True)
        fast = _entries(compiler.compile_json_schema(schema)._resolved())
        _classify.set_plain_fast_path(False)
        full = _entries(compiler.compile_json_schema(schema)._resolved())
    finally:
        _classify.set_plain_fast_path(True)
    assert fast == full
    # the entry of the unbounded string body, written from the bulk bits
    compiled = compiler.compile_json_schema(schema)._resolved()
    matcher = xmask.GrammarMatcher(compiled)
    assert matcher.accept_string('{"t": "')
    (body,) = matcher._debug_top_states()
    entries = _entries(compiled)
    assert entries[body] == fast[body]
    assert fast[body][0] == {0.01: 0, 0.5: 2, 0.95: 2}[plain_share]
