"""TensorRT-LLM's PyTorch-executor guided decoding, replayed through ``import xmask as xgr``.

Replays the calls of ``tensorrt_llm/_torch/pyexecutor/grammar_matcher.py`` and
``guided_decoder.py``: the LLM API's tokenizer config (the vocabulary as a list of encoded
tokens sorted by id, ``[eos_token_id]``, the backend tokenizer's JSON string), then
``TokenizerInfo._detect_metadata_from_hf(tokenizer_str)`` and ``TokenizerInfo(encoded_vocab,
vocab_type=..., vocab_size=vocab_size_padded, stop_token_ids=..., add_prefix_space=...)``, a
compiler with ``cache_enabled=True, cache_limit_bytes=...``; per guide type the built-in JSON
grammar, a JSON schema, a regex or EBNF; matchers with ``max_rollback_tokens=max_num_draft_tokens``;
the decoder's host bitmask ``torch.empty(max_num_sequences * (max_num_draft_tokens + 1), words)``
filled at request offsets (the new token accepted first, then each draft token accepted and the
next row filled, stopping at a refused draft or termination); rejected draft tokens rolled back
after verification; the drafting loop's own advance and rollback.  TensorRT-LLM applies the
mask with its own CUDA op; the replay applies it with ``xgr.apply_token_bitmask_inplace`` on
the rows its token mask marks, to check the logits.  The code is written for these tests and
follows TensorRT-LLM's sequence of calls, not its source.
"""

import json
import math
from dataclasses import dataclass, field
from typing import List, Optional

import numpy as np
import pytest

import xmask as xgr
from server_replay import (  # noqa: F401  (model is a fixture)
    PERSON_DOCS,
    PERSON_SCHEMA,
    Model,
    allowed,
    assert_logits_masked,
    assert_row_is_reference,
    model,
    oracle_logits,
)

torch = pytest.importorskip("torch")

CACHE_LIMIT_BYTES = int(1 * 1024 * 1024 * 1024)


def guided_decoding_config(model: Model) -> dict:
    """What the LLM API hands the executor for an HF fast tokenizer."""
    tok = model.tokenizer
    encoded_vocab = [t for t, _ in sorted(tok.get_vocab().items(), key=lambda kv: kv[1])]
    return {
        "encoded_vocab": encoded_vocab,
        "tokenizer_str": tok.backend_tokenizer.to_str(),
        "stop_token_ids": [tok.eos_token_id],
    }


class MatcherFactory:
    """TensorRT-LLM's XGrammarMatcherFactory."""

    def __init__(self, config: dict, vocab_size_padded: int, max_num_draft_tokens: int = 0):
        vocab_type = xgr.VocabType.RAW
        add_prefix_space = False
        if config["tokenizer_str"] is not None:
            metadata = xgr.TokenizerInfo._detect_metadata_from_hf(config["tokenizer_str"])
            vocab_type = metadata["vocab_type"]
            add_prefix_space = metadata["add_prefix_space"]
        self.tokenizer_info = xgr.TokenizerInfo(
            config["encoded_vocab"],
            vocab_type=vocab_type,
            vocab_size=vocab_size_padded,
            stop_token_ids=config["stop_token_ids"],
            add_prefix_space=add_prefix_space,
        )
        self.compiler = xgr.GrammarCompiler(
            self.tokenizer_info, cache_enabled=True, cache_limit_bytes=CACHE_LIMIT_BYTES
        )
        self.max_num_draft_tokens = max_num_draft_tokens

    def create(self, guide_type: str, guide: Optional[str]):
        if guide_type == "json":
            compiled = self.compiler.compile_builtin_json_grammar()
        elif guide_type == "json_schema":
            compiled = self.compiler.compile_json_schema(guide)
        elif guide_type == "regex":
            compiled = self.compiler.compile_regex(guide)
        elif guide_type == "ebnf_grammar":
            compiled = self.compiler.compile_grammar(guide)
        elif guide_type == "structural_tag":
            compiled = self.compiler.compile_structural_tag(guide)
        else:
            raise ValueError(guide_type)
        return xgr.GrammarMatcher(compiled, max_rollback_tokens=self.max_num_draft_tokens)


@dataclass
class Request:
    """The fields of a scheduled request the guided decoder reads."""

    slot: int
    guide: tuple
    phase: str = "context"  # "context" (last chunk) or "generation"
    new_token: Optional[int] = None
    draft_tokens: List[int] = field(default_factory=list)
    is_draft: bool = False
    num_accepted_draft_tokens: int = 0


class GuidedDecoder:
    """TensorRT-LLM's GuidedDecoder host side: build, (copy), apply, rollbacks."""

    def __init__(self, factory: MatcherFactory, max_num_sequences: int, vocab_size_padded: int,
                 max_num_draft_tokens: int = 0):
        self.factory = factory
        self.max_num_draft_tokens = max_num_draft_tokens
        rows = max_num_sequences * (max_num_draft_tokens + 1)
        words = math.ceil(vocab_size_padded / 32)
        self.bitmask_host = torch.empty(rows, words, dtype=torch.int32)
        self.token_mask_host = torch.empty(rows, dtype=torch.int32)
        self.matchers = [None] * max_num_sequences
        self.num_advanced_tokens = [0] * max_num_sequences
        self.num_guided_tokens = [0] * max_num_sequences
        self.num_advanced_draft_tokens = [0] * max_num_sequences
        self.is_draft_terminated = [False] * max_num_sequences

    def offsets(self, requests):
        offset = 0
        for req in requests:
            yield req, offset
            offset += 1
            if not req.is_draft and req.phase == "generation":
                offset += self.max_num_draft_tokens

    def num_bitmask_tokens(self, requests) -> int:
        return sum(1 + (self.max_num_draft_tokens if not r.is_draft and r.phase == "generation"
                        else 0) for r in requests)

    def build(self, requests) -> None:
        self.token_mask_host[: self.num_bitmask_tokens(requests)].fill_(0)
        for req, offset in self.offsets(requests):
            slot = req.slot
            self.num_advanced_tokens[slot] = 0
            self.num_guided_tokens[slot] = 0
            init = not req.is_draft and req.phase == "context"
            advance = req.phase == "generation" or (req.is_draft and req.phase == "context")
            if init:
                self.matchers[slot] = self.factory.create(*req.guide)
            matcher = self.matchers[slot]
            if advance:
                if matcher.is_terminated() or self.is_draft_terminated[slot]:
                    continue
                if not matcher.accept_token(req.new_token):
                    if req.is_draft:
                        self.is_draft_terminated[slot] = True
                        continue
                    raise ValueError(f"slot {slot} failed to accept {req.new_token}")
                self.num_advanced_tokens[slot] += 1
            if not matcher.is_terminated():
                matcher.fill_next_token_bitmask(self.bitmask_host, offset)
                self.token_mask_host[offset] = 1
                self.num_guided_tokens[slot] += 1
                for i, tid in enumerate(req.draft_tokens, 1):
                    if not matcher.accept_token(tid):
                        break
                    self.num_advanced_tokens[slot] += 1
                    if matcher.is_terminated():
                        break
                    matcher.fill_next_token_bitmask(self.bitmask_host, offset + i)
                    self.token_mask_host[offset + i] = 1
                    self.num_guided_tokens[slot] += 1
            if req.is_draft:
                self.num_advanced_draft_tokens[slot] += self.num_advanced_tokens[slot]

    def apply(self, requests, logits) -> None:
        """Stand-in for the decoder's logits_bitmask op: mask the rows the token mask marks."""
        n = self.num_bitmask_tokens(requests)
        rows = [int(r) for r in torch.nonzero(self.token_mask_host[:n]).flatten()]
        bitmask = self.bitmask_host[:n].to(logits.device, non_blocking=True)
        if rows:
            xgr.apply_token_bitmask_inplace(logits[:n], bitmask, indices=rows)

    def rollback_rejected_tokens(self, requests) -> None:
        if self.max_num_draft_tokens <= 0:
            return
        for req in requests:
            slot = req.slot
            if self.num_advanced_tokens[slot] <= 0:
                continue
            n = self.num_advanced_tokens[slot] - (1 + req.num_accepted_draft_tokens)
            assert n >= 0
            self.matchers[slot].rollback(n)

    def rollback_draft_tokens(self, requests) -> None:
        if self.max_num_draft_tokens <= 0:
            return
        for req in requests:
            slot = req.slot
            if self.num_advanced_draft_tokens[slot] <= 0:
                continue
            self.matchers[slot].rollback(self.num_advanced_draft_tokens[slot])
            self.num_advanced_draft_tokens[slot] = 0
            self.is_draft_terminated[slot] = False


@pytest.fixture(scope="module")
def config(model):
    return guided_decoding_config(model)


@pytest.fixture(scope="module")
def factory(model, config):
    return MatcherFactory(config, model.vocab_size)


@pytest.fixture(scope="module")
def draft_factory(model, config):
    return MatcherFactory(config, model.vocab_size, max_num_draft_tokens=3)


# ---- tests -----------------------------------------------------------------------------------


def test_tokenizer_info_from_encoded_vocab(factory, config, model):
    metadata = xgr.TokenizerInfo._detect_metadata_from_hf(config["tokenizer_str"])
    assert isinstance(metadata, dict)
    assert metadata["vocab_type"] == xgr.VocabType.BYTE_LEVEL
    assert metadata["add_prefix_space"] is False
    info = factory.tokenizer_info
    assert info.vocab_size == model.vocab_size
    assert info.stop_token_ids == [model.eos_id]
    assert info.vocab_type == xgr.VocabType.BYTE_LEVEL
    # the ordinary tokens decode to the bytes from_huggingface finds
    hf = xgr.TokenizerInfo.from_huggingface(model.tokenizer, vocab_size=model.vocab_size)
    n = len(config["encoded_vocab"])
    special = set(hf.special_token_ids)
    mismatched = [i for i in range(n) if i not in special
                  and info.decoded_vocab[i] != hf.decoded_vocab[i]]
    assert mismatched == []
    assert all(v == b"" for v in info.decoded_vocab[n:])


def test_generation_loop_without_drafts(factory, model):
    decoder = GuidedDecoder(factory, max_num_sequences=4, vocab_size_padded=model.vocab_size)
    docs = {
        0: (("json_schema", json.dumps(PERSON_SCHEMA)), model.encode(PERSON_DOCS[1])),
        2: (("regex", r"(yes|no), because [a-z ]+"), model.encode("no, because it rains")),
        3: (("json", None), model.encode('{"k": [true, 1e3]}')),
    }
    streams = {slot: ids + [model.eos_id] for slot, (_, ids) in docs.items()}
    pos = {slot: 0 for slot in docs}
    step = 0
    while True:
        live = [s for s in docs
                if not (decoder.matchers[s] and decoder.matchers[s].is_terminated())]
        if not live:
            break
        requests = []
        for slot in live:
            if step == 0:
                requests.append(Request(slot, docs[slot][0], phase="context"))
            else:
                requests.append(Request(slot, docs[slot][0], phase="generation",
                                        new_token=streams[slot][pos[slot]]))
                pos[slot] += 1
        decoder.build(requests)
        n = decoder.num_bitmask_tokens(requests)
        wanted = [None] * n
        for req, offset in decoder.offsets(requests):
            matcher = decoder.matchers[req.slot]
            if matcher.is_terminated():
                assert int(decoder.token_mask_host[offset]) == 0
                continue
            assert int(decoder.token_mask_host[offset]) == 1
            assert_row_is_reference(matcher, decoder.bitmask_host[offset], model.n_words,
                                    f"slot {req.slot} step {step}")
            wanted[offset] = streams[req.slot][pos[req.slot]]
            assert allowed(decoder.bitmask_host[offset], wanted[offset])
        logits = oracle_logits(torch, n, model.vocab_size, wanted, seed=step)
        before = logits.clone()
        decoder.apply(requests, logits)
        for offset, token in enumerate(wanted):
            if token is None:
                continue
            assert_logits_masked(before[offset], logits[offset], decoder.bitmask_host[offset],
                                 model.vocab_size)
            assert int(torch.argmax(logits[offset])) == token
        step += 1
    for slot in docs:
        assert pos[slot] == len(streams[slot])


def test_draft_tokens_and_rollback_of_rejected(draft_factory, model):
    """max_num_draft_tokens=3: each generation step accepts the new token, fills its row, then
    accepts the drafts one by one filling the following rows (stopping at a refused draft);
    after verification the matcher is rolled back by the tokens the target model rejected."""
    d = 3
    decoder = GuidedDecoder(draft_factory, max_num_sequences=2, vocab_size_padded=model.vocab_size,
                            max_num_draft_tokens=d)
    guide = ("json_schema", json.dumps(PERSON_SCHEMA))
    targets = model.encode(PERSON_DOCS[0]) + [model.eos_id]
    decoder.build([Request(1, guide, phase="context")])
    matcher = decoder.matchers[1]
    assert allowed(decoder.bitmask_host[0], targets[0])
    scratch = xgr.allocate_token_bitmask(1, model.vocab_size)
    pos, drafts, round_no = 0, [], 0
    while not matcher.is_terminated():
        req = Request(1, guide, phase="generation", new_token=targets[pos], draft_tokens=drafts)
        decoder.build([req])
        pos += 1
        advanced = decoder.num_advanced_tokens[1]
        assert 1 <= advanced <= 1 + len(drafts)
        # every guided row is the mask after the new token and the drafts before it
        check = xgr.GrammarMatcher(matcher.compiled_grammar)
        for token in targets[:pos]:
            assert check.accept_token(token)
        for i in range(decoder.num_guided_tokens[1]):
            assert int(decoder.token_mask_host[i]) == 1
            assert_row_is_reference(check, decoder.bitmask_host[i], model.n_words, f"row {i}")
            if i < len(drafts):
                check.accept_token(drafts[i])
        # the target model keeps the drafts that match the document, and samples one more
        n_ok = 0
        while n_ok < len(drafts) and n_ok < advanced - 1 and drafts[n_ok] == targets[pos + n_ok]:
            n_ok += 1
        req.num_accepted_draft_tokens = n_ok
        decoder.rollback_rejected_tokens([req])
        pos += n_ok
        assert matcher.is_terminated() == (pos == len(targets))
        if matcher.is_terminated():
            break
        # next drafts: the document, a stop token too early, or an allowed token the model
        # does not choose
        drafts = list(targets[pos + 1:pos + 1 + d])
        if round_no % 3 == 1 and len(drafts) >= 2:
            drafts[1] = model.eos_id
        elif round_no % 3 == 2 and drafts:
            check = xgr.GrammarMatcher(matcher.compiled_grammar)
            for token in targets[:pos + 1]:
                check.accept_token(token)
            check.fill_next_token_bitmask(scratch, 0)
            ok = [t for t in range(2000) if allowed(scratch[0], t) and t != drafts[0]]
            if ok:
                drafts[0] = ok[0]
        round_no += 1
    assert pos == len(targets)


def test_drafting_loop_advances_then_rolls_back(draft_factory, model):
    """The draft model's loop (``is_draft``): each draft step accepts the drafted token and
    fills one row per request; after the last step every drafted token is rolled back, so the
    target model's build starts from the verified state."""
    d = 3
    decoder = GuidedDecoder(draft_factory, max_num_sequences=2, vocab_size_padded=model.vocab_size,
                            max_num_draft_tokens=d)
    guide = ("json_schema", json.dumps(PERSON_SCHEMA))
    targets = model.encode(PERSON_DOCS[2]) + [model.eos_id]
    decoder.build([Request(0, guide, phase="context")])
    matcher = decoder.matchers[0]
    for token in targets[:4]:
        assert matcher.accept_token(token)
    reference = xgr.allocate_token_bitmask(1, model.vocab_size)
    matcher.fill_next_token_bitmask(reference, 0)
    for step in range(d):
        decoder.build([Request(0, guide, phase="generation", new_token=targets[4 + step],
                               is_draft=True)])
        assert int(decoder.token_mask_host[0]) == 1
        assert allowed(decoder.bitmask_host[0], targets[5 + step])
    assert decoder.num_advanced_draft_tokens[0] == d
    decoder.rollback_draft_tokens([Request(0, guide, is_draft=True)])
    after = xgr.allocate_token_bitmask(1, model.vocab_size)
    matcher.fill_next_token_bitmask(after, 0)
    assert torch.equal(torch.as_tensor(np.asarray(after)), torch.as_tensor(np.asarray(reference)))
    # a drafted token the grammar refuses stops the drafting for that slot
    decoder.build([Request(0, guide, phase="generation", new_token=model.eos_id, is_draft=True)])
    assert decoder.is_draft_terminated[0]
    assert decoder.num_advanced_draft_tokens[0] == 0


def test_stop_token_among_drafts_terminates(draft_factory, model):
    guide = ("regex", r"[0-9]+")
    ids = model.encode("2024")
    five = model.first_token("5")
    for accepted_drafts in (2, 1):
        decoder = GuidedDecoder(draft_factory, max_num_sequences=1,
                                vocab_size_padded=model.vocab_size, max_num_draft_tokens=3)
        decoder.build([Request(0, guide, phase="context")])
        req = Request(0, guide, phase="generation", new_token=ids[0],
                      draft_tokens=ids[1:2] + [model.eos_id, five])
        decoder.build([req])
        matcher = decoder.matchers[0]
        assert matcher.is_terminated()
        assert decoder.num_advanced_tokens[0] == 3 and decoder.num_guided_tokens[0] == 2
        req.num_accepted_draft_tokens = accepted_drafts
        decoder.rollback_rejected_tokens([req])
        if accepted_drafts == 2:
            # the stop token was verified: the next build skips the finished matcher
            decoder.build([Request(0, guide, phase="generation", new_token=five)])
            assert int(decoder.token_mask_host[0]) == 0
        else:
            # the target model rejected the stop token: back inside the number
            assert not matcher.is_terminated()
            decoder.build([Request(0, guide, phase="generation", new_token=five)])
            assert int(decoder.token_mask_host[0]) == 1
            assert allowed(decoder.bitmask_host[0], model.eos_id)


def test_ebnf_guide_and_uninitialised_buffer(factory, model):
    """The host bitmask comes from torch.empty: a fill must write every word of its row."""
    decoder = GuidedDecoder(factory, max_num_sequences=2, vocab_size_padded=model.vocab_size)
    decoder.bitmask_host.fill_(0x5A5A5A5A)
    guide = ("ebnf_grammar", 'root ::= "SELECT " [a-z]+ " FROM " [a-z]+ ";"')
    decoder.build([Request(1, guide, phase="context")])
    matcher = decoder.matchers[1]
    assert_row_is_reference(matcher, decoder.bitmask_host[0], model.n_words, "first row")
    for token in model.encode("SELECT name FROM users;") + [model.eos_id]:
        decoder.build([Request(1, guide, phase="generation", new_token=token)])
    assert matcher.is_terminated()


def test_structural_tag_guide(factory):
    guide = json.dumps({
        "type": "structural_tag",
        "format": {"type": "triggered_tags", "triggers": ["<tool>"], "tags": [
            {"begin": "<tool>", "content": {"type": "json_schema", "json_schema": {}},
             "end": "</tool>"}]},
    })
    factory.create("structural_tag", guide)
