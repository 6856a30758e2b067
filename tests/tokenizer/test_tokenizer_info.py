"""TokenizerInfo on real Hugging Face tokenizers, hand-made vocabularies and the default BPE."""

from __future__ import annotations

import doctest
import functools
import importlib
import json
import os
import pathlib
import random
import shutil
import subprocess
import sys
import time
import unicodedata

import pytest
from conftest import tokenizer_json

tokenizers = pytest.importorskip("tokenizers")

from xmask.errors import InvalidTokenError, TokenizerError  # noqa: E402
from xmask.tokenizer import (  # noqa: E402
    TokenizerInfo,
    VocabType,
    bytes_to_unicode,
    decode_token,
    default_tokenizer,
    default_tokenizer_info,
)
from xmask.tokenizer.bytes import decode_byte_fallback, decode_byte_level  # noqa: E402
from xmask.tokenizer.vocab import detect_add_prefix_space, detect_vocab_type  # noqa: E402

BYTE_LEVEL = ["llama3", "qwen2.5", "gpt2", "gpt-oss-o200k", "deepseek-v3"]
BYTE_FALLBACK = ["llama2", "mistral-7b-v0.1", "phi3-mini"]
ALL = BYTE_LEVEL + BYTE_FALLBACK


@functools.cache
def info_for(name: str) -> TokenizerInfo:
    return TokenizerInfo.from_huggingface(tokenizer_json(name).parent)


@functools.cache
def hf_for(name: str):
    return tokenizers.Tokenizer.from_file(str(tokenizer_json(name)))


# ------------------------------------------------------------------------------------------
# Sample strings
# ------------------------------------------------------------------------------------------

_FRAGMENTS = [
    "hello",
    " world",
    "The quick brown fox",
    "  ",
    "\n",
    "\n\n",
    "\t",
    "  indented",
    "x=1;",
    '{"a": 1}',
    '"key"',
    ": ",
    ", ",
    "[1, 2.5, -3e10]",
    "null",
    "true",
    "\\n",
    '\\"',
    "\\u00e9",
    "café",
    "naïve",
    "Straße",
    "東京",
    "こんにちは",
    "привет",
    "γειά",
    "😀",
    "🎉🚀",
    "👩‍💻",
    "🇯🇵",
    "€",
    "½",
    "\u00a0",
    "©",
    "0",
    "123456789",
    "3.14159",
    "-",
    "_",
    "~",
    "`",
    "|",
    "<",
    ">",
    "def f(x):\n    return x",
    "</div>",
    "a\r\nb",
    "\x01",
    "\x7f",
]


def sample_strings(seed: int, count: int = 200):
    rng = random.Random(seed)
    out = list(_FRAGMENTS)
    for _ in range(count):
        parts = [rng.choice(_FRAGMENTS) for _ in range(rng.randrange(1, 8))]
        if rng.random() < 0.3:
            parts.append(
                "".join(chr(rng.randrange(0x20, 0x2FFF)) for _ in range(rng.randrange(1, 6)))
            )
        out.append("".join(parts))
    # Drop surrogates and anything a normaliser (Qwen: NFC) would rewrite.
    return [
        s
        for s in out
        if s == unicodedata.normalize("NFC", s) and not any(0xD800 <= ord(c) <= 0xDFFF for c in s)
    ]


# ------------------------------------------------------------------------------------------
# Real tokenizers
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", BYTE_LEVEL)
def test_byte_level_detection(name):
    info = info_for(name)
    assert info.vocab_type is VocabType.BYTE_LEVEL
    assert info.add_prefix_space is False


@pytest.mark.parametrize("name", BYTE_FALLBACK)
def test_byte_fallback_detection(name):
    info = info_for(name)
    assert info.vocab_type is VocabType.BYTE_FALLBACK
    assert info.add_prefix_space is True


@pytest.mark.parametrize("name", ALL)
def test_encode_round_trips_through_decoded_vocab(name):
    info, tok = info_for(name), hf_for(name)
    vocab = info.decoded_vocab
    special = set(info.special_token_ids)
    for s in sample_strings(seed=sum(map(ord, name))):
        ids = tok.encode(s, add_special_tokens=False).ids
        assert not special.intersection(ids), (s, ids)
        got = b"".join(vocab[i] for i in ids)
        if info.add_prefix_space:
            # sentencepiece prepends "\u2581" to the input: exactly one extra leading space.
            assert got == b" " + s.encode("utf-8"), (s, ids)
        else:
            assert got == s.encode("utf-8"), (s, ids)


@pytest.mark.parametrize("name", ALL)
def test_path_and_object_agree(name):
    by_dir = info_for(name)
    by_file = TokenizerInfo.from_huggingface(str(tokenizer_json(name)))
    by_object = TokenizerInfo.from_huggingface(hf_for(name))
    for other in (by_file, by_object):
        assert other.vocab_type == by_dir.vocab_type
        assert other.vocab_size == by_dir.vocab_size
        assert other.add_prefix_space == by_dir.add_prefix_space
        assert other.decoded_vocab == by_dir.decoded_vocab
        assert other.special_token_ids == by_dir.special_token_ids
    # The config's eos token is one of the known names in every shipped tokenizer, so stop
    # detection does not depend on tokenizer_config.json here.
    assert by_file.stop_token_ids == by_dir.stop_token_ids == by_object.stop_token_ids
    assert by_object.vocab_hash == by_dir.vocab_hash


@pytest.mark.parametrize("name", ALL)
def test_invariants(name):
    info, tok = info_for(name), hf_for(name)
    assert info.vocab_size == tok.get_vocab_size(with_added_tokens=True)
    assert len(info.decoded_vocab) == info.vocab_size
    assert info.special_token_ids == sorted(set(info.special_token_ids))
    assert set(info.stop_token_ids) <= set(info.special_token_ids)
    assert info.stop_token_ids, "every shipped tokenizer has a stop token"
    empty = [i for i, b in enumerate(info.decoded_vocab) if not b]
    assert set(empty) <= set(info.special_token_ids)
    # Every added token flagged special is special; every non-special added token is text.
    for idx, added in tok.get_added_tokens_decoder().items():
        if added.special:
            assert idx in info.special_token_ids
        elif idx not in info.stop_token_ids:
            assert idx not in info.special_token_ids
            assert info.decoded_vocab[idx] == added.content.encode()


def test_llama3_special_and_stop():
    info, tok = info_for("llama3"), hf_for("llama3")
    eot = tok.token_to_id("<|eot_id|>")
    bos = tok.token_to_id("<|begin_of_text|>")
    assert info.vocab_size == 128256
    assert eot in info.special_token_ids and eot in info.stop_token_ids
    assert bos in info.special_token_ids and bos not in info.stop_token_ids
    assert info.stop_token_ids == [128001, 128008, 128009]
    assert info.special_token_ids == list(range(128000, 128256))
    assert info.decoded_vocab[tok.token_to_id("Ġworld")] == b" world"
    assert info.decoded_vocab[tok.token_to_id("Ċ")] == b"\n"


def test_llama2_bytes_special_and_stop():
    info, tok = info_for("llama2"), hf_for("llama2")
    assert info.decoded_vocab[tok.token_to_id("<0x0A>")] == b"\n"
    assert info.decoded_vocab[tok.token_to_id("<0xFF>")] == b"\xff"
    assert info.decoded_vocab[tok.token_to_id("▁the")] == b" the"
    assert [tok.token_to_id(t) for t in ("<unk>", "<s>", "</s>")] == [0, 1, 2]
    assert info.special_token_ids == [0, 1, 2]
    assert info.stop_token_ids == [2]
    assert sum(len(b) == 1 and not b.isascii() for b in info.decoded_vocab) == 128


def test_qwen_padding():
    info = TokenizerInfo.from_huggingface(tokenizer_json("qwen2.5"), vocab_size=151936)
    assert info.vocab_size == 151936
    assert len(info.decoded_vocab) == 151936
    padding = range(151665, 151936)
    assert set(padding) <= set(info.special_token_ids)
    assert all(info.decoded_vocab[i] == b"" for i in padding)
    assert info.stop_token_ids == [151643, 151645]  # <|endoftext|>, <|im_end|>
    # 14 special added tokens + 271 padding ids.
    assert len(info.special_token_ids) == 14 + 271
    assert info.vocab_hash != info_for("qwen2.5").vocab_hash


def test_qwen_text_tokens_named_like_stop_tokens_are_text():
    info, tok = info_for("qwen2.5"), hf_for("qwen2.5")
    # Qwen's BPE has an ordinary piece spelled "</s>"; it is text, not an end of sequence.
    piece = tok.token_to_id("</s>")
    assert piece is not None and piece < 151643
    assert piece not in info.special_token_ids
    # Non-special added tokens are text that decodes to its content.
    call = tok.token_to_id("<tool_call>")
    assert call not in info.special_token_ids
    assert info.decoded_vocab[call] == b"<tool_call>"


def test_phi3_vocab_size_and_stops():
    info = TokenizerInfo.from_huggingface(tokenizer_json("phi3-mini"), vocab_size=32064)
    assert info.vocab_size == 32064
    assert set(range(32011, 32064)) <= set(info.special_token_ids)
    tok = hf_for("phi3-mini")
    ids = [tok.token_to_id(t) for t in ("</s>", "<|endoftext|>", "<|end|>")]
    assert info.stop_token_ids == sorted(ids)


def test_other_stop_tokens():
    assert info_for("gpt2").stop_token_ids == [50256]
    assert info_for("gpt2").special_token_ids == [50256]
    o200k = hf_for("gpt-oss-o200k")
    assert info_for("gpt-oss-o200k").stop_token_ids == sorted(
        o200k.token_to_id(t) for t in ("<|endoftext|>", "<|return|>", "<|end|>", "<|call|>")
    )
    deepseek = info_for("deepseek-v3")
    assert deepseek.stop_token_ids == [1]  # <｜end▁of▁sentence｜>
    think = hf_for("deepseek-v3").token_to_id("<think>")
    assert think not in deepseek.special_token_ids and deepseek.decoded_vocab[think] == b"<think>"
    assert info_for("mistral-7b-v0.1").stop_token_ids == [2]


def test_vocab_size_too_small_raises():
    with pytest.raises(TokenizerError, match="smaller"):
        TokenizerInfo.from_huggingface(tokenizer_json("gpt2"), vocab_size=50000)


def test_bad_stop_id_raises():
    with pytest.raises(InvalidTokenError, match="50257"):
        TokenizerInfo.from_huggingface(tokenizer_json("gpt2"), stop_token_ids=[50256, 50257])
    with pytest.raises(InvalidTokenError, match="-1"):
        TokenizerInfo.from_huggingface(tokenizer_json("gpt2"), stop_token_ids=-1)


def test_explicit_stop_ids_override_detection():
    info = TokenizerInfo.from_huggingface(tokenizer_json("gpt2"), stop_token_ids=[13])  # "."
    assert info.stop_token_ids == [13]
    assert info.special_token_ids == [13, 50256]
    padded = TokenizerInfo.from_huggingface(
        tokenizer_json("gpt2"), vocab_size=50304, stop_token_ids=50300
    )
    assert padded.stop_token_ids == [50300]


def test_tokenizer_config_eos_is_a_stop_token(tmp_path):
    src = tokenizer_json("gpt2")
    shutil.copy(src, tmp_path / "tokenizer.json")
    (tmp_path / "tokenizer_config.json").write_text(
        json.dumps({"eos_token": {"content": "Ġworld"}})
    )
    (tmp_path / "generation_config.json").write_text(json.dumps({"eos_token_id": [13, 10**9]}))
    info = TokenizerInfo.from_huggingface(tmp_path)
    world = hf_for("gpt2").token_to_id("Ġworld")
    assert info.stop_token_ids == sorted([13, world, 50256])
    # A bare Tokenizer object cannot see the configs.
    assert TokenizerInfo.from_huggingface(hf_for("gpt2")).stop_token_ids == [50256]


def test_transformers_like_object():
    class FakeFast:
        backend_tokenizer = hf_for("gpt2")
        eos_token = "!"

    info = TokenizerInfo.from_huggingface(FakeFast())
    assert info.stop_token_ids == [0, 50256]  # "!" is id 0 in GPT-2


def test_load_errors(tmp_path):
    with pytest.raises(TokenizerError, match="no tokenizer.json"):
        TokenizerInfo.from_huggingface(tmp_path)
    with pytest.raises(TokenizerError, match="does not exist"):
        TokenizerInfo.from_huggingface(tmp_path / "missing.json")
    (tmp_path / "tokenizer.json").write_text("{not json")
    with pytest.raises(TokenizerError):
        TokenizerInfo.from_huggingface(tmp_path)
    (tmp_path / "tokenizer.json").write_text("[]")
    with pytest.raises(TokenizerError, match="model"):
        TokenizerInfo.from_huggingface(tmp_path)
    with pytest.raises(TokenizerError, match="expected a tokenizers.Tokenizer"):
        TokenizerInfo.from_huggingface(42)


@pytest.mark.parametrize("name", ["llama3", "qwen2.5"])
def test_load_time(name):
    path = tokenizer_json(name).parent
    TokenizerInfo.from_huggingface(path)  # warm the page cache
    start = time.perf_counter()
    TokenizerInfo.from_huggingface(path)
    elapsed = time.perf_counter() - start
    assert elapsed < 2.0, f"{name} took {elapsed:.2f} s"


# ------------------------------------------------------------------------------------------
# Hand-made vocabularies
# ------------------------------------------------------------------------------------------


def test_raw_vocab():
    info = TokenizerInfo(["a", "é", b"\xff", "", None, "</s>"], vocab_size=8)
    assert info.vocab_type is VocabType.RAW
    assert info.decoded_vocab == [b"a", b"\xc3\xa9", b"\xff", b"", b"", b"</s>", b"", b""]
    assert info.stop_token_ids == [5]
    assert info.special_token_ids == [3, 4, 5, 6, 7]
    assert info.add_prefix_space is False


def test_byte_level_vocab():
    table = bytes_to_unicode()
    encoded = [table[b] for b in range(256)] + ["Ġhello", "Ċ", "Ã©", "<|endoftext|>", "<|im_end|>"]
    info = TokenizerInfo(encoded, VocabType.BYTE_LEVEL)
    assert info.decoded_vocab[:256] == [bytes([b]) for b in range(256)]
    assert info.decoded_vocab[256:] == [
        b" hello",
        b"\n",
        "é".encode(),
        b"<|endoftext|>",
        b"<|im_end|>",
    ]
    assert info.stop_token_ids == info.special_token_ids == [259, 260]


def test_byte_fallback_vocab():
    info = TokenizerInfo(
        ["<unk>", "<s>", "</s>", "<0x0A>", "<0xe9>", "▁hi", "▁▁", "x▁y", "<0x0G>"],
        "byte_fallback",
        add_prefix_space=True,
        special_token_ids=[0, 1],
    )
    assert info.decoded_vocab == [
        b"<unk>",
        b"<s>",
        b"</s>",
        b"\n",
        b"\xe9",
        b" hi",
        b"  ",
        b"x y",
        b"<0x0G>",
    ]
    assert info.special_token_ids == [0, 1, 2]
    assert info.stop_token_ids == [2]
    assert info.add_prefix_space and info.prepend_space_in_tokenization


def test_constructor_validation():
    with pytest.raises(TokenizerError, match="smaller"):
        TokenizerInfo(["a", "b"], vocab_size=1)
    with pytest.raises(TokenizerError, match="vocab_type"):
        TokenizerInfo(["a"], "wordpiece")
    with pytest.raises(TokenizerError, match="vocab_type"):
        TokenizerInfo(["a"], 7)
    with pytest.raises(TokenizerError):
        TokenizerInfo("abc")
    with pytest.raises(TokenizerError, match=r"encoded_vocab\[1\]"):
        TokenizerInfo(["a", 3])
    with pytest.raises(InvalidTokenError, match="5"):
        TokenizerInfo(["a", "b"], stop_token_ids=[5])
    with pytest.raises(InvalidTokenError, match="special token id 9"):
        TokenizerInfo(["a", "b"], special_token_ids=[9])
    with pytest.raises(TokenizerError):
        TokenizerInfo(["a", "b"], stop_token_ids=[0.5])
    assert TokenizerInfo([]).vocab_size == 0  # grammar-only use, as XGrammar


def test_metadata_round_trip_and_hash():
    encoded = ["a", "Ġb", "<|endoftext|>"]
    info = TokenizerInfo(encoded, VocabType.BYTE_LEVEL, vocab_size=5, stop_token_ids=[1, 2])
    meta = info.dump_metadata()
    assert isinstance(meta, str)  # XGrammar returns the JSON string
    assert json.loads(meta) == {
        "vocab_type": 2,
        "vocab_size": 5,
        "add_prefix_space": False,
        "stop_token_ids": [1, 2],
    }
    again = TokenizerInfo.from_vocab_and_metadata(encoded, meta)
    assert again.decoded_vocab == info.decoded_vocab
    assert again.special_token_ids == info.special_token_ids
    assert again.vocab_hash == info.vocab_hash
    other = TokenizerInfo(encoded, VocabType.BYTE_LEVEL, vocab_size=5, stop_token_ids=[2])
    assert other.vocab_hash != info.vocab_hash
    raw = TokenizerInfo(encoded, VocabType.RAW, vocab_size=5, stop_token_ids=[1, 2])
    assert raw.vocab_hash != info.vocab_hash
    assert "BYTE_LEVEL" in repr(info) and "vocab_size=5" in repr(info)
    with pytest.raises(TokenizerError, match="missing"):
        TokenizerInfo.from_vocab_and_metadata(encoded, {"vocab_type": 0})


def test_pickle_round_trip():
    import pickle

    info = default_tokenizer_info()
    clone = pickle.loads(pickle.dumps(info))
    assert clone.vocab_hash == info.vocab_hash and clone.decoded_vocab == info.decoded_vocab


# ------------------------------------------------------------------------------------------
# Byte decoding
# ------------------------------------------------------------------------------------------


def test_bytes_to_unicode_matches_tokenizers_alphabet():
    table = bytes_to_unicode()
    assert sorted(table) == list(range(256))
    assert len(set(table.values())) == 256
    assert set(table.values()) == set(tokenizers.pre_tokenizers.ByteLevel.alphabet())
    pre = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    # Every byte that occurs in UTF-8: ASCII directly, the rest inside multi-byte characters.
    for ch in [chr(c) for c in range(128)] + [
        "\u0080",
        "\u07ff",
        "\u0800",
        "\uffff",
        "\U00010000",
        "\U0010ffff",
    ]:
        ((piece, _),) = pre.pre_tokenize_str(ch)
        assert piece == "".join(table[b] for b in ch.encode()), repr(ch)
        assert decode_byte_level(piece) == ch.encode()


def test_decode_helpers():
    assert decode_byte_level("a b") == b"a b"  # space is not in the alphabet: UTF-8 fallback
    assert decode_byte_level("东京") == "东京".encode()  # above U+0143: fallback
    assert decode_byte_level(b"\xc4\xa0x") == b" x"
    assert decode_byte_level(b"\xff") == b"\xff"
    assert decode_byte_fallback("<0x41>") == b"A" and decode_byte_fallback("<0x4>") == b"<0x4>"
    assert decode_token(None, VocabType.BYTE_LEVEL) == b""
    assert decode_token("▁x", "raw") == "▁x".encode()


def test_detection_rules():
    meta = {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first"}
    assert detect_add_prefix_space({"pre_tokenizer": meta})
    assert not detect_add_prefix_space({"pre_tokenizer": dict(meta, prepend_scheme="never")})
    assert detect_add_prefix_space(
        {"pre_tokenizer": {"type": "Metaspace", "add_prefix_space": True}}
    )
    assert detect_vocab_type({"decoder": meta}) is VocabType.BYTE_FALLBACK
    assert (
        detect_vocab_type({"model": {"type": "BPE", "byte_fallback": True}})
        is VocabType.BYTE_FALLBACK
    )
    seq = {"type": "Sequence", "pretokenizers": [{"type": "Split"}, {"type": "ByteLevel"}]}
    assert detect_vocab_type({"pre_tokenizer": seq, "decoder": None}) is VocabType.BYTE_LEVEL
    assert detect_vocab_type({"decoder": {"type": "WordPiece"}}) is VocabType.RAW
    assert detect_vocab_type({}) is VocabType.RAW


# ------------------------------------------------------------------------------------------
# Default tokenizer
# ------------------------------------------------------------------------------------------

_BUILD_SCRIPT = """
import hashlib, sys, time
start = time.perf_counter()
from xmask.tokenizer.default import default_tokenizer
text = default_tokenizer().to_str()
print(hashlib.sha256(text.encode()).hexdigest(), time.perf_counter() - start)
"""


def _build_in_subprocess(env_extra):
    # Import the same xmask as this process (source tree or installed), not necessarily REPO's.
    import xmask.tokenizer

    root = pathlib.Path(xmask.tokenizer.__file__).resolve().parents[2]
    pythonpath = os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p)
    env = dict(os.environ, PYTHONPATH=pythonpath, **env_extra)
    # cwd = where that xmask lives, so a source checkout's uncompiled tree cannot shadow it
    out = subprocess.run(
        [sys.executable, "-c", _BUILD_SCRIPT], env=env, capture_output=True, text=True, check=True,
        cwd=root,
    )
    digest, seconds = out.stdout.split()
    return digest, float(seconds)


def test_default_tokenizer_deterministic():
    import hashlib

    here = hashlib.sha256(default_tokenizer().to_str().encode()).hexdigest()
    first, t1 = _build_in_subprocess({"PYTHONHASHSEED": "1", "RAYON_NUM_THREADS": "1"})
    second, t2 = _build_in_subprocess({"PYTHONHASHSEED": "2", "RAYON_NUM_THREADS": "4"})
    assert first == second == here
    assert min(t1, t2) < 2.0


def test_default_tokenizer_shape():
    tok, info = default_tokenizer(), default_tokenizer_info()
    assert default_tokenizer_info() is info  # cached
    assert default_tokenizer() is not tok  # fresh object per call
    assert 1500 <= info.vocab_size <= 3000
    assert info.vocab_size == tok.get_vocab_size()
    assert info.vocab_type is VocabType.BYTE_LEVEL and not info.add_prefix_space
    stop = tok.token_to_id("<|endoftext|>")
    assert stop == info.vocab_size - 1
    assert info.stop_token_ids == info.special_token_ids == [stop]
    assert info.decoded_vocab[stop] == b"<|endoftext|>"
    singles = {b for b in info.decoded_vocab if len(b) == 1}
    assert singles == {bytes([b]) for b in range(256)}
    assert len(set(info.decoded_vocab)) == info.vocab_size  # no duplicate pieces
    assert sum(len(b) > 1 for b in info.decoded_vocab) > 1000


def test_default_tokenizer_round_trips_json():
    tok, info = default_tokenizer(), default_tokenizer_info()
    docs = [
        {"name": "café", "tags": ["naïve", "東京", "🚀"], "n": -12.5e3, "ok": True, "none": None},
        [1, 2, {"nested": {"escape": 'quote " backslash \\ newline \n tab \t'}}],
        {"emoji": "👩‍💻 🇯🇵", "control": "\u0000\u001f", "empty": {}, "list": []},
    ]
    texts = [json.dumps(d, ensure_ascii=False) for d in docs] + [
        json.dumps(d, indent=2) for d in docs
    ]
    texts += sample_strings(seed=7, count=100)
    for text in texts:
        ids = tok.encode(text).ids
        assert info.stop_token_ids[0] not in ids
        assert b"".join(info.decoded_vocab[i] for i in ids) == text.encode(), text
        assert tok.decode(ids) == text
    # JSON is cheap to encode: the corpus taught it the common pieces.
    compact = '{"id": 42, "name": "Alice", "active": true, "tags": ["new", "sale"]}'
    assert len(tok.encode(compact).ids) < len(compact) / 2


# ------------------------------------------------------------------------------------------
# Docstring examples
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("module", ["bytes", "vocab", "info", "default", "__init__"])
def test_docstring_examples(module):
    name = "xmask.tokenizer" if module == "__init__" else f"xmask.tokenizer.{module}"
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
