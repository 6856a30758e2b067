"""xmask.contrib.hf.LogitsProcessor driven by hand the way ``model.generate`` calls it.

Every masked score row is compared with the slow reference mask of a matcher that accepted
the same tokens (``_reference_fill_next_token_bitmask`` tries every token).
"""

import numpy as np
import pytest

import xmask
from conftest import tokenizer_json

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from xmask.contrib.hf import LogitsProcessor  # noqa: E402  (needs torch and transformers)


def reference_allowed(matcher, vocab_size):
    bm = np.zeros(xmask.get_bitmask_shape(1, vocab_size), np.int32)
    matcher._reference_fill_next_token_bitmask(bm)
    bits = np.unpackbits(bm.view(np.uint8), bitorder="little")[:vocab_size]
    return bits.astype(bool)


@pytest.fixture(scope="module")
def llama3():
    tok = transformers.PreTrainedTokenizerFast(tokenizer_file=str(tokenizer_json("llama3")))
    info = xmask.TokenizerInfo.from_huggingface(tok, vocab_size=128256)
    return tok, info, xmask.GrammarCompiler(info)


@pytest.fixture(scope="module")
def qwen():
    tok = transformers.PreTrainedTokenizerFast(tokenizer_file=str(tokenizer_json("qwen2.5")))
    return tok


def test_batch_of_two_different_grammars_follows_reference_masks(llama3):
    tok, info, compiler = llama3
    docs = ['{"name": "Ann", "tags": ["x", "y"]}', "move(3)"]
    grammars = [
        compiler.compile_builtin_json_grammar(),
        compiler.compile_grammar('root ::= "move(" [0-9]+ ")"'),
    ]
    processor = LogitsProcessor(grammars)
    refs = [xmask.GrammarMatcher(g) for g in grammars]
    ids = [tok.encode(d, add_special_tokens=False) for d in docs]
    stop = info.stop_token_ids[0]
    pad = stop
    input_ids = torch.full((2, 3), 128000, dtype=torch.long)  # a 3-token prompt
    steps = max(len(x) for x in ids) + 1
    for step in range(steps):
        scores = torch.randn(2, 128256)
        out = processor(input_ids, scores)
        assert out is scores  # masked in place, like XGrammar's processor
        nxt = []
        for row in range(2):
            seq = ids[row] + [stop]
            if step < len(seq):
                allowed = reference_allowed(refs[row], 128256)
                np.testing.assert_array_equal(torch.isfinite(out[row]).numpy(), allowed)
                token = seq[step]
                assert allowed[token]
                assert refs[row].accept_token(token)
            else:  # finished: HF pads the row; its mask still allows only the stop tokens
                token = pad
                finite = torch.isfinite(out[row]).nonzero().flatten().tolist()
                assert set(finite) <= set(info.stop_token_ids) and finite
            nxt.append(token)
        input_ids = torch.cat([input_ids, torch.tensor(nxt)[:, None]], dim=1)
    processor(input_ids, torch.randn(2, 128256))  # the last stop token / padding is accepted
    assert all(m.is_terminated() for m in processor.matchers)
    processor(torch.cat([input_ids, torch.full((2, 1), pad)], dim=1), torch.zeros(2, 128256))


def test_one_grammar_is_shared_by_every_row_and_in_a_processor_list(llama3):
    _, info, compiler = llama3
    compiled = compiler.compile_grammar('root ::= "yes" | "no"')
    processor = LogitsProcessor(compiled)
    chain = transformers.LogitsProcessorList([processor])
    scores = chain(torch.full((3, 1), 128000), torch.zeros(3, 128256, dtype=torch.bfloat16))
    assert scores.dtype == torch.bfloat16
    assert len(processor.matchers) == 3 and processor.batch_size == 3
    allowed = reference_allowed(xmask.GrammarMatcher(compiled), 128256)
    for row in range(3):
        np.testing.assert_array_equal(torch.isfinite(scores[row]).numpy(), allowed)
    assert info.decoded_vocab[int(torch.argmax(scores[0]))] in (b"y", b"ye", b"yes", b"n", b"no")


@pytest.mark.parametrize("padded", [True, False])
def test_qwen_padded_vocab(qwen, padded):
    # Qwen2.5: 151,665 tokenizer ids, 151,936 model logits.  With the padded size in the
    # TokenizerInfo the bitmask covers every logit; without it the processor still masks the
    # padding columns (no grammar can accept them).
    info = xmask.TokenizerInfo.from_huggingface(qwen, vocab_size=151936 if padded else None)
    assert info.vocab_size == (151936 if padded else 151665)
    compiled = xmask.GrammarCompiler(info).compile_json_schema(
        {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
        any_whitespace=False,
    )
    processor = LogitsProcessor(compiled)
    ref = xmask.GrammarMatcher(compiled)
    input_ids = torch.full((1, 1), 151643, dtype=torch.long)
    doc = qwen.encode('{"ok": true}', add_special_tokens=False) + [info.stop_token_ids[0]]
    for token in doc:
        scores = torch.zeros(1, 151936)
        with _no_warnings():
            processor(input_ids, scores)
        allowed = reference_allowed(ref, info.vocab_size)
        finite = torch.isfinite(scores[0]).numpy()
        np.testing.assert_array_equal(finite[: info.vocab_size], allowed)
        assert not finite[151665:].any()
        assert ref.accept_token(token)
        input_ids = torch.cat([input_ids, torch.tensor([[token]])], dim=1)
    processor(input_ids, torch.zeros(1, 151936))
    assert processor.matchers[0].is_terminated()


class _no_warnings:
    def __enter__(self):
        import warnings

        self._cm = warnings.catch_warnings()
        self._cm.__enter__()
        warnings.simplefilter("error")

    def __exit__(self, *exc):
        return self._cm.__exit__(*exc)


def test_errors(llama3):
    tok, info, compiler = llama3
    yes = compiler.compile_grammar('root ::= "yes"')
    with pytest.raises(TypeError, match="CompiledGrammar"):
        LogitsProcessor(["root ::= x"])
    with pytest.raises(xmask.XmaskError, match="at least one"):
        LogitsProcessor([])
    processor = LogitsProcessor([yes, yes])
    with pytest.raises(xmask.XmaskError, match="2 compiled grammars for a batch of 3"):
        processor(torch.zeros(3, 1, dtype=torch.long), torch.zeros(3, 128256))
    processor = LogitsProcessor(yes)
    processor(torch.zeros(2, 1, dtype=torch.long), torch.zeros(2, 128256))
    with pytest.raises(xmask.XmaskError, match="serves a batch of 2"):
        processor(torch.zeros(3, 2, dtype=torch.long), torch.zeros(3, 128256))
    no = tok.encode("no", add_special_tokens=False)[0]
    with pytest.raises(xmask.InvalidTokenError, match="row 0: the sampled token"):
        processor(torch.tensor([[0, no], [0, no]]), torch.zeros(2, 128256))
    processor = LogitsProcessor(yes)
    processor(torch.zeros(1, 5, dtype=torch.long), torch.zeros(1, 128256))
    with pytest.raises(xmask.XmaskError, match="make a new one"):  # reused for another generate
        processor(torch.zeros(1, 3, dtype=torch.long), torch.zeros(1, 128256))
    other = xmask.GrammarCompiler(xmask.default_tokenizer_info()).compile_grammar('root ::= "a"')
    if other.tokenizer_info.vocab_size != info.vocab_size:
        with pytest.raises(xmask.XmaskError, match="different vocab sizes"):
            LogitsProcessor([yes, other])


def test_exported_lazily():
    import xmask.contrib

    assert xmask.contrib.hf.LogitsProcessor is LogitsProcessor
    assert issubclass(LogitsProcessor, transformers.LogitsProcessor)
