"""Corrupt, truncated, wrong-version, wrong-kind and crafted serialized data raise the documented
errors (naming what and where), never crash the runtime, and are never silently accepted."""

import base64
import json

import numpy as np
import pytest

import xmask
from xmask import Grammar
from xmask.serialization import CorruptJSONError
from xmask.serialization.format import dump_document

VERSION = xmask.get_serialization_version()


@pytest.fixture(scope="module")
def info():
    return xmask.default_tokenizer_info()


@pytest.fixture(scope="module")
def compiled(info):
    # a recursive rule (a call edge) and a bounded repeat, every cache entry classified
    return xmask.GrammarCompiler(info, precompute=True).compile_grammar(
        'root ::= "(" root ")" | [a-z]{1,3}'
    )


def loaders(info):
    return {
        "tokenizer_info": xmask.TokenizerInfo.deserialize_json,
        "grammar": Grammar.deserialize_json,
        "compiled_grammar": lambda s: xmask.CompiledGrammar.deserialize_json(s, info),
    }


def texts(info, compiled):
    return {
        "tokenizer_info": info.serialize_json(),
        "grammar": compiled.grammar.serialize_json(),
        "compiled_grammar": compiled.serialize_json(),
    }


def test_truncated_data_is_a_format_error(info, compiled):
    load = loaders(info)
    for kind, text in texts(info, compiled).items():
        for cut in (0, 1, len(text) // 3, len(text) - 1):
            with pytest.raises(xmask.DeserializeFormatError) as err:
                load[kind](text[:cut])
            assert isinstance(err.value, xmask.InvalidJSONError)  # what XGrammar raises
            assert isinstance(err.value, CorruptJSONError) and "not valid JSON" in str(err.value)


def test_corrupted_payload_fails_the_checksum(info, compiled):
    load = loaders(info)
    for kind, text in texts(info, compiled).items():
        # flip one character inside the body (a base64 payload or a grammar node)
        i = text.index('"body"') + len(text) // 2 // 2
        while not text[i].isalnum():
            i += 1
        bad = text[:i] + ("A" if text[i] != "A" else "B") + text[i + 1:]
        with pytest.raises(xmask.DeserializeFormatError, match="checksum mismatch"):
            load[kind](bad)


def test_reformatted_data_still_loads(info, compiled):
    # canonical checksum: re-indented, key-reordered copies (a JSON database column) verify
    text = compiled.serialize_json()
    again = json.dumps(json.loads(text), indent=2, sort_keys=True)
    assert xmask.CompiledGrammar.deserialize_json(again, info).cache_stats() == compiled.cache_stats()


def test_wrong_version_names_both_versions(info, compiled):
    load = loaders(info)
    for kind, text in texts(info, compiled).items():
        doc = json.loads(text)
        doc["__VERSION__"] = "xmask-v0"
        with pytest.raises(xmask.DeserializeVersionError) as err:
            load[kind](json.dumps(doc))
        assert "'xmask-v0'" in str(err.value) and repr(VERSION) in str(err.value)
        del doc["__VERSION__"]
        with pytest.raises(xmask.DeserializeVersionError, match="missing __VERSION__"):
            load[kind](json.dumps(doc))


def test_xgrammar_data_is_a_version_error(info):
    xgrammar = pytest.importorskip("xgrammar")  # a benchmark peer, not a test dependency

    text = xgrammar.Grammar.from_ebnf('root ::= "a"').serialize_json()
    with pytest.raises(xmask.DeserializeVersionError) as err:
        Grammar.deserialize_json(text)
    assert xgrammar.get_serialization_version() in str(err.value)


def test_wrong_kind_is_a_format_error(info, compiled):
    load = loaders(info)
    all_texts = texts(info, compiled)
    for kind in load:
        for other, text in all_texts.items():
            if other == kind:
                continue
            with pytest.raises(xmask.DeserializeFormatError, match="is a serialized"):
                load[kind](text)
    for junk in ("[]", "42", '"x"', "null", "{}"):
        with pytest.raises((xmask.DeserializeFormatError, xmask.DeserializeVersionError)):
            Grammar.deserialize_json(junk)
    with pytest.raises(TypeError):
        Grammar.deserialize_json(42)


def test_bytes_input_is_accepted_and_bad_utf8_rejected(info):
    text = info.serialize_json()
    assert xmask.TokenizerInfo.deserialize_json(text.encode()).vocab_hash == info.vocab_hash
    with pytest.raises(xmask.DeserializeFormatError, match="UTF-8"):
        xmask.TokenizerInfo.deserialize_json(b"\xff" + text.encode())


# ------------------------------------------- crafted data: valid checksum, invalid contents


def recrafted(text, edit):
    """Apply ``edit`` to the decoded body and re-wrap it with a valid checksum."""
    doc = json.loads(text)
    edit(doc["body"])
    return dump_document(doc["kind"], doc["body"])


def get_arr(field):
    return np.frombuffer(base64.b64decode(field["b64"]), dtype=np.dtype(field["dtype"])).copy()


def put_arr(field, arr):
    field["b64"] = base64.b64encode(arr.astype(field["dtype"]).tobytes()).decode()
    field["shape"] = list(arr.shape)


def edit_array(section, name, change):
    def edit(body):
        field = body[section][name]
        arr = get_arr(field)
        put_arr(field, change(arr))
    return edit


def set_first(value):
    def change(a):
        a[0] = value
        return a
    return change


CRAFTED = [
    ("automaton", "trans", set_first(10**6), r"automaton\.trans"),
    ("automaton", "byte_class", set_first(255), r"automaton\.byte_class"),
    ("automaton", "call_target", set_first(1), r"automaton\.call_target"),
    ("automaton", "call_ret", set_first(-7), r"automaton\.call_ret"),
    ("automaton", "flags", lambda a: a[:-1], r"automaton\.flags"),
    ("automaton", "rule_ctx_flat", set_first(10**6), r"automaton\.rule_ctx_flat"),
    ("automaton", "rule_ctx_offsets", lambda a: a[::-1].copy(), r"automaton\.rule_ctx_offsets"),
    ("mask_cache", "state_entry", lambda a: np.full_like(a, 10**6), r"mask_cache\.state_entry"),
    ("mask_cache", "state_entry", lambda a: np.zeros_like(a), r"cannot be a stack top"),
    ("mask_cache", "entry_len", lambda a: a + 10**6, r"mask_cache\.entry_len"),
    ("mask_cache", "unc", lambda a: a + 10**6, r"mask_cache\.unc"),
    ("mask_cache", "entry_kind", lambda a: np.full_like(a, 9), r"mask_cache\.entry_kind"),
    ("mask_cache", "entry_accepted", lambda a: a + 10**6, r"mask_cache\.entry_accepted"),
    ("mask_cache", "entry_kind", lambda a: (a + 1) % 3, r"mask_cache\.entry_len"),
]


@pytest.mark.parametrize("section,name,change,where", CRAFTED,
                         ids=[f"{c[1]}-{i}" for i, c in enumerate(CRAFTED)])
def test_crafted_tables_are_rejected(info, compiled, section, name, change, where):
    text = recrafted(compiled.serialize_json(), edit_array(section, name, change))
    with pytest.raises(xmask.DeserializeFormatError, match=where):
        xmask.CompiledGrammar.deserialize_json(text, info)


def test_crafted_token_id_out_of_vocabulary_is_rejected(info):
    # an accepted-list entry whose token id lies past the vocabulary (the runtime would write
    # outside the bitmask row)
    compiled = xmask.GrammarCompiler(info, precompute=True).compile_grammar('root ::= "{"')
    kinds = get_arr(json.loads(compiled.serialize_json())["body"]["mask_cache"]["entry_kind"])
    assert 0 in kinds.tolist()
    text = recrafted(compiled.serialize_json(),
                     edit_array("mask_cache", "data", lambda a: a + info.vocab_size))
    with pytest.raises(xmask.DeserializeFormatError, match=r"mask_cache\.data"):
        xmask.CompiledGrammar.deserialize_json(text, info)


def test_crafted_left_recursion_is_rejected(info, compiled):
    # move root's recursive call to the start state: root would call itself before reading a
    # byte, and the runtime's closure would push frames forever
    def edit(body):
        off = get_arr(body["automaton"]["call_offsets"])
        n_calls = int(off[-1])
        assert n_calls >= 1
        off[1:] = n_calls  # every call now belongs to state 0, the root's start
        put_arr(body["automaton"]["call_offsets"], off)
        target = get_arr(body["automaton"]["call_target"])
        assert (target == 0).all()

    with pytest.raises(xmask.DeserializeFormatError, match="left recursion"):
        xmask.CompiledGrammar.deserialize_json(recrafted(compiled.serialize_json(), edit), info)


def test_crafted_grammar_nodes_are_rejected():
    text = Grammar.from_ebnf('root ::= "a" x\nx ::= [b-c]*').serialize_json()
    cases = [
        (lambda b: b["nodes"].append(["s", [len(b["nodes"]) + 5]]), r"nodes\[\d+\]"),
        (lambda b: b["nodes"].append(["c", [9, 1], 0, 0]), "bad character range"),
        (lambda b: b["nodes"].append(["?", 1]), "malformed node"),
        (lambda b: b["rules"].append(["y", 0]) or b["nodes"].__setitem__(0, ["r", "nope"]),
         "nope"),
        (lambda b: b.__setitem__("root", "missing"), "missing"),
        (lambda b: b["rules"].append(list(b["rules"][0])), "defined twice"),
    ]
    for edit, pattern in cases:
        with pytest.raises(xmask.DeserializeFormatError, match=pattern):
            Grammar.deserialize_json(recrafted(text, edit))


def test_crafted_tokenizer_info_is_rejected(info):
    text = info.serialize_json()
    cases = [
        (lambda b: b.__setitem__("vocab_size", 3), "token_lengths"),
        (lambda b: b.__setitem__("stop_token_ids", [10**9]), "out of range"),
        (lambda b: b.__setitem__("vocab_type", 17), "vocab_type"),
        (lambda b: b.__setitem__("special_token_ids", [0] + b["special_token_ids"]), "vocab_hash"),
        (lambda b: b.__setitem__("vocab_size", "many"), r"vocab_size: expected an int"),
        (lambda b: b["token_bytes"].__setitem__("b64", "!!"), r"token_bytes\.b64"),
        (lambda b: b["token_lengths"].__setitem__("dtype", "<f8"), r"token_lengths\.dtype"),
    ]
    for edit, pattern in cases:
        with pytest.raises(xmask.DeserializeFormatError, match=pattern):
            xmask.TokenizerInfo.deserialize_json(recrafted(text, edit))


TOKEN_CRAFTED = [  # (array, change, where): tables of token edges (Token(...) elements)
    ("token_set_of", lambda a: np.zeros_like(a), r"automaton\.token_set_of"),
    ("token_set_of", lambda a: np.where(a >= 0, 7, a), r"automaton\.token_set_of"),
    ("token_target", lambda a: np.where(a >= 0, 10**6, a), r"automaton\.token_target"),
    ("token_target", lambda a: np.where(a < 0, 0, a), r"automaton\.token_target"),
    ("token_bits", lambda a: a[:, :-1].copy(), r"automaton\.token_bits"),
    ("token_bits", lambda a: a | np.uint32(0xFFFFFFFF), r"automaton\.token_bits"),
]


@pytest.mark.parametrize("name,change,where", TOKEN_CRAFTED,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(TOKEN_CRAFTED)])
def test_crafted_token_edges_are_rejected(info, name, change, where):
    from xmask.grammar.ir import Bytes, Seq, TokenSet

    assert info.vocab_size % 32  # the last word has bits past the vocabulary
    grammar = Grammar({"root": Seq((Bytes(b"a"), TokenSet((3, 4))))})
    compiled = xmask.GrammarCompiler(info).compile_grammar(grammar)

    def edit(body):
        field = body["automaton"][name]
        arr = get_arr(field).reshape(field["shape"])
        put_arr(field, change(arr))

    text = recrafted(compiled.serialize_json(), edit)
    with pytest.raises(xmask.DeserializeFormatError, match=where):
        xmask.CompiledGrammar.deserialize_json(text, info)
