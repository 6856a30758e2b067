"""Shared pieces of the inference-server replays in this folder.

The servers (vLLM, SGLang, TensorRT-LLM) load a ``transformers`` fast tokenizer, size every mask
by the model's padded logits width and drive XGrammar through ``import xgrammar as xgr``.  The
replays do the same through ``import xmask as xgr``; this module gives them the tokenizers as
the servers load them, the documents they walk, and the mask checks (a token's bit in a filled
row, the slow reference fill, a masked logits row).

This is deliberately not a ``conftest.py``: the test tree imports ``tests/conftest.py`` as the
module ``conftest``, and a second file of that name would shadow it.

Example::

    >>> model = Model.load("llama3")                      # doctest: +SKIP
    >>> model.vocab_size, model.eos_id                     # doctest: +SKIP
    (128256, 128009)
"""

import functools
import json
from dataclasses import dataclass

import numpy as np
import pytest

from conftest import tokenizer_json

#: Logits rows of the models whose tokenizers the replays use (what ``vocab_size`` servers pass).
PADDED_VOCAB = {"llama3": 128256, "qwen2.5": 151936}

#: A JSON schema of the kind the servers' JSON requests carry, and documents valid under it.
PERSON_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer"},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["name", "age", "tags"],
}
PERSON_DOCS = [
    json.dumps({"name": "Ada Lovelace", "age": 36, "tags": ["math", "poetry"]}),
    # multi-byte characters: tokens that end inside a UTF-8 sequence on both tokenizers
    json.dumps({"name": "Zo\u00eb \u6771\u4eac \U0001f680", "age": 7, "tags": []},
               ensure_ascii=False),
    json.dumps({"name": "x", "age": -12, "tags": ["a"]}, separators=(",", ":")),
]
#: (prefix of a valid document, a continuation the schema forbids right there)
PERSON_BAD_STEPS = [
    ("", "["),                    # the root is an object
    ("{", "}"),                   # three required members
    ('{"name": ', "12"),          # name is a string
    ('{"name": "a", "age": ', '"'),  # age is an integer
    ('{"name": "a", "age": 1', "."),  # ... not a number with a fraction
    ('{"name": "a", "age": 1, "tags": [', "3"),  # tags are strings
]


@dataclass(frozen=True)
class Model:
    """A real tokenizer loaded the way the servers load it, with the model's padded vocab size."""

    name: str
    tokenizer: object
    vocab_size: int

    @staticmethod
    @functools.lru_cache(maxsize=None)
    def load(name: str) -> "Model":
        transformers = pytest.importorskip("transformers")
        path = tokenizer_json(name)
        config = json.loads((path.parent / "tokenizer_config.json").read_text())
        # the special tokens come from tokenizer_config.json, as AutoTokenizer would read them
        special = {
            key: config[key]
            for key in ("bos_token", "eos_token", "pad_token", "unk_token")
            if isinstance(config.get(key), str)
        }
        tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_file=str(path), **special)
        return Model(name, tokenizer, PADDED_VOCAB[name])

    @property
    def eos_id(self) -> int:
        return int(self.tokenizer.eos_token_id)

    @property
    def n_words(self) -> int:
        return (self.vocab_size + 31) // 32

    def encode(self, text: str):
        """Token ids of ``text`` with no BOS, as a model's output would be."""
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def decode(self, ids) -> str:
        return self.tokenizer.decode(ids)

    def first_token(self, text: str) -> int:
        return self.encode(text)[0]


@pytest.fixture(scope="module", params=sorted(PADDED_VOCAB))
def model(request) -> Model:
    """Each real tokenizer in turn (Llama-3 128256 rows, Qwen2.5 151936 rows)."""
    return Model.load(request.param)


def allowed(row, token_id: int) -> bool:
    """Whether bit ``token_id`` is set in one bitmask row (torch or numpy)."""
    return bool((int(row[token_id >> 5]) >> (token_id & 31)) & 1)


def row_bools(row, vocab_size: int) -> np.ndarray:
    """One bitmask row unpacked to ``vocab_size`` booleans (bit i of word w = token 32*w+i)."""
    words = np.ascontiguousarray(np.asarray(row), dtype=np.int32)
    return np.unpackbits(words.view(np.uint8), bitorder="little")[:vocab_size].astype(bool)


def reference_row(matcher, n_words: int) -> np.ndarray:
    """The slow reference mask (every token tried against the matcher's current state)."""
    ref = np.zeros((1, n_words), np.int32)
    matcher._reference_fill_next_token_bitmask(ref, 0)
    return ref[0]


def assert_row_is_reference(matcher, row, n_words: int, where: str = "") -> None:
    """A filled row (torch or numpy) equals the reference fill of ``matcher`` bit for bit."""
    got = np.asarray(row, dtype=np.int32)
    want = reference_row(matcher, n_words)
    if not np.array_equal(got, want):
        diff = np.nonzero(got != want)[0][:4]
        raise AssertionError(f"mask differs from the reference {where}: words {diff.tolist()}")


def assert_logits_masked(before, after, bitmask_row, vocab_size: int) -> None:
    """``after`` = ``before`` with exactly the tokens the row forbids set to -inf."""
    ok = row_bools(bitmask_row, vocab_size)
    a = np.asarray(after.float() if hasattr(after, "float") else after, dtype=np.float32)
    b = np.asarray(before.float() if hasattr(before, "float") else before, dtype=np.float32)
    assert np.isneginf(a[~ok]).all(), "a forbidden token kept a finite logit"
    np.testing.assert_array_equal(a[ok], b[ok])


def oracle_logits(torch, rows: int, vocab_size: int, favourite=None, seed: int = 0):
    """Random float32 logits; ``favourite[r]`` (a token id or None) gets the top logit of row r,
    so that the argmax after masking is the document's next token when that token is allowed."""
    gen = torch.Generator().manual_seed(seed)
    logits = torch.randn(rows, vocab_size, generator=gen, dtype=torch.float32)
    for r, tok in enumerate(favourite or []):
        if tok is not None:
            logits[r, tok] = 100.0
    return logits


def bad_step_tokens(model: Model, bad_steps):
    """(prefix ids, forbidden first token) for each (prefix text, forbidden text) pair."""
    return [(model.encode(prefix), model.first_token(bad)) for prefix, bad in bad_steps]
