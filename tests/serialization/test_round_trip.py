"""Round trips of every public object through serialize_json / deserialize_json and pickle:
equal objects, and bit-identical masks (compared with the original and with the slow
reference) on Llama-3 and Qwen2.5's padded vocabulary."""

import json
import multiprocessing
import pickle

import numpy as np
import pytest
from conftest import tokenizer_json
from sertools import DOC, SCHEMA, doc_ids, llama3, qwen, walk_masks  # noqa: F401 (fixtures)

import xmask
from xmask.grammar.ir import Bytes, CharClass, Choice, Repeat, RuleRef, Seq
from xmask import Grammar
from xmask.serialization import TokenizerMismatchError


def same_info(a, b):
    assert a.vocab_hash == b.vocab_hash
    assert a.decoded_vocab == b.decoded_vocab
    assert a.special_token_ids == b.special_token_ids
    assert a.stop_token_ids == b.stop_token_ids
    assert (a.vocab_type, a.vocab_size, a.add_prefix_space) == (
        b.vocab_type, b.vocab_size, b.add_prefix_space)


def same_compiled(a, b):
    assert a.grammar == b.grammar
    assert a.cache_stats() == b.cache_stats()
    assert a.memory_size_bytes == b.memory_size_bytes and repr(a) == repr(b)
    assert a.cache_summary() == b.cache_summary()
    x, y = a._automaton_tables.arrays, b._automaton_tables.arrays
    assert x.keys() == y.keys()
    for k in x:
        np.testing.assert_array_equal(x[k], y[k], err_msg=k)
    x, y = a._mask_cache.export(), b._mask_cache.export()
    assert x.keys() == y.keys()
    for k in x:
        np.testing.assert_array_equal(x[k], y[k], err_msg=k)


# ------------------------------------------------------------------------------ version


def test_version_is_exported_and_written():
    v = xmask.get_serialization_version()
    assert isinstance(v, str) and v
    g = Grammar.from_ebnf('root ::= "a"')
    assert json.loads(g.serialize_json())["__VERSION__"] == v


# ------------------------------------------------------------------------ TokenizerInfo


def test_tokenizer_info_round_trip_real_tokenizers(llama3, qwen):
    for tok in (llama3, qwen):
        text = tok.info.serialize_json()
        assert isinstance(text, str)
        same_info(xmask.TokenizerInfo.deserialize_json(text), tok.info)
        same_info(pickle.loads(pickle.dumps(tok.info)), tok.info)
    assert qwen.info.vocab_size == 151936 and 151935 in qwen.info.special_token_ids


def test_tokenizer_info_round_trip_small_vocabularies():
    infos = [
        xmask.default_tokenizer_info(),
        xmask.TokenizerInfo(["\u2581hi", "<0x0A>", "<0xFF>", "</s>", None], "byte_fallback",
                            vocab_size=9, add_prefix_space=True, special_token_ids=[0]),
        xmask.TokenizerInfo([b"\xff\xfe", b"a", "<|im_end|>"], vocab_size=3),
    ]
    for info in infos:
        same_info(xmask.TokenizerInfo.deserialize_json(info.serialize_json()), info)
        same_info(pickle.loads(pickle.dumps(info, protocol=2)), info)


def test_from_huggingface_with_pretrained_tokenizer_fast(llama3, qwen):
    # the fixtures build them from transformers.PreTrainedTokenizerFast objects
    by_path = xmask.TokenizerInfo.from_huggingface(llama3.path)
    assert llama3.info.vocab_hash == by_path.vocab_hash
    assert llama3.info.vocab_type == xmask.VocabType.BYTE_LEVEL
    assert 128009 in llama3.info.stop_token_ids
    assert qwen.info.vocab_size == 151936
    with pytest.raises(TypeError):  # options are keyword-only, as in XGrammar
        xmask.TokenizerInfo.from_huggingface(llama3.path, 128256)


def test_from_huggingface_stop_tokens_are_the_eos_token(llama3):
    from transformers import PreTrainedTokenizerFast

    # a tokenizer that knows its eos token: exactly [eos_token_id], as XGrammar
    hf = PreTrainedTokenizerFast(tokenizer_file=llama3.path, eos_token="<|eot_id|>")
    assert xmask.TokenizerInfo.from_huggingface(hf).stop_token_ids == [128009]
    assert xmask.TokenizerInfo.from_huggingface(hf, stop_token_ids=7).stop_token_ids == [7]
    # from a path, xmask detects end-of-text / end-of-turn tokens
    assert {128001, 128009} <= set(llama3.info.stop_token_ids)


def test_from_huggingface_stop_tokens_follow_xgrammar(llama3):
    xgrammar = pytest.importorskip("xgrammar")  # a benchmark peer, not a test dependency
    from transformers import PreTrainedTokenizerFast

    hf = PreTrainedTokenizerFast(tokenizer_file=llama3.path, eos_token="<|eot_id|>")
    theirs = xgrammar.TokenizerInfo.from_huggingface(hf)
    assert xmask.TokenizerInfo.from_huggingface(hf).stop_token_ids == list(theirs.stop_token_ids)


def test_dump_metadata_is_a_json_string(llama3):
    meta = llama3.info.dump_metadata()
    assert isinstance(meta, str)
    assert json.loads(meta) == {"vocab_type": 2, "vocab_size": 128256, "add_prefix_space": False,
                                "stop_token_ids": llama3.info.stop_token_ids}
    small = xmask.TokenizerInfo(["a", "\u0120b", "<|endoftext|>"], "byte_level", vocab_size=5)
    again = xmask.TokenizerInfo.from_vocab_and_metadata(["a", "\u0120b", "<|endoftext|>"],
                                                        small.dump_metadata())
    same_info(again, small)


def test_dump_metadata_is_read_by_xgrammar_and_back(llama3):
    xgrammar = pytest.importorskip("xgrammar")  # a benchmark peer, not a test dependency

    small = xmask.TokenizerInfo(["a", "\u0120b", "<|endoftext|>"], "byte_level", vocab_size=5)
    xg = xgrammar.TokenizerInfo.from_vocab_and_metadata(["a", "\u0120b", "<|endoftext|>"],
                                                        small.dump_metadata())
    assert xg.vocab_size == 5 and xg.stop_token_ids == [2]
    back = xmask.TokenizerInfo.from_vocab_and_metadata(["a", "\u0120b", "<|endoftext|>"],
                                                       xg.dump_metadata())
    assert back.vocab_size == 5 and back.stop_token_ids == [2]


def _backend_strings():
    from transformers import PreTrainedTokenizerFast

    for name in ("llama3", "llama2", "qwen2.5"):
        hf = PreTrainedTokenizerFast(tokenizer_file=str(tokenizer_json(name)))
        yield name, hf.backend_tokenizer.to_str()


def test_detect_metadata_from_hf_agrees_with_the_tokenizer_files(llama3):
    by_name = {name: backend for name, backend in _backend_strings()}
    for name, backend in by_name.items():
        ours = xmask.TokenizerInfo._detect_metadata_from_hf(backend)
        assert set(ours) == {"vocab_type", "add_prefix_space"}
        assert isinstance(ours["vocab_type"], xmask.VocabType)
        # the same detection from_huggingface does on the file itself
        info = xmask.TokenizerInfo.from_huggingface(str(tokenizer_json(name)))
        assert ours["vocab_type"] == info.vocab_type, name
        assert ours["add_prefix_space"] == info.add_prefix_space, name


def test_detect_metadata_from_hf_matches_xgrammar(llama3):
    xgrammar = pytest.importorskip("xgrammar")  # a benchmark peer, not a test dependency

    for name, backend in _backend_strings():
        ours = xmask.TokenizerInfo._detect_metadata_from_hf(backend)
        theirs = xgrammar.TokenizerInfo._detect_metadata_from_hf(backend)
        assert int(ours["vocab_type"]) == theirs["vocab_type"].value, name
        assert ours["add_prefix_space"] == theirs["add_prefix_space"], name


def test_detect_metadata_from_hf_rejects_bad_json():
    with pytest.raises(xmask.InvalidJSONError):
        xmask.TokenizerInfo._detect_metadata_from_hf("{not json")


# ------------------------------------------------------------------------------ Grammar


def grammars():
    yield Grammar.from_ebnf('root ::= "a" [0-9]* ("x" | item){2,5} [^"\\\\]\nitem ::= "b" item | "c"')
    yield Grammar.builtin_json_grammar()
    yield Grammar.from_regex(r"[0-9]{2}-[a-z\u00e9]+(\.\d+)?")
    yield Grammar.from_json_schema(SCHEMA)
    # constructs the EBNF printer cannot spell exactly: raw-byte classes, non-UTF-8 literals
    yield Grammar({"root": Seq((Bytes(b"\xff\x00"), CharClass(((0x80, 0xBF),), byte_level=True),
                                Choice((RuleRef("r"), Seq(()))), Repeat(Bytes(b"z"), 0, None))),
                   "r": CharClass(((0x4E00, 0x9FFF),), negated=True)})
    # 1,000-deep nesting: no recursion limit on the way in or out
    deep = {"type": "integer"}
    for _ in range(1000):
        deep = {"type": "array", "items": deep}
    yield deep


def test_grammar_round_trip():
    for g in grammars():
        if isinstance(g, dict):
            from xmask._recursion import deep_recursion

            with deep_recursion():
                g = Grammar.from_json_schema(g)
        text = g.serialize_json()
        again = Grammar.deserialize_json(text)
        assert again == g and again.root == g.root and list(again.rules) == list(g.rules)
        assert pickle.loads(pickle.dumps(g)) == g


def test_grammar_sharing_keeps_the_text_small():
    # a DAG whose tree expansion is 2**40 nodes
    e = Bytes(b"x")
    for _ in range(40):
        e = Seq((e, e))
    g = Grammar({"root": e})
    text = g.serialize_json()
    assert len(text) < 2000
    again = Grammar.deserialize_json(text)
    root = again.rules["root"]
    assert root.items[0] is root.items[1]  # shared again (== would walk the 2**40-node tree)
    assert again.serialize_json() == text


def test_compile_limits_pickle():
    limits = xmask.CompileLimits(max_repeat=7, max_compile_seconds=2.5)
    assert pickle.loads(pickle.dumps(limits)) == limits


# ----------------------------------------------------------------------- CompiledGrammar


@pytest.mark.parametrize("which", ["llama3", "qwen"])
def test_compiled_grammar_round_trip_masks_identical(which, request):
    tok = request.getfixturevalue(which)
    ids = doc_ids(tok)
    for compiled in (tok.compiler.compile_json_schema(SCHEMA),
                     tok.compiler.compile_builtin_json_grammar()):
        text = compiled.serialize_json()
        again = xmask.CompiledGrammar.deserialize_json(text, tok.info)
        same_compiled(again, compiled)
        assert again.tokenizer_info is tok.info
        assert again._vocab_tables is compiled._vocab_tables  # shared, not rebuilt
        # serializing the deserialized grammar gives the same text
        assert again.serialize_json() == text
        original = walk_masks(compiled, ids)
        restored = walk_masks(again, ids, reference_every=9)
        for step, (a, b) in enumerate(zip(original, restored)):
            np.testing.assert_array_equal(a, b, err_msg=f"step {step}")
        # the same walk classified the same states in both
        assert again.serialize_json() == compiled.serialize_json()


def test_unclassified_and_partly_classified_grammars_round_trip(llama3):
    # the token-mask cache fills lazily: a grammar serialized before any fill, or halfway
    # through a walk, loads with the same states pending and classifies them on demand
    compiler = xmask.GrammarCompiler(llama3.info, cache_enabled=False)
    compiled = compiler.compile_json_schema(SCHEMA)
    assert compiled.cache_summary()["classified"] == 0
    again = xmask.CompiledGrammar.deserialize_json(compiled.serialize_json(), llama3.info)
    same_compiled(again, compiled)
    ids = doc_ids(llama3)
    walk_masks(compiled, ids[:3])
    partly = compiled.cache_summary()
    assert 0 < partly["classified"] < partly["top_states"]
    again = xmask.CompiledGrammar.deserialize_json(compiled.serialize_json(), llama3.info)
    same_compiled(again, compiled)
    for a, b in zip(walk_masks(compiled, ids), walk_masks(again, ids, reference_every=1)):
        np.testing.assert_array_equal(a, b)
    assert again.cache_summary()["classified"] > partly["classified"]


def test_compiled_grammar_pickle_carries_its_tokenizer(llama3):
    compiled = llama3.compiler.compile_json_schema(SCHEMA)
    clone = pickle.loads(pickle.dumps(compiled))
    same_info(clone.tokenizer_info, llama3.info)
    same_compiled(clone, compiled)
    # one pickle of many grammars stores the shared tokenizer once
    two = pickle.dumps([compiled, llama3.compiler.compile_builtin_json_grammar()])
    assert len(two) < len(pickle.dumps(compiled)) + len(compiled.serialize_json()) * 2
    a, b = pickle.loads(two)
    assert a.tokenizer_info is b.tokenizer_info


def test_pickled_compiled_grammar_in_spawned_worker(llama3):
    import _workers

    compiled = llama3.compiler.compile_json_schema(SCHEMA)
    ids = doc_ids(llama3)
    parent = [m.tobytes() for m in walk_masks(compiled, ids)]
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1) as pool:
        child = pool.apply(_workers.masks_in_worker, (pickle.dumps(compiled), ids))
    assert len(child) == len(parent)
    for step, (a, b) in enumerate(zip(parent, child)):
        assert a == b, f"worker mask differs at step {step}"


def test_wrong_tokenizer_names_both_hashes(llama3, qwen):
    text = llama3.compiler.compile_builtin_json_grammar().serialize_json()
    with pytest.raises(TokenizerMismatchError) as err:
        xmask.CompiledGrammar.deserialize_json(text, qwen.info)
    assert isinstance(err.value, xmask.DeserializeFormatError)
    msg = str(err.value)
    assert llama3.info.vocab_hash in msg and qwen.info.vocab_hash in msg
    assert err.value.expected_hash == llama3.info.vocab_hash
    with pytest.raises(TypeError):
        xmask.CompiledGrammar.deserialize_json(text, "llama3")


def test_pickled_compiler_compiles_the_same_masks_in_a_spawned_worker(llama3, tmp_path):
    import _workers

    limits = xmask.CompileLimits(max_automaton_states=123_456)
    compiler = xmask.GrammarCompiler(llama3.info, cache_limit_bytes=1 << 30, limits=limits,
                                     cache_dir=tmp_path)
    compiler.compile_builtin_json_grammar()  # the in-memory cache does not travel
    back = pickle.loads(pickle.dumps(compiler))
    assert back._limits == limits and back.tokenizer_info.vocab_hash == llama3.info.vocab_hash
    ids = doc_ids(llama3)
    parent = [m.tobytes() for m in walk_masks(compiler.compile_json_schema(SCHEMA), ids)]
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1) as pool:
        child, config = pool.apply(_workers.compile_with_pickled_compiler,
                                   (pickle.dumps(compiler), SCHEMA, ids))
    assert config == (1 << 30, str(tmp_path), 1)
    assert child == parent


def test_matcher_pickling_raises_a_clear_error(llama3):
    matcher = xmask.GrammarMatcher(llama3.compiler.compile_builtin_json_grammar())
    with pytest.raises(TypeError, match="pickle its CompiledGrammar"):
        pickle.dumps(matcher)
