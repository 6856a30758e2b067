"""The test messages of model_messages.py against XGrammar 0.2.8, the reference: each family's
realistic message is accepted and each malformed one rejected there too, so the xmask tests
check real formats rather than xmask's own reading of them."""

import functools

import pytest
from conftest import tokenizer_json
from model_messages import FAMILIES, MALFORMED_CALLS, NO_REASONING, TOOLS, message, unclosed

xgr = pytest.importorskip("xgrammar")
transformers = pytest.importorskip("transformers")
# XGrammar finds no stop token in these tokenizer files and says it will detect them itself.
pytestmark = pytest.mark.filterwarnings("ignore:When constructing TokenizerInfo")


@functools.lru_cache(maxsize=None)
def reference(name):
    hf = transformers.PreTrainedTokenizerFast(tokenizer_file=str(tokenizer_json(name)))
    info = xgr.TokenizerInfo.from_huggingface(hf)
    return hf, xgr.GrammarCompiler(info), info


def accepted(model, text, reasoning):
    hf, compiler, info = reference(FAMILIES[model][0])
    stag = xgr.get_model_structural_tag(model, TOOLS, "auto", reasoning)
    matcher = xgr.GrammarMatcher(compiler.compile_structural_tag(stag))
    ok = all(matcher.accept_token(t) for t in hf.encode(text, add_special_tokens=False))
    return ok and matcher.accept_token(info.stop_token_ids[0])


@pytest.mark.parametrize("model", list(FAMILIES))
def test_messages_agree_with_xgrammar(model):
    reasoning = "disabled" if model in NO_REASONING else "enabled"
    assert accepted(model, message(model, reasoning), reasoning)
    for name, calls in MALFORMED_CALLS.items():
        assert not accepted(model, message(model, reasoning, calls), reasoning), name
    assert not accepted(model, unclosed(model, reasoning), reasoning)
