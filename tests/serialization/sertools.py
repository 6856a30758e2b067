"""Helpers of the serialization tests (imported by the test files; not a conftest so the
name does not clash with tests/conftest.py): real tokenizers (Llama-3 through transformers'
``PreTrainedTokenizerFast``, Qwen2.5 with its padded 151,936-wide vocabulary), compilers, and
the walk helpers that compare masks."""

import json

import numpy as np
import pytest
import tokenizers
from conftest import tokenizer_json

import xmask

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 12},
        "tags": {"type": "array", "items": {"enum": ["a", "b\u00e9", "\u4f60"]}},
        "n": {"type": "integer", "minimum": -5},
        "ok": {"type": "boolean"},
    },
    "required": ["name", "n"],
}
DOC = {"name": "caf\u00e9 \u4f60", "tags": ["b\u00e9", "a"], "n": 42, "ok": False}


class Tok:
    def __init__(self, name, info):
        path = str(tokenizer_json(name))
        self.path = path
        self.info = info
        self.tokenizer = tokenizers.Tokenizer.from_file(path)
        self.compiler = xmask.GrammarCompiler(info, max_threads=2)

    def encode(self, text):
        return self.tokenizer.encode(text, add_special_tokens=False).ids


@pytest.fixture(scope="module")
def llama3():
    from transformers import PreTrainedTokenizerFast

    hf = PreTrainedTokenizerFast(tokenizer_file=str(tokenizer_json("llama3")))
    return Tok("llama3", xmask.TokenizerInfo.from_huggingface(hf))


@pytest.fixture(scope="module")
def qwen():
    from transformers import PreTrainedTokenizerFast

    hf = PreTrainedTokenizerFast(tokenizer_file=str(tokenizer_json("qwen2.5")))
    return Tok("qwen2.5", xmask.TokenizerInfo.from_huggingface(hf, vocab_size=151936))


def walk_masks(compiled, token_ids, reference_every=0):
    """Fill before every token and at the end; return the masks (uint8 copies).  Every
    ``reference_every``-th fill is also compared with the slow reference (every token tried)."""
    matcher = xmask.GrammarMatcher(compiled)
    words = (compiled.tokenizer_info.vocab_size + 31) // 32
    bm = np.full((1, words), -1, np.int32)
    out = []
    for step in range(len(token_ids) + 1):
        assert matcher.fill_next_token_bitmask(bm) is True
        if reference_every and step % reference_every == 0:
            ref = np.full_like(bm, 0x5A5A5A5A)
            matcher._reference_fill_next_token_bitmask(ref)
            np.testing.assert_array_equal(bm, ref, err_msg=f"fast != reference at step {step}")
        out.append(bm.copy())
        if step < len(token_ids):
            assert matcher.accept_token(token_ids[step]), step
    return out


def doc_ids(tok, doc=DOC):
    return tok.encode(json.dumps(doc))
