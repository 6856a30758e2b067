"""Built-in JSON grammar on Llama-3, Qwen2.5 (padded to 151,936 rows) and Llama-2: at every step
of sample documents and of random walks, the fast mask equals the slow reference (every token
tried on the byte-level parser, no cache)."""

import json
import random

import numpy as np
import pytest

import xmask
from conftest import tokenizer_json
from maskutil import GreedyTokens, bit, diff_ids
from xmask.grammar import Recognizer, builtin_json_grammar

TOKENIZERS = {"llama3": None, "qwen2.5": 151936, "llama2": None}

DOCS = [
    {"name": "Ünïcödé \"quoted\" \\ back", "emoji": "😀 東京", "n": [0, -1.5e-7, 3e+20, 12345678901234]},
    [[], {}, [[[]]], {"a": {"b": {"c": [True, False, None]}}}],
    "just a string with \t tab and \u0001 control",
    -0.0,
    {"k" * 40: "v" * 100, "list": list(range(30))},
]


def greedy_ids(info, text: bytes):
    """Longest-match tokenization over the decoded vocabulary (tokenizer-independent)."""
    return GreedyTokens(info).ids(text)


@pytest.fixture(scope="module", params=list(TOKENIZERS))
def env(request):
    info = xmask.TokenizerInfo.from_huggingface(
        tokenizer_json(request.param), vocab_size=TOKENIZERS[request.param]
    )
    compiled = xmask.GrammarCompiler(info).compile_builtin_json_grammar()
    return request.param, info, compiled


def _check(matcher, bm, ref, where):
    matcher.fill_next_token_bitmask(bm)
    matcher._reference_fill_next_token_bitmask(ref)
    assert np.array_equal(bm, ref), f"{where}: differing ids {diff_ids(bm, ref)[:20]}"


@pytest.mark.parametrize("doc_index", range(len(DOCS)))
@pytest.mark.parametrize("indent", [None, 2])
def test_documents_mask_equals_reference(env, doc_index, indent):
    name, info, compiled = env
    text = json.dumps(DOCS[doc_index], indent=indent).encode()
    m = xmask.GrammarMatcher(compiled)
    bm = np.asarray(xmask.allocate_token_bitmask(1, info.vocab_size))
    ref = bm.copy()
    for step, tid in enumerate(greedy_ids(info, text)):
        _check(m, bm, ref, f"{name} doc {doc_index} step {step}")
        assert bit(bm, tid) and m.accept_token(tid)
    _check(m, bm, ref, f"{name} doc {doc_index} end")
    stop = info.stop_token_ids[0]
    assert bit(bm, stop) and m.accept_token(stop) and m.is_terminated()
    padding = range(len(info.decoded_vocab) if TOKENIZERS[name] is None else 151665, info.vocab_size)
    assert not any(bit(bm, p) for p in padding)


@pytest.mark.parametrize("seed", [1, 2])
def test_random_walks_mask_equals_reference(env, seed):
    name, info, compiled = env
    rng = random.Random(seed)
    m = xmask.GrammarMatcher(compiled)
    bm = np.asarray(xmask.allocate_token_bitmask(1, info.vocab_size))
    ref = bm.copy()
    stops = set(info.stop_token_ids)
    out = b""
    for step in range(40):
        _check(m, bm, ref, f"{name} walk {seed} step {step}")
        allowed = [int(i) for i in np.nonzero(np.unpackbits(bm[0].view(np.uint8), bitorder="little"))[0]]
        choices = [i for i in allowed if i not in stops]
        if not choices:
            break
        tid = rng.choice(choices)
        assert m.accept_token(tid)
        out += info.decoded_vocab[tid]
    rec = Recognizer(builtin_json_grammar())
    assert rec.accepts_prefix(out), out
    m.fill_next_token_bitmask(bm)
    assert any(bit(bm, s) for s in stops) == rec.accepts(out), out
