"""Helpers for the structural-tag tests: real tokenizers (Llama-3, Qwen2.5 with its padded
vocabulary), and a walk that compares every mask with the slow reference."""

import numpy as np
import tokenizers
from conftest import tokenizer_json

import xmask

PADDED = {"llama3": None, "qwen2.5": 151936}


class Tok:
    """A TokenizerInfo, its tokenizers.Tokenizer and a compiler."""

    def __init__(self, name):
        path = str(tokenizer_json(name))
        self.name = name
        self.info = xmask.TokenizerInfo.from_huggingface(path, vocab_size=PADDED[name])
        self.tokenizer = tokenizers.Tokenizer.from_file(path)
        self.n_words = (self.info.vocab_size + 31) // 32
        self.compiler = xmask.GrammarCompiler(self.info)

    def encode(self, text):
        return self.tokenizer.encode(text, add_special_tokens=False).ids

    def rows(self, matcher):
        """(fast row, reference row) of ``matcher``'s current state."""
        fast = np.full((1, self.n_words), 0x5A5A5A5A, np.int32)
        ref = np.full((1, self.n_words), 0x5A5A5A5A, np.int32)
        matcher.fill_next_token_bitmask(fast)
        matcher._reference_fill_next_token_bitmask(ref)
        return fast[0], ref[0]

    def walk(self, compiled, ids, where=""):
        """Accept ``ids`` one by one; before each token (and at the end) the mask must equal
        the reference and allow the token.  Returns the matcher."""
        m = xmask.GrammarMatcher(compiled)
        for i, t in enumerate(ids + [None]):
            fast, ref = self.rows(m)
            if not np.array_equal(fast, ref):
                bad = np.nonzero(fast != ref)[0][:3].tolist()
                raise AssertionError(f"{where}: mask differs from the reference after "
                                     f"{self.tokenizer.decode(ids[:i])!r} (words {bad})")
            if t is None:
                break
            assert (int(fast[t >> 5]) >> (t & 31)) & 1, \
                f"{where}: token {self.tokenizer.decode([t])!r} masked after {self.tokenizer.decode(ids[:i])!r}"
            assert m.accept_token(t), f"{where}: token {t} refused"
        return m


def allowed(row, token_id):
    return bool((int(row[token_id >> 5]) >> (token_id & 31)) & 1)
