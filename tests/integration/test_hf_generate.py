"""End to end: ``model.generate`` with ``xmask.contrib.hf.LogitsProcessor`` on a tiny random
Llama (built from a config, no download) and the real Llama-3 tokenizer.

Twenty JSON schemas, one per batch row (the processor's per-row grammar list), sampled with a
fixed seed.  Every generation that reaches a stop token must parse and validate against its
schema (``jsonschema``) and be accepted token by token by a fresh matcher, stop included;
every one cut off by ``max_new_tokens`` must be a valid prefix (a fresh matcher accepts every
token).  The random model's scores are nearly flat, so whether a generation ends depends on
the grammar: schemas are bounded (``maxLength``, ``maxItems``, integer ranges, no free
whitespace) and most must end.  The unbounded fraction digits of a bounded ``number`` are
kept on purpose, to check a cut-off prefix.
"""

import json

import pytest

import xmask
from conftest import tokenizer_json

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
jsonschema = pytest.importorskip("jsonschema")

import xmask.contrib.hf  # noqa: E402  (needs torch and transformers)

SMALL_INT = {"type": "integer", "minimum": -10, "maximum": 10}
SHORT_STR = {"type": "string", "maxLength": 6}

SCHEMAS = [
    {"type": "object", "properties": {"name": SHORT_STR, "age": {"type": "integer", "minimum": 0,
     "maximum": 120}}, "required": ["name", "age"]},
    {"type": "object", "properties": {"color": {"enum": ["red", "green", "blue"]}},
     "required": ["color"]},
    {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 9}, "maxItems": 4},
    {"type": "object", "properties": {"point": {"type": "object", "properties": {"x": SMALL_INT,
     "y": SMALL_INT}, "required": ["x", "y"]}}, "required": ["point"]},
    {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
    {"type": "string", "minLength": 1, "maxLength": 5},
    {"type": "object", "properties": {"version": {"const": "1.0"}, "n": SMALL_INT},
     "required": ["version", "n"]},
    {"anyOf": [{"type": "integer", "minimum": 0, "maximum": 5}, {"type": "boolean"}]},
    {"type": "array", "items": {"enum": ["a", "b", "c"]}, "minItems": 1, "maxItems": 3},
    {"type": "string", "pattern": "^[a-z]{2,4}$"},
    {"type": "array", "prefixItems": [{"type": "integer", "minimum": 0, "maximum": 3},
     {"type": "string", "maxLength": 3}], "items": False, "minItems": 2},
    {"type": "object", "properties": {"v": {"type": ["integer", "null"], "minimum": 1,
     "maximum": 3}}, "required": ["v"]},
    {"type": "object", "properties": {"p": {"type": "number", "minimum": 0, "maximum": 1}},
     "required": ["p"]},
    {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 9},
     "b": {"type": "boolean"}}},
    {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"},
    {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "integer",
     "minimum": 1, "maximum": 99}}, "required": ["id"]}, "maxItems": 3},
    {"enum": [1, 2, "three", None, True]},
    {"type": "array", "items": {"type": "array", "items": {"type": "boolean"}, "maxItems": 2},
     "maxItems": 2},
    {"type": "object", "properties": {"first": {"type": "string", "maxLength": 4},
     "last": {"type": "string", "maxLength": 4}, "vip": {"type": "boolean"}},
     "required": ["first", "last", "vip"], "additionalProperties": False},
    {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 1000},
]

MAX_NEW_TOKENS = 64


@pytest.fixture(scope="module")
def llama3():
    tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_file=str(tokenizer_json("llama3")))
    info = xmask.TokenizerInfo.from_huggingface(tokenizer, vocab_size=128256)
    return tokenizer, info


@pytest.fixture(scope="module")
def tiny_llama(llama3):
    _, info = llama3
    config = transformers.LlamaConfig(
        vocab_size=128256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        tie_word_embeddings=True, bos_token_id=128000, eos_token_id=list(info.stop_token_ids),
        pad_token_id=info.stop_token_ids[0],
    )
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(config).eval()


def _text(info, ids):
    return b"".join(info.decoded_vocab[t] for t in ids).decode("utf-8")


def test_generate_follows_twenty_schemas(llama3, tiny_llama):
    # one batch of 20 rows: HF's CPU torch.multinomial over 20 x 128,256 dominates the run time
    _, info = llama3
    compiler = xmask.GrammarCompiler(info)
    compiled = [compiler.compile_json_schema(s, any_whitespace=False) for s in SCHEMAS]
    processor = xmask.contrib.hf.LogitsProcessor(compiled)
    prompt = torch.full((len(SCHEMAS), 1), 128000, dtype=torch.long)  # <|begin_of_text|>
    torch.manual_seed(1)
    with torch.no_grad():
        out = tiny_llama.generate(
            prompt, attention_mask=torch.ones_like(prompt), logits_processor=[processor],
            do_sample=True, max_new_tokens=MAX_NEW_TOKENS, top_k=0, top_p=1.0,
        )
    stops = set(info.stop_token_ids)
    ended = []
    for row, (schema, grammar) in enumerate(zip(SCHEMAS, compiled)):
        generated = out[row, prompt.shape[1]:].tolist()
        cut = next((k for k, t in enumerate(generated) if t in stops), None)
        body = generated if cut is None else generated[:cut]
        fresh = xmask.GrammarMatcher(grammar)
        for k, tid in enumerate(body):
            assert fresh.accept_token(tid), (row, k, tid, _text(info, body[:k + 1]))
        assert processor.matchers[row].is_terminated() == (cut is not None)
        if cut is None:
            assert len(generated) == MAX_NEW_TOKENS and not fresh.is_terminated()
            continue
        assert fresh.accept_token(generated[cut]) and fresh.is_terminated()
        assert all(t == info.stop_token_ids[0] for t in generated[cut + 1:])  # HF's padding
        text = _text(info, body)
        jsonschema.validate(json.loads(text), schema)
        ended.append(row)
    assert len(ended) >= 0.6 * len(SCHEMAS), f"only rows {ended} ended"
