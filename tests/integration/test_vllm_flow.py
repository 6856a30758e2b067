"""vLLM's XGrammar structured-output flow, replayed through ``import xmask as xgr``.

Replays the calls of vLLM v1 (``vllm/v1/structured_output/backend_xgrammar.py``, ``utils.py``,
``__init__.py``, the scheduler's draft validation): backend set-up with
``TokenizerInfo.from_huggingface(tokenizer, vocab_size=...)`` and a compiler with
``max_threads=8, cache_enabled=True, cache_limit_bytes=...``; per request type the compile call
vLLM makes (JSON schema with ``any_whitespace``, ``{"type": "object"}``, EBNF / choice, regex
compiled in a worker process from ``TokenizerInfo.serialize_json()`` and shipped back with
``CompiledGrammar.serialize_json()``); a matcher with ``override_stop_tokens`` and
``max_rollback_tokens=num_speculative_tokens``; the engine's torch bitmask of
``max_num_seqs * (1 + num_spec)`` rows filled by index (terminated rows get ``fill_(-1)``),
sliced and turned into numpy for the GPU worker, re-ordered and applied to float logits with
``indices``; ``accept_token`` / ``is_terminated`` / ``rollback`` / ``reset`` as the scheduler
uses them, draft validation, the parallel fill of large batches from a thread pool, and the
draft-tree fill with ``fork().traverse_draft_tree``.  The code here is written for these tests:
it follows vLLM's sequence of calls, not its source.
"""

import json
import multiprocessing
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import xmask as xgr
from server_replay import (  # noqa: F401  (model is a fixture)
    PERSON_BAD_STEPS,
    PERSON_DOCS,
    PERSON_SCHEMA,
    Model,
    allowed,
    assert_logits_masked,
    assert_row_is_reference,
    bad_step_tokens,
    model,
    oracle_logits,
    row_bools,
)

torch = pytest.importorskip("torch")

VLLM_XGRAMMAR_CACHE_MB = 512


# ---- the backend and per-request grammar, as vLLM drives them ---------------------------------


class Backend:
    """vLLM's XgrammarBackend: one tokenizer info and compiler per engine."""

    def __init__(self, model: Model, num_speculative_tokens: int = 0,
                 disable_any_whitespace: bool = False):
        self.model = model
        self.vocab_size = model.vocab_size
        self.tokenizer_info = xgr.TokenizerInfo.from_huggingface(
            model.tokenizer, vocab_size=model.vocab_size
        )
        self.compiler = xgr.GrammarCompiler(
            self.tokenizer_info,
            max_threads=8,
            cache_enabled=True,
            cache_limit_bytes=VLLM_XGRAMMAR_CACHE_MB * 1024 * 1024,
        )
        self.tokenizer_info_json = self.tokenizer_info.serialize_json()
        self.num_speculative_tokens = num_speculative_tokens
        self.any_whitespace = not disable_any_whitespace

    def compile_grammar(self, request_type: str, spec: str, stop_token_ids=None,
                        regex_pool=None) -> "Grammar":
        if request_type == "json":
            ctx = self.compiler.compile_json_schema(spec, any_whitespace=self.any_whitespace)
        elif request_type == "json_object":
            ctx = self.compiler.compile_json_schema(
                '{"type": "object"}', any_whitespace=self.any_whitespace
            )
        elif request_type == "grammar":
            ctx = self.compiler.compile_grammar(spec)
        elif request_type == "regex":
            # vLLM compiles regexes in a killable worker process and ships the result as JSON
            if regex_pool is None:
                serialized = compile_regex_worker(self.tokenizer_info_json, spec)
            else:
                serialized = regex_pool.apply(compile_regex_worker,
                                              (self.tokenizer_info_json, spec))
            ctx = xgr.CompiledGrammar.deserialize_json(serialized, self.tokenizer_info)
        else:
            raise ValueError(request_type)
        matcher = xgr.GrammarMatcher(
            ctx,
            override_stop_tokens=list(stop_token_ids) if stop_token_ids else None,
            max_rollback_tokens=self.num_speculative_tokens,
        )
        return Grammar(matcher, ctx)

    def allocate_token_bitmask(self, max_num_seqs: int):
        return xgr.allocate_token_bitmask(max_num_seqs, self.vocab_size)


class Grammar:
    """vLLM's XgrammarGrammar: the scheduler-side wrapper of one request's matcher."""

    def __init__(self, matcher, ctx):
        self.matcher = matcher
        self.ctx = ctx
        self.num_processed_tokens = 0
        self.terminated = False

    def accept_tokens(self, tokens) -> bool:
        if self.terminated:
            return True  # tokens after the stop token are ignored
        for token in tokens:
            if not self.matcher.accept_token(token):
                return False
            self.num_processed_tokens += 1
            self.terminated = self.matcher.is_terminated()
            if self.terminated:
                break
        return True

    def validate_tokens(self, tokens):
        """The accepted prefix of ``tokens``; the matcher is rolled back afterwards."""
        if self.terminated:
            return []
        accepted = []
        for token in tokens:
            if not self.matcher.accept_token(token):
                break
            accepted.append(token)
            if self.matcher.is_terminated():
                break
        if accepted:
            self.matcher.rollback(len(accepted))
        return accepted

    def rollback(self, n: int) -> None:
        self.matcher.rollback(n)
        self.num_processed_tokens -= n
        self.terminated = self.matcher.is_terminated()

    def fill_bitmask(self, bitmask, idx: int) -> None:
        self.matcher.fill_next_token_bitmask(bitmask, idx)

    def reset(self) -> None:
        self.matcher.reset()
        self.num_processed_tokens = 0
        self.terminated = False


def fill_rows(bitmask, batch):
    """The manager's _fill_bitmasks: fill live rows, reset the rows of finished requests."""
    full = torch.tensor(-1, dtype=torch.int32)
    for grammar, index in batch:
        if not grammar.terminated:
            grammar.fill_bitmask(bitmask, index)
        else:
            bitmask[index].fill_(full)


def grammar_bitmask(bitmask, grammars, spec_tokens):
    """The manager's grammar_bitmask (serial path): one row per request and per draft token,
    accepting each draft to fill the next row, then rolling the drafts back.  Returns the numpy
    array vLLM sends to the GPU workers."""
    cumulative = 0
    for grammar, drafts in zip(grammars, spec_tokens):
        advanced = 0
        for token in list(drafts) + [None]:
            fill_rows(bitmask, [(grammar, cumulative)])
            if token is not None and not grammar.terminated:
                assert grammar.accept_tokens([token])
                advanced += 1
            cumulative += 1
        if advanced:
            grammar.rollback(advanced)
    out = bitmask
    if cumulative < out.shape[0]:
        out = out[:cumulative]
    return out.numpy()


def apply_grammar_bitmask(logits, grammar_bitmask_np, logit_rows):
    """The GPU runner's apply_grammar_bitmask on CPU logits: re-order the compact numpy bitmask
    into the batch's row order and apply it with ``indices`` (None when every row is covered)."""
    sorted_tensor = torch.full(
        (logits.shape[0], grammar_bitmask_np.shape[1]), -1,
        dtype=torch.from_numpy(grammar_bitmask_np[:0]).dtype,
    )
    sorted_np = sorted_tensor.numpy()
    out_indices = []
    for compact_row, logit_row in enumerate(logit_rows):
        sorted_np[logit_row] = grammar_bitmask_np[compact_row]
        out_indices.append(logit_row)
    bitmask = sorted_tensor.to(logits.device, non_blocking=True)
    indices = None if len(out_indices) == logits.shape[0] else out_indices
    if logits.dtype != torch.float32:
        as_fp32 = logits.to(torch.float32)
        xgr.apply_token_bitmask_inplace(as_fp32, bitmask, indices=indices)
        logits.copy_(as_fp32.to(logits.dtype))
    else:
        xgr.apply_token_bitmask_inplace(logits, bitmask, indices=indices)
    return sorted_np


def compile_regex_worker(tokenizer_info_json: str, pattern: str) -> str:
    """vLLM's regex worker: rebuild the tokenizer info and a one-thread compiler in the worker
    process, compile, and return the compiled grammar as JSON."""
    info = xgr.TokenizerInfo.deserialize_json(tokenizer_info_json)
    compiler = xgr.GrammarCompiler(info, max_threads=1)
    return compiler.compile_regex(pattern).serialize_json()


def validate_regex_worker(pattern: str) -> str:
    """vLLM's request validation of a regex, also run in the worker process."""
    return xgr.Grammar.from_regex(pattern).serialize_json()


def choice_as_grammar(choices) -> str:
    """An EBNF alternation of literal strings (vLLM's ``choice`` requests)."""
    def quote(s):
        return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    return "root ::= " + " | ".join(quote(c) for c in choices)


# ---- fixtures --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def backend(model):
    return Backend(model)


@pytest.fixture(scope="module")
def spec_backend(model):
    return Backend(model, num_speculative_tokens=3)


def _worker_main(jobs, results) -> None:
    """A long-lived compile worker: run jobs, send back ("ok", value) or ("err", exception)."""
    results.put(("ready", None))
    while True:
        item = jobs.get()
        if item is None:
            return
        fn, args = item
        try:
            results.put(("ok", fn(*args)))
        except Exception as exc:  # shipped to the parent, which re-raises it
            results.put(("err", exc))


class RegexWorker:
    """vLLM's regex compile pool, one worker: jobs and results travel pickled over queues."""

    def __init__(self):
        ctx = multiprocessing.get_context("spawn")  # vLLM's choice once CUDA is initialised
        self.jobs, self.results = ctx.Queue(), ctx.Queue()
        self.process = ctx.Process(target=_worker_main, args=(self.jobs, self.results),
                                   daemon=True)
        self.process.start()
        assert self.results.get(timeout=120)[0] == "ready"

    def apply(self, fn, args):
        self.jobs.put((fn, args))
        status, payload = self.results.get(timeout=120)
        if status == "err":
            raise payload
        return payload

    def close(self):
        self.jobs.put(None)
        self.process.join(timeout=30)
        if self.process.is_alive():
            self.process.kill()


@pytest.fixture(scope="module")
def regex_pool():
    worker = RegexWorker()
    yield worker
    worker.close()


# ---- tests -----------------------------------------------------------------------------------


def test_backend_setup_and_tokenizer_info_json(backend, model):
    info = backend.tokenizer_info
    assert info.vocab_size == model.vocab_size
    assert model.eos_id in info.stop_token_ids
    text = backend.tokenizer_info_json
    assert isinstance(text, str)
    again = xgr.TokenizerInfo.deserialize_json(text)
    assert again.vocab_size == info.vocab_size
    assert again.stop_token_ids == info.stop_token_ids
    assert again.decoded_vocab == info.decoded_vocab
    assert again.serialize_json() == text


def test_engine_bitmask_is_torch_int32(backend, model):
    bitmask = backend.allocate_token_bitmask(8)
    assert isinstance(bitmask, torch.Tensor)
    assert bitmask.dtype == torch.int32
    assert tuple(bitmask.shape) == (8, model.n_words)
    assert bool((bitmask == -1).all())


@pytest.mark.parametrize("doc_index", range(len(PERSON_DOCS)))
def test_json_request_decode_loop(backend, model, doc_index):
    """One JSON-schema request in a batch with an unconstrained request and a regex request:
    fill, ship as numpy, re-order, apply with indices, argmax, accept, until the stop token."""
    doc = PERSON_DOCS[doc_index]
    person = backend.compile_grammar("json", json.dumps(PERSON_SCHEMA))
    digits = backend.compile_grammar("regex", r"[0-9]{2,4}")
    digit_ids = model.encode("2024")
    bitmask = backend.allocate_token_bitmask(4)
    targets = model.encode(doc) + [model.eos_id]
    for step, token in enumerate(targets):
        digit_token = digit_ids[step] if step < len(digit_ids) else model.eos_id
        np_mask = grammar_bitmask(bitmask, [person, digits], [[], []])
        assert np_mask.shape == (2, model.n_words) and np_mask.dtype == np.int32
        assert_row_is_reference(person.matcher, np_mask[0], model.n_words, f"at step {step}")
        # batch order on the GPU worker: [unconstrained, person, digits]
        logits = oracle_logits(torch, 3, model.vocab_size, [None, token, digit_token], seed=step)
        before = logits.clone()
        sorted_np = apply_grammar_bitmask(logits, np_mask, [1, 2])
        assert torch.equal(logits[0], before[0]), "the unconstrained row was masked"
        assert_logits_masked(before[1], logits[1], sorted_np[1], model.vocab_size)
        assert int(torch.argmax(logits[1])) == token
        assert person.accept_tokens([int(torch.argmax(logits[1]))])
        if not digits.terminated:
            assert int(torch.argmax(logits[2])) == digit_token
            assert digits.accept_tokens([digit_token])
    assert person.terminated and digits.terminated
    assert person.num_processed_tokens == len(targets)
    # finished requests keep a full row (the manager resets it instead of filling)
    np_mask = grammar_bitmask(bitmask, [person], [[]])
    assert (np_mask[0] == -1).all()


def test_gpu_runner_index_tensor(backend, model):
    """On a device vLLM passes ``indices`` as an int32 tensor (it copies the list itself to
    avoid a sync); the CPU kernel path must take the same tensor."""
    grammar = backend.compile_grammar("json", json.dumps(PERSON_SCHEMA))
    bitmask = backend.allocate_token_bitmask(2)
    np_mask = grammar_bitmask(bitmask, [grammar], [[]])
    sorted_tensor = torch.full((3, np_mask.shape[1]), -1, dtype=torch.int32)
    sorted_tensor.numpy()[2] = np_mask[0]
    logits = oracle_logits(torch, 3, model.vocab_size)
    before = logits.clone()
    index_tensor = torch.tensor([2], dtype=torch.int32, device=logits.device)
    xgr.apply_token_bitmask_inplace(logits, sorted_tensor.to(logits.device), indices=index_tensor)
    assert torch.equal(logits[:2], before[:2])
    assert_logits_masked(before[2], logits[2], np_mask[0], model.vocab_size)


def test_override_stop_tokens(backend, model):
    """A request with its own stop ids: the matcher ends on those, not the tokenizer's."""
    other = {"llama3": "<|end_of_text|>", "qwen2.5": "<|endoftext|>"}[model.name]
    other_id = model.tokenizer.convert_tokens_to_ids(other)
    grammar = backend.compile_grammar("grammar", choice_as_grammar(["yes", "no"]),
                                      stop_token_ids={other_id})
    assert grammar.accept_tokens(model.encode("yes"))
    bitmask = backend.allocate_token_bitmask(1)
    grammar.fill_bitmask(bitmask, 0)
    assert allowed(bitmask[0], other_id) and not allowed(bitmask[0], model.eos_id)
    assert grammar.accept_tokens([other_id]) and grammar.terminated


def test_default_stop_tokens_match_xgrammar(backend, model):
    """vLLM relies on ``from_huggingface``'s stop tokens (it passes no override): with a
    tokenizer that has an ``eos_token``, XGrammar uses exactly ``[eos_token_id]``."""
    xgrammar = pytest.importorskip("xgrammar")
    theirs = xgrammar.TokenizerInfo.from_huggingface(model.tokenizer, vocab_size=model.vocab_size)
    assert backend.tokenizer_info.stop_token_ids == list(theirs.stop_token_ids)


def test_grammars_compiled_concurrently(model):
    """vLLM compiles each request's grammar on a thread pool, so one compiler serves several
    threads at once, the same schema included."""
    backend = Backend(model)
    specs = []
    for i in range(6):
        schema = json.loads(json.dumps(PERSON_SCHEMA))
        schema["properties"][f"extra{i}"] = {"type": "array", "items": {"type": "integer"},
                                             "maxItems": i + 1}
        specs.append(json.dumps(schema))
    specs += specs[:2]  # the same schema twice, in flight together
    with ThreadPoolExecutor(max_workers=4) as pool:
        grammars = list(pool.map(lambda spec: backend.compile_grammar("json", spec), specs))
    for i, grammar in enumerate(grammars):
        n = i % 6
        doc = json.dumps({"name": "a", "age": 1, "tags": [], f"extra{n}": list(range(n + 1))})
        assert grammar.accept_tokens(model.encode(doc) + [model.eos_id]), doc
        assert grammar.terminated
        grammar.reset()
        too_long = json.dumps({"name": "a", "age": 1, "tags": [], f"extra{n}": list(range(n + 2))})
        assert not grammar.accept_tokens(model.encode(too_long) + [model.eos_id])


def test_json_request_forbidden_tokens_are_masked(backend, model):
    grammar = backend.compile_grammar("json", json.dumps(PERSON_SCHEMA))
    bitmask = backend.allocate_token_bitmask(1)
    for prefix, bad in bad_step_tokens(model, PERSON_BAD_STEPS):
        grammar.reset()
        assert grammar.accept_tokens(prefix)
        grammar.fill_bitmask(bitmask, 0)
        assert not allowed(bitmask[0], bad), (model.decode(prefix), model.decode([bad]))
        assert not allowed(bitmask[0], model.eos_id)
        logits = oracle_logits(torch, 1, model.vocab_size, [bad])
        xgr.apply_token_bitmask_inplace(logits, bitmask.to(logits.device, non_blocking=True))
        assert logits[0, bad] == float("-inf")
        # the request's own padded rows past the tokenizer are never allowed
        assert logits[0, model.vocab_size - 1] == float("-inf")


def test_json_object_and_no_whitespace(model):
    backend = Backend(model, disable_any_whitespace=True)
    grammar = backend.compile_grammar("json_object", "")
    # without any_whitespace the separators are exactly ", " and ": " (XGrammar's default)
    doc = json.dumps({"a": [1, 2.5, {"b": None}], "c": "d"})
    bitmask = backend.allocate_token_bitmask(2)
    for token in model.encode(doc):
        grammar.fill_bitmask(bitmask, 1)
        assert allowed(bitmask[1], token)
        assert grammar.accept_tokens([token])
    grammar.fill_bitmask(bitmask, 1)
    assert allowed(bitmask[1], model.eos_id)
    grammar.reset()
    assert grammar.accept_tokens(model.encode('{"a":'))
    grammar.fill_bitmask(bitmask, 0)
    assert allowed(bitmask[0], model.first_token(" ["))
    assert not allowed(bitmask[0], model.first_token("["))
    assert not allowed(bitmask[0], model.first_token("\n"))
    grammar.reset()
    grammar.fill_bitmask(bitmask, 0)
    assert not allowed(bitmask[0], model.first_token("["))  # the root is an object


def test_choice_and_ebnf_requests(backend, model):
    choices = ["positive", "negative", 'say "hi"']
    ebnf = choice_as_grammar(choices)
    xgr.Grammar.from_ebnf(ebnf)  # the frontend's validation
    grammar = backend.compile_grammar("grammar", ebnf)
    for choice in choices:
        grammar.reset()
        assert grammar.num_processed_tokens == 0 and not grammar.terminated
        assert grammar.accept_tokens(model.encode(choice) + [model.eos_id])
        assert grammar.terminated
    grammar.reset()
    assert not grammar.accept_tokens(model.encode("neutral"))
    arithmetic = backend.compile_grammar(
        "grammar",
        'root ::= expr\nexpr ::= term ("+" term)*\nterm ::= [0-9]+ | "(" expr ")"',
    )
    assert arithmetic.accept_tokens(model.encode("(1+23)+4") + [model.eos_id])
    assert arithmetic.terminated


def test_regex_compiled_in_worker_process(backend, model, regex_pool):
    pattern = r"(\+1 )?\(\d{3}\) \d{3}-\d{4}"
    # frontend validation, in the worker
    grammar_json = regex_pool.apply(validate_regex_worker, (pattern,))
    assert isinstance(grammar_json, str)
    shipped = backend.compile_grammar("regex", pattern, regex_pool=regex_pool)
    local = xgr.GrammarMatcher(backend.compiler.compile_regex(pattern))
    a = backend.allocate_token_bitmask(2)
    for token in model.encode("+1 (555) 867-5309") + [model.eos_id]:
        shipped.fill_bitmask(a, 0)
        local.fill_next_token_bitmask(a, 1)
        assert torch.equal(a[0], a[1]), "the deserialized grammar's mask differs"
        assert allowed(a[0], token)
        assert shipped.accept_tokens([token]) and local.accept_token(token)
    assert shipped.terminated


def test_bad_regex_error_comes_back_from_the_worker(regex_pool):
    """An invalid regex fails in the worker; the exception is pickled back and re-raised in
    the engine, which turns it into a validation error.  It must survive the trip."""
    with pytest.raises(RuntimeError) as info:
        regex_pool.apply(validate_regex_worker, ("(unclosed",))
    assert "unclosed" in str(info.value) or "(" in str(info.value)
    # the worker is still usable afterwards
    assert isinstance(regex_pool.apply(validate_regex_worker, ("[a-z]+",)), str)


def test_bad_requests_raise_at_validation(backend):
    with pytest.raises(Exception):
        xgr.Grammar.from_regex("(unclosed")
    with pytest.raises(Exception):
        xgr.Grammar.from_ebnf('root ::= "a" "')
    with pytest.raises(Exception):
        xgr.Grammar.from_json_schema('{"type": ')
    # a dict schema is accepted, as vLLM passes a dict when the request carried one
    xgr.Grammar.from_json_schema(PERSON_SCHEMA)


def test_speculative_rows_and_rollback(spec_backend, model):
    """num_speculative_tokens=3, in vLLM's order: the manager fills one row per scheduled draft
    plus the bonus row (accepting each draft, then rolling them all back); the target model
    verifies; the scheduler accepts the verified tokens; the drafter's next proposal is
    validated (accept + rollback) before being scheduled."""
    grammar = spec_backend.compile_grammar("json", json.dumps(PERSON_SCHEMA))
    targets = model.encode(PERSON_DOCS[0]) + [model.eos_id]
    bitmask = spec_backend.allocate_token_bitmask(2 * (1 + 3))
    scratch = spec_backend.allocate_token_bitmask(1)
    bad = model.eos_id  # a drafter proposing the stop token mid-document: the grammar refuses it
    pos, scheduled, round_no = 0, [], 0
    while not grammar.terminated:
        np_mask = grammar_bitmask(bitmask, [grammar], [scheduled])
        assert np_mask.shape == (len(scheduled) + 1, model.n_words)
        assert grammar.num_processed_tokens == pos, "drafts were not rolled back"
        check = xgr.GrammarMatcher(grammar.ctx)
        for token in targets[:pos]:
            assert check.accept_token(token)
        for i in range(len(scheduled) + 1):
            if check.is_terminated():  # a draft was the stop token: the manager resets the row
                assert (np_mask[i] == -1).all()
            else:
                assert_row_is_reference(check, np_mask[i], model.n_words, f"draft row {i}")
            if i < len(scheduled):
                assert check.accept_token(scheduled[i])
        # the target model verifies: drafts that match the document, then one bonus token
        n_ok = 0
        while n_ok < len(scheduled) and scheduled[n_ok] == targets[pos + n_ok]:
            n_ok += 1
        new_tokens = targets[pos:pos + n_ok + 1]
        assert allowed(np_mask[n_ok], new_tokens[-1])
        assert grammar.accept_tokens(new_tokens)
        pos += len(new_tokens)
        if grammar.terminated:
            break
        # the drafter proposes three tokens; the scheduler keeps the prefix the grammar accepts
        drafts = targets[pos:pos + 3]
        if round_no % 3 == 1 and len(drafts) == 3 and bad not in drafts:
            drafts = drafts[:2] + [bad]
        elif round_no % 3 == 2:
            grammar.fill_bitmask(scratch, 0)
            ok = row_bools(scratch[0], model.vocab_size)
            ok[targets[pos]] = False
            drafts = [int(np.flatnonzero(ok)[0])] + drafts[1:]  # allowed, but not the model's
        valid = grammar.validate_tokens(drafts)
        assert grammar.num_processed_tokens == pos
        assert valid == drafts[:len(valid)]
        if bad in drafts[:-1] or (bad in drafts and pos + len(drafts) < len(targets)):
            assert bad not in valid
        if round_no % 3 == 0:
            assert valid == drafts  # the document's own tokens are all valid
        scheduled = valid
        round_no += 1
    assert pos == len(targets)


def test_more_drafts_than_max_rollback_tokens(spec_backend, model):
    """vLLM's own test feeds the manager more scheduled tokens than num_speculative_tokens
    (the document, the stop token, then more) and rolls all of them back.  XGrammar ignores
    ``max_rollback_tokens`` (deprecated, always unlimited), so this must work."""
    grammar = spec_backend.compile_grammar("json", json.dumps(PERSON_SCHEMA))
    prompt = model.encode(PERSON_DOCS[0])
    assert grammar.accept_tokens(prompt[:1])
    bitmask = spec_backend.allocate_token_bitmask(64)
    for drafts in (prompt[1:] + [model.eos_id], prompt[1:] + [model.eos_id] + prompt, prompt[1:]):
        np_mask = grammar_bitmask(bitmask, [grammar], [drafts])
        assert np_mask.shape[0] == len(drafts) + 1
        assert not grammar.terminated and grammar.num_processed_tokens == 1
        for i, token in enumerate(prompt[1:]):
            assert allowed(np_mask[i], token)


def test_rollback_across_the_stop_token(spec_backend, model):
    grammar = spec_backend.compile_grammar("json", json.dumps(PERSON_SCHEMA))
    prompt = model.encode(PERSON_DOCS[0])
    assert grammar.accept_tokens(prompt + [model.eos_id])
    assert grammar.terminated
    assert grammar.accept_tokens(model.encode(" trailing"))  # ignored after termination
    assert grammar.num_processed_tokens == len(prompt) + 1
    grammar.rollback(2)  # the stop token and the closing brace
    assert not grammar.terminated
    assert grammar.validate_tokens([model.eos_id]) == []
    assert grammar.accept_tokens(prompt[-1:] + [model.eos_id])
    assert grammar.terminated


def test_large_batch_parallel_fill_from_threads(backend, model):
    """Over 128 structured requests without speculation: vLLM fills batches of 16 rows from a
    thread pool.  Every row must equal a serial fill."""
    ctx = backend.compiler.compile_json_schema(json.dumps(PERSON_SCHEMA), any_whitespace=True)
    doc_ids = model.encode(PERSON_DOCS[1])
    grammars = []
    for i in range(130):
        g = Grammar(xgr.GrammarMatcher(ctx, max_rollback_tokens=0), ctx)
        assert g.accept_tokens(doc_ids[: i % (len(doc_ids) + 1)])
        grammars.append(g)
    bitmask = backend.allocate_token_bitmask(160)
    batches = [[(g, i) for i, g in enumerate(grammars)][k:k + 16] for k in range(0, 130, 16)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        for future in [pool.submit(fill_rows, bitmask, batch) for batch in batches]:
            future.result()
    serial = backend.allocate_token_bitmask(1)
    for i, g in enumerate(grammars):
        fill_rows(serial, [(g, 0)])
        assert torch.equal(bitmask[i], serial[0]), f"row {i}"
    assert bool((bitmask[130:] == -1).all()), "rows past the batch were written"


def test_bf16_logits_cpu_path(backend, model):
    grammar = backend.compile_grammar("json", json.dumps(PERSON_SCHEMA))
    bitmask = backend.allocate_token_bitmask(2)
    np_mask = grammar_bitmask(bitmask, [grammar], [[]])
    logits = oracle_logits(torch, 1, model.vocab_size).to(torch.bfloat16)
    before = logits.clone()
    sorted_np = apply_grammar_bitmask(logits, np_mask, [0])
    assert logits.dtype == torch.bfloat16
    assert_logits_masked(before[0], logits[0], sorted_np[0], model.vocab_size)


def sentencepiece_ids(vocab: dict, text: str):
    """Ids spelling ``text`` in a sentencepiece vocabulary: spaces are "\u2581" glued to the
    next character when that piece exists, characters missing from the vocabulary become
    ``<0xNN>`` byte pieces."""
    ids = []
    chars = text.replace(" ", "\u2581")
    i = 0
    while i < len(chars):
        if chars[i] == "\u2581" and i + 1 < len(chars) and chars[i:i + 2] in vocab:
            ids.append(vocab[chars[i:i + 2]])
            i += 2
            continue
        if chars[i] in vocab:
            ids.append(vocab[chars[i]])
        else:
            ids.extend(vocab[f"<0x{b:02X}>"] for b in chars[i].encode("utf-8"))
        i += 1
    return ids


def test_mistral_style_tokenizer_info():
    """vLLM's Mistral branch: ``TokenizerInfo(encoded_vocab=..., vocab_type=BYTE_FALLBACK,
    vocab_size=len(vocab), stop_token_ids=[eos], add_prefix_space=True)``."""
    from conftest import tokenizer_json

    vocab = json.loads(tokenizer_json("mistral-7b-v0.1").read_text())["model"]["vocab"]
    encoded = [tok for tok, _ in sorted(vocab.items(), key=lambda kv: kv[1])]
    info = xgr.TokenizerInfo(
        encoded_vocab=encoded,
        vocab_type=xgr.VocabType.BYTE_FALLBACK,
        vocab_size=len(encoded),
        stop_token_ids=[2],
        add_prefix_space=True,
    )
    assert info.vocab_size == 32000 and info.stop_token_ids == [2]
    assert info.add_prefix_space
    compiled = xgr.GrammarCompiler(info, max_threads=8, cache_enabled=True).compile_json_schema(
        json.dumps(PERSON_SCHEMA), any_whitespace=True
    )
    matcher = xgr.GrammarMatcher(compiled, override_stop_tokens=None, max_rollback_tokens=0)
    bitmask = xgr.allocate_token_bitmask(1, info.vocab_size)
    for tok in sentencepiece_ids(vocab, PERSON_DOCS[1]):
        matcher.fill_next_token_bitmask(bitmask, 0)
        assert allowed(bitmask[0], tok), encoded[tok]
        assert matcher.accept_token(tok)
    assert matcher.accept_token(2) and matcher.is_terminated()


def test_draft_tree_fill_with_fork(spec_backend, model):
    """vLLM's draft-tree variant: ``matcher.fork().traverse_draft_tree(next_token, next_sibling,
    draft_tokens, bitmask[rows], -1.0)`` (int64 topology tensors, a 2-D slice of the engine
    bitmask), falling back to per-node forks; both must give the same rows."""
    grammar = spec_backend.compile_grammar("json", json.dumps(PERSON_SCHEMA))
    targets = model.encode(PERSON_DOCS[0])
    assert grammar.accept_tokens(targets[:3])
    # tree: root -> a (doc's next) -> b (doc's after); root -> c (a refused token)
    a, b, c = targets[3], targets[4], model.first_token("]")
    next_token = torch.tensor([1, 2, -1, -1], dtype=torch.int64)
    next_sibling = torch.tensor([-1, 3, -1, -1], dtype=torch.int64)
    draft = torch.tensor([0, a, b, c], dtype=torch.int64)
    engine = spec_backend.allocate_token_bitmask(8)
    rows = engine[2:6]
    done = grammar.matcher.fork().traverse_draft_tree(next_token, next_sibling, draft, rows, -1.0)
    assert done is True
    assert grammar.num_processed_tokens == 3 and grammar.matcher.accept_token(a)
    grammar.matcher.rollback(1)
    # the fork-per-node fallback vLLM uses when the traversal is not available
    fallback = spec_backend.allocate_token_bitmask(4)
    paths = {0: [], 1: [a], 2: [a, b], 3: [c]}
    for node, path in paths.items():
        m = grammar.matcher.fork()
        if all(m.accept_token(t) for t in path):
            m.fill_next_token_bitmask(fallback, node)
        else:
            fallback[node].fill_(-1)
    for node in (0, 1, 2):
        assert torch.equal(rows[node], fallback[node]), f"node {node}"
    assert allowed(rows[0], a) and allowed(rows[1], b) and not allowed(rows[0], c)
    assert bool((engine[:2] == -1).all()) and bool((engine[6:] == -1).all())


# ---- structural tags and Lark: a separate issue ----------------------------------------------

_ISSUE_11 = pytest.mark.xfail(strict=True, reason="structural tags / Lark: issue 11")

_LEGACY_TAG = {
    "structures": [
        {"begin": "<function=get_weather>", "schema": {"type": "object"}, "end": "</function>"}
    ],
    "triggers": ["<function="],
}


def test_structural_tag_legacy_items(backend):
    tags = [
        xgr.StructuralTagItem(begin=s["begin"], schema=json.dumps(s["schema"]), end=s["end"])
        for s in _LEGACY_TAG["structures"]
    ]
    xgr.Grammar.from_structural_tag(tags, _LEGACY_TAG["triggers"])
    backend.compiler.compile_structural_tag(tags, _LEGACY_TAG["triggers"])


def test_structural_tag_json_format(backend):
    spec = json.dumps({
        "type": "structural_tag",
        "format": {"type": "const_string", "value": "ok"},
    })
    xgr.Grammar.from_structural_tag(spec)
    backend.compiler.compile_structural_tag(spec)


def test_lark_grammar_request(backend):
    lark = 'start: "yes" | "no"'
    xgr.Grammar.from_lark(lark)
    compiled = backend.compiler.compile_lark(lark)
    matcher = xgr.GrammarMatcher(compiled)
    assert matcher.accept_string("yes") and not matcher.accept_string("no")
