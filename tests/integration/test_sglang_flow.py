"""SGLang's XGrammar grammar backend, replayed through ``import xmask as xgr``.

Replays the calls of SGLang's ``python/sglang/srt/constrained/xgrammar_backend.py`` (and the
scheduler / speculative code around it): ``TokenizerInfo.from_huggingface(tokenizer,
vocab_size=..., stop_token_ids=model_eos_token_ids)``, ``GrammarCompiler(tokenizer_info=...)``,
``BatchGrammarMatcher(max_threads=4)``; dispatch of ``$$ANY$$`` to the built-in JSON grammar,
JSON schemas with ``schema=``, ``any_whitespace=``, ``max_whitespace_cnt=``, EBNF (also with
``root_rule_name=``) and regexes, catching ``RuntimeError``; matchers with
``max_rollback_tokens=200, override_stop_tokens=None`` (``copy()`` makes a new one on the cached
grammar); vocab masks built as ``torch.full(get_bitmask_shape(...), -1, dtype=bitmask_dtype)``,
filled per row or with ``batch_fill_next_token_bitmask(matchers, mask, indices)`` from 16 rows
on, moved with ``.to(device, non_blocking=True)`` and applied on CPU with
``apply_token_bitmask_inplace(logits, mask, backend="cpu")``; jump-forward with
``find_jump_forward_string`` then re-tokenization, rollback and accept; the EAGLE draft-tree
mask (accept / fill / rollback(1) depth first into a slice of one big mask); the persistent
compiled-grammar cache (``serialize_json`` / ``CompiledGrammar.deserialize_json``).  The code is
written for these tests and follows SGLang's sequence of calls, not its source.
"""

import json

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
)

torch = pytest.importorskip("torch")

MAX_ROLLBACK_TOKENS = 200
BATCH_MIN_SIZE = 16
BATCH_MAX_THREADS = 4


class InvalidGrammar:
    """What the backend returns for a request whose grammar failed to compile."""

    def __init__(self, message: str):
        self.message = message


class Grammar:
    """SGLang's XGrammarGrammar: one request's matcher and its vocab-mask helpers."""

    def __init__(self, matcher, vocab_size: int, ctx, override_stop_tokens, batch_matcher):
        self.matcher = matcher
        self.vocab_size = vocab_size
        self.ctx = ctx
        self.override_stop_tokens = override_stop_tokens
        self.batch_matcher = batch_matcher
        self.accepted_tokens = []

    def accept_token(self, token: int) -> None:
        if self.is_terminated():
            return
        if not self.matcher.accept_token(token):
            raise ValueError(f"Tokens not accepted: {token}")
        self.accepted_tokens.append(token)

    def rollback(self, k: int) -> None:
        self.matcher.rollback(k)
        self.accepted_tokens = self.accepted_tokens[:-k]

    def is_terminated(self) -> bool:
        return self.matcher.is_terminated()

    @staticmethod
    def allocate_vocab_mask(vocab_size: int, batch_size: int, device):
        return torch.full(
            xgr.get_bitmask_shape(batch_size, vocab_size), -1, dtype=xgr.bitmask_dtype,
            pin_memory=False,
        )

    def fill_vocab_mask(self, vocab_mask, idx: int) -> None:
        self.matcher.fill_next_token_bitmask(vocab_mask, idx)

    def fill_vocab_mask_batched(self, entries, vocab_mask) -> None:
        """``entries``: (row, grammar) pairs.  Small batches fill row by row."""
        if self.batch_matcher is None or len(entries) < BATCH_MIN_SIZE:
            for row, grammar in entries:
                grammar.fill_vocab_mask(vocab_mask, row)
            return
        matchers = [grammar.matcher for _, grammar in entries]
        indices = [row for row, _ in entries]
        self.batch_matcher.batch_fill_next_token_bitmask(matchers, vocab_mask, indices)

    @staticmethod
    def move_vocab_mask(vocab_mask, device):
        return vocab_mask.to(device, non_blocking=True)

    @staticmethod
    def apply_vocab_mask(logits, vocab_mask) -> None:
        assert logits.device.type == "cpu"
        xgr.apply_token_bitmask_inplace(logits, vocab_mask, backend="cpu")

    def copy(self) -> "Grammar":
        matcher = xgr.GrammarMatcher(
            self.ctx,
            max_rollback_tokens=MAX_ROLLBACK_TOKENS,
            override_stop_tokens=self.override_stop_tokens,
        )
        return Grammar(matcher, self.vocab_size, self.ctx, self.override_stop_tokens,
                       self.batch_matcher)

    def try_jump_forward(self):
        s = self.matcher.find_jump_forward_string()
        return ([], s) if s else None

    def jump_and_retokenize(self, old_output_ids, new_output_ids, next_state) -> None:
        k = 0
        for i, old_id in enumerate(old_output_ids):
            if i < len(new_output_ids) and old_id == new_output_ids[i]:
                k = i + 1
            else:
                break
        if k < len(old_output_ids):
            self.matcher.rollback(len(old_output_ids) - k)
        for token in new_output_ids[k:]:
            if not self.matcher.accept_token(token):
                raise ValueError(f"Token not accepted during retokenization: {token}")
        self.accepted_tokens = list(new_output_ids)


class Backend:
    """SGLang's XGrammarGrammarBackend."""

    def __init__(self, model: Model, any_whitespace: bool = True, max_whitespace_cnt=None):
        self.tokenizer_info = xgr.TokenizerInfo.from_huggingface(
            model.tokenizer, vocab_size=model.vocab_size, stop_token_ids=[model.eos_id]
        )
        self.grammar_compiler = xgr.GrammarCompiler(tokenizer_info=self.tokenizer_info)
        self.batch_matcher = xgr.BatchGrammarMatcher(max_threads=BATCH_MAX_THREADS)
        self.vocab_size = model.vocab_size
        self.override_stop_tokens = None
        self.any_whitespace = any_whitespace
        self.max_whitespace_cnt = max_whitespace_cnt

    def _from_context(self, ctx) -> Grammar:
        matcher = xgr.GrammarMatcher(
            ctx, max_rollback_tokens=MAX_ROLLBACK_TOKENS,
            override_stop_tokens=self.override_stop_tokens,
        )
        return Grammar(matcher, self.vocab_size, ctx, self.override_stop_tokens,
                       self.batch_matcher)

    def dispatch_json(self, key_string: str):
        try:
            if key_string == "$$ANY$$":
                ctx = self.grammar_compiler.compile_builtin_json_grammar()
            else:
                json.loads(key_string)
                ctx = self.grammar_compiler.compile_json_schema(
                    schema=key_string,
                    any_whitespace=self.any_whitespace,
                    max_whitespace_cnt=self.max_whitespace_cnt,
                )
        except (RuntimeError, json.decoder.JSONDecodeError, UnicodeDecodeError) as e:
            return InvalidGrammar(str(e))
        return self._from_context(ctx)

    def dispatch_ebnf(self, key_string: str, root_rule_name=None):
        try:
            if root_rule_name is None:
                ctx = self.grammar_compiler.compile_grammar(key_string)
            else:
                ctx = self.grammar_compiler.compile_grammar(key_string,
                                                            root_rule_name=root_rule_name)
        except RuntimeError as e:
            return InvalidGrammar(str(e))
        return self._from_context(ctx)

    def dispatch_regex(self, key_string: str):
        try:
            ctx = self.grammar_compiler.compile_regex(key_string)
        except RuntimeError as e:
            return InvalidGrammar(str(e))
        return self._from_context(ctx)

    def reset(self) -> None:
        self.grammar_compiler.clear_cache()


@pytest.fixture(scope="module")
def backend(model):
    return Backend(model)


def decode_step(backend, grammars, wanted):
    """One sampling step for a batch: allocate, fill (per row or batched), move, apply on CPU,
    argmax, accept.  ``wanted[i]`` is the token the "model" favours for row i."""
    vocab_mask = Grammar.allocate_vocab_mask(backend.vocab_size, len(grammars), "cpu")
    entries = [(i, g) for i, g in enumerate(grammars) if not g.is_terminated()]
    if entries:
        entries[0][1].fill_vocab_mask_batched(entries, vocab_mask)
    vocab_mask = Grammar.move_vocab_mask(vocab_mask, "cpu")
    logits = oracle_logits(torch, len(grammars), backend.vocab_size, wanted)
    before = logits.clone()
    Grammar.apply_vocab_mask(logits, vocab_mask)
    chosen = [int(t) for t in torch.argmax(logits, dim=-1)]
    for (i, g) in entries:
        assert_logits_masked(before[i], logits[i], vocab_mask[i], backend.vocab_size)
        g.accept_token(chosen[i])
    return vocab_mask, chosen


# ---- tests -----------------------------------------------------------------------------------


def test_backend_setup(backend, model):
    info = backend.tokenizer_info
    assert info.vocab_size == model.vocab_size
    assert info.stop_token_ids == [model.eos_id]
    assert info.add_prefix_space is False
    vocab = info.decoded_vocab
    assert len(vocab) == model.vocab_size and all(isinstance(v, bytes) for v in vocab[:100])
    assert xgr.bitmask_dtype == torch.int32
    assert xgr.get_bitmask_shape(3, model.vocab_size) == (3, model.n_words)


@pytest.mark.parametrize("doc_index", range(len(PERSON_DOCS)))
def test_decode_loop(backend, model, doc_index):
    """A batch of three requests (a schema, ``$$ANY$$`` JSON, a regex) decoded to the end."""
    doc = PERSON_DOCS[doc_index]
    grammars = [
        backend.dispatch_json(json.dumps(PERSON_SCHEMA)),
        backend.dispatch_json("$$ANY$$"),
        backend.dispatch_regex(r"[a-z]+( [a-z]+)*\."),
    ]
    assert all(isinstance(g, Grammar) for g in grammars)
    streams = [model.encode(doc), model.encode('[1, {"k": null}]'), model.encode("jump over.")]
    streams = [s + [model.eos_id] for s in streams]
    step = 0
    while not all(g.is_terminated() for g in grammars):
        wanted = [s[step] if step < len(s) else None for s in streams]
        for g, want in zip(grammars, wanted):
            if not g.is_terminated():
                ref = Grammar.allocate_vocab_mask(backend.vocab_size, 1, "cpu")
                g.matcher.fill_next_token_bitmask(ref, 0)
                assert allowed(ref[0], want), (model.name, step, model.decode([want]))
        decode_step(backend, grammars, wanted)
        step += 1
    for g, s in zip(grammars, streams):
        assert g.accepted_tokens == s


def test_forbidden_tokens_and_old_apply_signature(backend, model):
    """Older SGLang applied with ``apply_token_bitmask_inplace(logits, vocab_mask)``."""
    grammar = backend.dispatch_json(json.dumps(PERSON_SCHEMA))
    for prefix, bad in bad_step_tokens(model, PERSON_BAD_STEPS):
        g = grammar.copy()
        for token in prefix:
            g.accept_token(token)
        mask = g.allocate_vocab_mask(model.vocab_size, 1, "cpu")
        g.fill_vocab_mask(mask, 0)
        assert_row_is_reference(g.matcher, mask[0], model.n_words, model.decode(prefix))
        logits = oracle_logits(torch, 1, model.vocab_size, [bad])
        xgr.apply_token_bitmask_inplace(logits, g.move_vocab_mask(mask, "cpu"))
        assert logits[0, bad] == float("-inf")
        assert logits[0, model.eos_id] == float("-inf")
        with pytest.raises(ValueError):
            g.accept_token(bad)


def test_cpu_apply_on_half_precision_logits(backend, model):
    """The CPU path gets the model's own logits dtype (bfloat16 / float16)."""
    grammar = backend.dispatch_json(json.dumps(PERSON_SCHEMA))
    mask = grammar.allocate_vocab_mask(model.vocab_size, 2, "cpu")
    grammar.fill_vocab_mask(mask, 1)
    for dtype in (torch.bfloat16, torch.float16):
        logits = oracle_logits(torch, 2, model.vocab_size).to(dtype)
        before = logits.clone()
        grammar.apply_vocab_mask(logits, grammar.move_vocab_mask(mask, "cpu"))
        assert logits.dtype == dtype
        assert torch.equal(logits[0], before[0])  # row 0 kept its full mask
        assert_logits_masked(before[1], logits[1], mask[1], model.vocab_size)


def test_batched_fill_from_sixteen_rows(backend, model):
    """20 live requests, rows scattered over a 32-row mask: ``batch_fill_next_token_bitmask``
    with indices fills exactly those rows, as a per-row fill would."""
    base = backend.dispatch_json(json.dumps(PERSON_SCHEMA))
    any_json = backend.dispatch_json("$$ANY$$")
    doc = model.encode(PERSON_DOCS[1])
    grammars = []
    for i in range(20):
        g = (base if i % 2 else any_json).copy()
        for token in doc[: (3 * i) % len(doc)]:
            g.accept_token(token)
        grammars.append(g)
    rows = [31 - 2 * i if i < 16 else 2 * (i - 16) for i in range(20)]  # odd rows, then even
    mask = Grammar.allocate_vocab_mask(model.vocab_size, 32, "cpu")
    entries = list(zip(rows, grammars))
    assert len(entries) >= BATCH_MIN_SIZE
    grammars[0].fill_vocab_mask_batched(entries, mask)
    one = Grammar.allocate_vocab_mask(model.vocab_size, 1, "cpu")
    for row, g in entries:
        g.fill_vocab_mask(one, 0)
        assert torch.equal(mask[row], one[0]), f"row {row}"
    untouched = sorted(set(range(32)) - set(rows))
    assert bool((mask[untouched] == -1).all())
    # batch accept / rollback as SGLang's overlap path would issue them
    tokens = [doc[(3 * i) % len(doc)] for i in range(20)]
    results = backend.batch_matcher.batch_accept_token([g.matcher for g in grammars], tokens)
    assert list(results) == [True] * 20
    backend.batch_matcher.batch_rollback([g.matcher for g in grammars], [1] * 20)
    again = Grammar.allocate_vocab_mask(model.vocab_size, 32, "cpu")
    grammars[0].fill_vocab_mask_batched(entries, again)
    assert torch.equal(again, mask)


def test_invalid_requests_are_caught(backend):
    assert isinstance(backend.dispatch_json('{"type": '), InvalidGrammar)
    assert isinstance(
        backend.dispatch_json('{"type": "object", "properties": {"a": {"$ref": "#/nope"}}}'),
        InvalidGrammar,
    )
    assert isinstance(backend.dispatch_ebnf('root ::= "a" "'), InvalidGrammar)
    assert isinstance(backend.dispatch_ebnf("root ::= undefined_rule"), InvalidGrammar)
    assert isinstance(backend.dispatch_regex("(unclosed"), InvalidGrammar)
    # the schema compiler raises RuntimeError subclasses only
    with pytest.raises(RuntimeError):
        backend.grammar_compiler.compile_json_schema(schema='{"type": "object"')


def _jump_forward_walk(backend, model, doc, prompt="Reply in JSON.\n"):
    """Decode ``doc``, jumping forward whenever the grammar forces text, as the scheduler does:
    decoded text + jump string re-tokenized with the prompt, the grammar rolled back to the
    common prefix and fed the new tokens.  Returns the number of jumps."""
    grammar = backend.dispatch_json(json.dumps(PERSON_SCHEMA))
    vocab = backend.tokenizer_info.decoded_vocab
    prompt_ids = model.tokenizer.encode(prompt)
    doc_bytes = doc.encode("utf-8")
    output_ids = []
    pending = model.encode(doc)
    jumps = 0
    mask = Grammar.allocate_vocab_mask(model.vocab_size, 1, "cpu")
    while pending:
        done = b"".join(vocab[t] for t in output_ids)
        helper = grammar.try_jump_forward()
        if helper is not None:
            _, jump = backend_jump_string(grammar, helper)
            # the forced text is what every valid continuation starts with: so does the document
            assert doc_bytes[len(done):].startswith(jump.encode("utf-8")), (done, jump)
            decoded = model.decode(output_ids)
            if "\ufffd" not in decoded:
                all_ids = model.tokenizer.encode(prompt + decoded + jump)
                if all_ids[len(prompt_ids) - 1] == prompt_ids[-1]:  # no token fusion
                    new_ids = all_ids[len(prompt_ids):]
                    grammar.jump_and_retokenize(output_ids, new_ids, -1)
                    output_ids = list(new_ids)
                    done = b"".join(vocab[t] for t in output_ids)
                    assert done == (decoded + jump).encode("utf-8")
                    pending = model.encode(doc_bytes[len(done):].decode("utf-8"))
                    jumps += 1
                    if not pending:
                        break
        token = pending.pop(0)
        grammar.fill_vocab_mask(mask, 0)
        assert allowed(mask[0], token), (done, model.decode([token]))
        grammar.accept_token(token)
        output_ids.append(token)
    assert b"".join(vocab[t] for t in output_ids) == doc_bytes
    grammar.accept_token(model.eos_id)
    assert grammar.is_terminated()
    return jumps


def backend_jump_string(grammar, helper):
    """SGLang's jump_forward_str_state: (string, next_state=-1)."""
    _, data = helper
    return -1, data


@pytest.mark.parametrize("doc_index", range(len(PERSON_DOCS) - 1))
def test_jump_forward_and_retokenize(backend, model, doc_index):
    jumps = _jump_forward_walk(backend, model, PERSON_DOCS[doc_index])
    assert jumps > 0


def test_jump_forward_without_any_whitespace(model):
    """``--constrained-json-disable-any-whitespace``: separators are forced, so more jumps."""
    strict = Backend(model, any_whitespace=False)
    doc = json.dumps({"name": "Ada Lovelace", "age": 36, "tags": ["math", "poetry"]})
    assert _jump_forward_walk(strict, model, doc) >= 4


def test_max_whitespace_cnt(model):
    """``max_whitespace_cnt`` bounds each run of whitespace the schema grammar allows."""
    bounded = Backend(model, max_whitespace_cnt=2)
    grammar = bounded.dispatch_json(json.dumps(PERSON_SCHEMA))
    space = model.first_token(" ")
    mask = Grammar.allocate_vocab_mask(model.vocab_size, 1, "cpu")
    grammar.accept_token(model.first_token("{"))
    grammar.accept_token(space)
    grammar.accept_token(space)
    grammar.fill_vocab_mask(mask, 0)
    assert not allowed(mask[0], space)
    assert allowed(mask[0], model.first_token('"'))


def eagle_tree_mask(grammar, next_token, next_sibling, draft_tokens, rows, vocab_size):
    """The speculative worker's grammar pass over one request's draft tree: depth first, a
    node is visited when its parent's row allows its token; visiting accepts the token, fills
    the node's row unless the grammar terminated, recurses into the children, rolls back."""
    def visit(node, parent):
        if node == 0:
            ok = True
        else:
            token = int(draft_tokens[node])
            ok = token < vocab_size and allowed(rows[parent], token)
        if ok:
            if node:
                grammar.accept_token(int(draft_tokens[node]))
            if not grammar.is_terminated():
                grammar.fill_vocab_mask(rows, node)
                if int(next_token[node]) != -1:
                    visit(int(next_token[node]), node)
            if node:
                grammar.rollback(1)
        if int(next_sibling[node]) != -1:
            visit(int(next_sibling[node]), parent)

    visit(0, -1)


def test_eagle_draft_tree_masks(backend, model):
    """Two requests, 6 draft nodes each, one (bs * num_draft) mask; each request's slice is a
    2-D view the matcher fills by node index."""
    targets = model.encode(PERSON_DOCS[0]) + [model.eos_id]
    grammars = [backend.dispatch_json(json.dumps(PERSON_SCHEMA)) for _ in range(2)]
    starts = [5, len(targets) - 3]  # the second request reaches the stop token in its tree
    for g, start in zip(grammars, starts):
        for token in targets[:start]:
            g.accept_token(token)
    num_draft = 6
    mask = Grammar.allocate_vocab_mask(model.vocab_size, 2 * num_draft, "cpu")
    bad = model.eos_id  # the stop token mid-document: refused
    trees = []
    for g, start in zip(grammars, starts):
        t = targets[start:] + [model.eos_id] * 3
        # 0 -> 1 (t0) -> 2 (t1) -> 3 (t2); 1 has a sibling 4 (refused); 2 has a sibling 5 (t1 again)
        next_token = torch.tensor([1, 2, 3, -1, -1, -1], dtype=torch.int64)
        next_sibling = torch.tensor([-1, 4, 5, -1, -1, -1], dtype=torch.int64)
        draft = torch.tensor([targets[start - 1], t[0], t[1], t[2], bad, t[1]], dtype=torch.int64)
        trees.append((next_token, next_sibling, draft))
    for i, (g, tree) in enumerate(zip(grammars, trees)):
        eagle_tree_mask(g, *tree, mask[i * num_draft:(i + 1) * num_draft], model.vocab_size)
    for i, (g, start) in enumerate(zip(grammars, starts)):
        assert g.accepted_tokens == targets[:start], "the tree walk did not roll back"
        rows = mask[i * num_draft:(i + 1) * num_draft]
        paths = {0: [], 1: trees[i][2][1:2], 2: trees[i][2][1:3], 3: trees[i][2][1:4],
                 5: trees[i][2][[1, 5]]}
        for node, path in paths.items():
            check = xgr.GrammarMatcher(g.ctx)
            assert all(check.accept_token(t) for t in targets[:start])
            if not all(check.accept_token(int(t)) for t in path) or check.is_terminated():
                assert bool((rows[node] == -1).all()), f"node {node} was filled"
                continue
            assert_row_is_reference(check, rows[node], model.n_words, f"request {i} node {node}")
        assert bool((rows[4] == -1).all()), "the refused node was filled"
    # verification accepts the longest valid path, plus the bonus token
    for g, start in zip(grammars, starts):
        for token in targets[start:start + 3]:
            g.accept_token(token)
    assert grammars[1].is_terminated()


def test_persistent_cache_round_trip(backend, model, tmp_path):
    """The cross-process cache: key by ``tokenizer_info.serialize_json()``, store
    ``compiled.serialize_json()``, load with ``CompiledGrammar.deserialize_json(text, info)``."""
    digest_source = backend.tokenizer_info.serialize_json()
    assert isinstance(digest_source, str) and digest_source
    compiled = backend.grammar_compiler.compile_json_schema(
        schema=json.dumps(PERSON_SCHEMA), any_whitespace=True
    )
    entry = tmp_path / "entry.json"
    entry.write_bytes(compiled.serialize_json().encode("utf-8"))
    loaded = xgr.CompiledGrammar.deserialize_json(entry.read_bytes().decode("utf-8"),
                                                  backend.tokenizer_info)
    a = xgr.GrammarMatcher(compiled, max_rollback_tokens=MAX_ROLLBACK_TOKENS)
    b = xgr.GrammarMatcher(loaded, max_rollback_tokens=MAX_ROLLBACK_TOKENS)
    mask = Grammar.allocate_vocab_mask(model.vocab_size, 2, "cpu")
    for token in model.encode(PERSON_DOCS[1]) + [model.eos_id]:
        a.fill_next_token_bitmask(mask, 0)
        b.fill_next_token_bitmask(mask, 1)
        assert torch.equal(mask[0], mask[1])
        assert a.accept_token(token) and b.accept_token(token)
    assert b.is_terminated()
    # a damaged entry is an error the cache surfaces (it catches Exception)
    text = entry.read_text()
    for bad in (text[: len(text) // 2], text.replace('"', "'", 3), ""):
        with pytest.raises(Exception):
            xgr.CompiledGrammar.deserialize_json(bad, backend.tokenizer_info)


def test_rollback_of_terminated_state(backend, model):
    """SGLang's own backend check: accept through the stop token, roll the stop token back."""
    grammar = backend.dispatch_regex(r"hello (world|there)")
    for token in model.encode("hello") + model.encode(" world") + [model.eos_id]:
        grammar.accept_token(token)
    assert grammar.is_terminated()
    grammar.rollback(1)
    assert not grammar.is_terminated()
    mask = grammar.allocate_vocab_mask(model.vocab_size, 1, "cpu")
    grammar.fill_vocab_mask(mask, 0)
    assert allowed(mask[0], model.eos_id)


def test_generation_root_rule_and_mask_words(backend, model):
    """The thinking-grammar wrapper compiles the same EBNF from another root rule and reads
    single words of a filled mask."""
    ebnf = 'root ::= "<think>" [a-z ]* "</think>" generation\ngeneration ::= "{" [0-9]+ "}"'
    full = backend.dispatch_ebnf(ebnf)
    generation = backend.dispatch_ebnf(ebnf, root_rule_name="generation")
    assert isinstance(full, Grammar) and isinstance(generation, Grammar)
    mask = generation.allocate_vocab_mask(model.vocab_size, 1, "cpu")
    generation.fill_vocab_mask(mask, 0)
    brace = model.first_token("{")
    word = int(mask[0, brace // 32])
    assert (word >> (brace % 32)) & 1
    for token in model.encode("{42}") + [model.eos_id]:
        generation.accept_token(token)
    assert generation.is_terminated()


def test_reset_clears_the_compiler_cache(model):
    backend = Backend(model)
    first = backend.dispatch_regex("[0-9]+").ctx
    assert backend.dispatch_regex("[0-9]+").ctx is first
    assert backend.grammar_compiler.get_cache_size_bytes() > 0
    backend.reset()
    assert backend.grammar_compiler.get_cache_size_bytes() == 0
    assert backend.dispatch_regex("[0-9]+").ctx is not first


# ---- structural tags -------------------------------------------------------------------------


def test_structural_tag_legacy(backend):
    key = {
        "structures": [{"begin": "<tool>", "schema": {"type": "object"}, "end": "</tool>"}],
        "triggers": ["<tool>"],
    }
    tags = [
        xgr.StructuralTagItem(begin=s["begin"], schema=json.dumps(s["schema"]), end=s["end"])
        for s in key["structures"]
    ]
    new_tag = xgr.StructuralTag.from_legacy_structural_tag(tags, key["triggers"])
    new_tag.format.at_least_one = False
    backend.grammar_compiler.compile_structural_tag(new_tag)


def test_structural_tag_format(backend):
    key = json.dumps({
        "type": "structural_tag",
        "format": {"type": "tag", "begin": "<a>", "content": {"type": "json_schema",
                                                               "json_schema": {}}, "end": "</a>"},
    })
    backend.grammar_compiler.compile_structural_tag(key)
