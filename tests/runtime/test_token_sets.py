"""Whole-token grammar elements (TokenSet: XGrammar's Token(...) / ExcludeToken(...)) end to end:
masks equal the slow reference at every step on real tokenizers (Llama-3; Qwen2.5 with its padded
151,936-id mask), and an independent oracle (the pure-Python Earley recognizer, which shares no
code with the compiler or runtime) agrees on a few grammars."""

import pickle

import numpy as np
import pytest
from conftest import tokenizer_json
from maskutil import diff_ids

import xmask
from xmask.errors import InvalidTokenError
from xmask.grammar.ir import Bytes, CharClass, Choice, Repeat, RuleRef, Seq, TokenSet
from xmask import Grammar
from xmask.grammar.recognizer import Recognizer
from xmask.tokenizer.token_lookup import resolve_token

PYTHON_TAG = 128010  # Llama-3 <|python_tag|>
LETTERS = CharClass(((ord("a"), ord("z")),))


class Vocab:
    def __init__(self, name, vocab_size):
        self.info = xmask.TokenizerInfo.from_huggingface(str(tokenizer_json(name)),
                                                         vocab_size=vocab_size)
        self.compiler = xmask.GrammarCompiler(self.info)
        self.n_words = (self.info.vocab_size + 31) // 32
        self.by_bytes = {}
        special = set(self.info.special_token_ids)
        for tid, b in enumerate(self.info.decoded_vocab):
            if b and tid not in special:
                self.by_bytes.setdefault(b, tid)

    def tid(self, text):
        return self.by_bytes[text.encode()]

    def compile(self, rules, root="root"):
        return self.compiler.compile_grammar(Grammar(rules, root))


@pytest.fixture(scope="module")
def llama():
    return Vocab("llama3", 128256)


@pytest.fixture(scope="module")
def qwen():
    return Vocab("qwen2.5", 151936)


def rows(m, n_words):
    fast = np.full((1, n_words), 0x5A5A5A5A, dtype=np.int32)
    ref = np.full((1, n_words), 0x3C3C3C3C, dtype=np.int32)
    m.fill_next_token_bitmask(fast)
    m._reference_fill_next_token_bitmask(ref)
    return fast, ref


def allowed(m, n_words):
    """The fast mask as a set of ids, after checking it equals the slow reference."""
    fast, ref = rows(m, n_words)
    assert diff_ids(fast, ref) == []
    bits = np.unpackbits(fast[0].view(np.uint32).view(np.uint8), bitorder="little")
    return set(np.nonzero(bits)[0].tolist())


def step(m, item):
    return m.accept_token(item) if isinstance(item, int) else m.accept_string(item)


def walk(v, compiled, items):
    """Accept items (int = token id, str = text) one by one, checking the mask before each and
    at the end; returns the matcher and the allowed sets seen."""
    m = xmask.GrammarMatcher(compiled)
    seen = []
    for item in items:
        seen.append(allowed(m, v.n_words))
        assert step(m, item), item
    seen.append(allowed(m, v.n_words))
    return m, seen


def mixed(v):
    # root ::= "x" Token(128010) "{" [a-z]+ "}"
    return v.compile({"root": Seq((Bytes(b"x"), TokenSet((PYTHON_TAG,)), Bytes(b"{"),
                                   Repeat(LETTERS, 1, None), Bytes(b"}")))})


def test_bytes_then_token_then_bytes(llama):
    stops = set(llama.info.stop_token_ids)
    m, seen = walk(llama, mixed(llama), ["x", PYTHON_TAG, "{", llama.tid("ab"), "cd", "}"])
    assert seen[1] == {PYTHON_TAG}  # only the named special token
    assert PYTHON_TAG not in seen[0] and PYTHON_TAG not in seen[2]
    assert llama.tid("{") in seen[2] and llama.tid("x") not in seen[2]
    assert seen[-1] == stops
    assert m.is_completed() and not m.accept_token(PYTHON_TAG)
    assert m.accept_token(sorted(stops)[0]) and m.is_terminated()
    # the byte text of the special token is not the token
    m2 = xmask.GrammarMatcher(mixed(llama))
    assert m2.accept_string("x") and not m2.accept_string("<|python_tag|>")


def test_token_named_and_reachable_bytewise_gets_the_union(llama):
    b = llama.tid("b")
    # root ::= "a" (Token(b) "1" | "b" "2"): token "b" both by its bytes and by name
    compiled = llama.compile({"root": Seq((Bytes(b"a"), Choice((
        Seq((TokenSet((b,)), Bytes(b"1"))), Bytes(b"b2")))))})
    m, seen = walk(llama, compiled, ["a", b])
    assert b in seen[1]
    assert {llama.tid("1"), llama.tid("2")} <= seen[2]
    assert m.accept_string("1") and m.is_completed()
    m.rollback(1)
    assert m.accept_string("2") and m.is_completed()
    m.rollback(2)  # one history entry per token: back before the union step
    assert allowed(m, llama.n_words) == seen[1]


def test_exclude_token_llama(llama):
    stops = llama.info.stop_token_ids
    compiled = llama.compile({"root": Seq((Bytes(b"<"), TokenSet((5, 6), negated=True),
                                           Bytes(b">")))})
    m, seen = walk(llama, compiled, ["<", 128000, ">"])
    a = seen[1]
    assert 5 not in a and 6 not in a and not a & set(stops)
    assert {PYTHON_TAG, 128000, 7, llama.tid(">")} <= a
    assert len(a) == llama.info.vocab_size - 2 - len(stops)
    m2 = xmask.GrammarMatcher(compiled)
    assert m2.accept_string("<") and not m2.accept_token(5) and not m2.accept_token(stops[0])


def test_qwen_tool_call_tokens_and_padding(qwen):
    open_id = resolve_token(qwen.info, "<tool_call>")
    close_id = resolve_token(qwen.info, "</tool_call>")
    assert (open_id, close_id) == (151657, 151658)
    compiled = qwen.compile({"root": Seq((
        Repeat(CharClass(((ord(" "), ord(" ")), (ord("a"), ord("z")))), 0, None),
        TokenSet((open_id,)), Bytes(b"{"), Repeat(LETTERS, 1, None), Bytes(b"}"),
        TokenSet((close_id,))))})
    m, seen = walk(qwen, compiled, ["hi there", open_id, "{ab}", close_id])
    assert open_id in seen[0] and close_id not in seen[0]
    assert seen[3] == {close_id} and seen[-1] == set(qwen.info.stop_token_ids)
    # ExcludeToken never allows padding ids (past the tokenizer) nor stop tokens
    m = xmask.GrammarMatcher(qwen.compile({"root": TokenSet((open_id,), negated=True)}))
    a = allowed(m, qwen.n_words)
    assert max(a) < 151665 and open_id not in a and close_id in a
    assert not a & set(qwen.info.stop_token_ids)
    assert not m.accept_token(151700) and m.accept_token(close_id) and m.is_completed()


def test_token_set_in_repeat_and_at_the_end(llama):
    stops = set(llama.info.stop_token_ids)
    # root ::= "a" (Token(128010) | Token(128000))* ; stop tokens only where it may end
    compiled = llama.compile({"root": Seq((Bytes(b"a"), Repeat(
        Choice((TokenSet((PYTHON_TAG,)), TokenSet((128000,)))), 0, None)))})
    m, seen = walk(llama, compiled, ["a", PYTHON_TAG, 128000, PYTHON_TAG])
    for s in seen[1:]:
        assert s == {PYTHON_TAG, 128000} | stops
    assert m.accept_token(min(stops)) and m.is_terminated()
    with pytest.raises(xmask.XmaskError):
        m.fill_next_token_bitmask(np.zeros((1, llama.n_words), dtype=np.int32))
    m.rollback(1)
    assert allowed(m, llama.n_words) == seen[-1]


def test_token_edge_with_terminate_without_stop_token(llama):
    compiled = llama.compile({"root": Seq((Bytes(b"a"), TokenSet((PYTHON_TAG,))))})
    m = xmask.GrammarMatcher(compiled, terminate_without_stop_token=True)
    assert m.accept_string("a") and not m.is_terminated()
    assert m.accept_token(PYTHON_TAG) and m.is_terminated()


def test_stop_token_is_never_a_token_element(llama):
    eos = llama.info.stop_token_ids[-1]
    compiled = llama.compile({"root": Choice((Bytes(b"a"), TokenSet((eos,))))})
    m = xmask.GrammarMatcher(compiled)
    assert allowed(m, llama.n_words) == {llama.tid("a")}
    assert not m.accept_token(eos)  # as XGrammar: Token(<stop>) matches nothing


def test_rollback_fork_and_reset_across_token_steps(llama):
    compiled = mixed(llama)
    items = ["x", PYTHON_TAG, "{", "ab", "c"]
    m, seen = walk(llama, compiled, items)
    child = m.fork()
    for back in range(len(items), 0, -1):
        m.rollback(1)
        assert allowed(m, llama.n_words) == seen[back - 1]
    assert allowed(child, llama.n_words) == seen[-1]
    assert child.accept_string("}") and child.is_completed()
    child.rollback(5)  # to just after "x": the token step again
    assert allowed(child, llama.n_words) == {PYTHON_TAG}
    assert child.accept_token(PYTHON_TAG)
    child.reset()
    assert allowed(child, llama.n_words) == seen[0]


def test_batch_fill_equals_single_fills(llama):
    compiled = mixed(llama)
    prefixes = [[], ["x"], ["x", PYTHON_TAG], ["x", PYTHON_TAG, "{a"], ["x", PYTHON_TAG, "{a}"]]
    ms = []
    for p in prefixes:
        m = xmask.GrammarMatcher(compiled)
        for item in p:
            assert step(m, item)
        ms.append(m)
    batch = np.zeros((len(ms), llama.n_words), dtype=np.int32)
    xmask.BatchGrammarMatcher(max_threads=2).batch_fill_next_token_bitmask(ms, batch)
    for i, m in enumerate(ms):
        fast, ref = rows(m, llama.n_words)
        assert diff_ids(batch[i:i + 1], ref) == []
    assert xmask.BatchGrammarMatcher.batch_accept_token(ms[1:3], [PYTHON_TAG, PYTHON_TAG]) == [
        True, False]


def test_draft_tree_through_a_token_edge(llama):
    compiled = mixed(llama)
    m = xmask.GrammarMatcher(compiled)
    assert m.accept_string("x")
    brace, a = llama.tid("{"), llama.tid("a")
    # root (current) -> <|python_tag|> -> "{" -> "a"; a sibling "{" of the token is not allowed
    nxt, sib = [1, 3, -1, 4, -1], [-1, 2, -1, -1, -1]
    tok = [0, PYTHON_TAG, brace, brace, a]
    tree = np.zeros((5, llama.n_words), dtype=np.int32)
    assert m.traverse_draft_tree(nxt, sib, tok, tree)
    expect = []
    probe = xmask.GrammarMatcher(compiled)
    for path in (["x"], ["x", PYTHON_TAG], None, ["x", PYTHON_TAG, brace],
                 ["x", PYTHON_TAG, brace, a]):
        if path is None:
            expect.append(np.zeros((1, llama.n_words), dtype=np.int32))
            continue
        probe.reset()
        for item in path:
            assert step(probe, item)
        expect.append(rows(probe, llama.n_words)[1])
    for i in range(5):
        assert diff_ids(tree[i:i + 1], expect[i]) == [], i
    assert m.num_accepted_tokens == 1


def test_jump_forward_stops_at_a_token_edge(llama):
    compiled = llama.compile({"root": Seq((Bytes(b"abc"), TokenSet((PYTHON_TAG,)),
                                           Bytes(b"def")))})
    m = xmask.GrammarMatcher(compiled)
    assert m.find_jump_forward_string() == "abc"
    assert m.accept_string("abc") and m.find_jump_forward_string() == ""
    assert m.accept_token(PYTHON_TAG) and m.find_jump_forward_string() == "def"


def test_exact_fill_near_the_recursion_bound(llama):
    # a recursive rule keeps the stack deep; near the bound every token is checked exactly
    compiled = llama.compile({
        "root": RuleRef("nest"),
        "nest": Choice((Seq((Bytes(b"("), RuleRef("nest"), Bytes(b")"))),
                        TokenSet((PYTHON_TAG,)))),
    })
    with xmask.max_recursion_depth(6):
        m = xmask.GrammarMatcher(compiled)
        for _ in range(4):
            assert PYTHON_TAG in allowed(m, llama.n_words)
            assert m.accept_string("(")
        assert m.accept_token(PYTHON_TAG)
        a = allowed(m, llama.n_words)  # equals the reference (checked inside)
        assert llama.tid(")") in a and llama.tid("))))") in a and PYTHON_TAG not in a
        assert llama.tid("(") not in a


def test_serialization_round_trip_and_precompute(llama):
    compiled = mixed(llama)
    again = xmask.CompiledGrammar.deserialize_json(compiled.serialize_json(), llama.info)
    for c in (again, pickle.loads(pickle.dumps(compiled)),
              xmask.GrammarCompiler(llama.info, precompute=True).compile_grammar(
                  compiled.grammar)):
        m, seen = walk(llama, c, ["x", PYTHON_TAG, "{ab}"])
        assert seen[1] == {PYTHON_TAG}
    assert xmask.Grammar.deserialize_json(compiled.grammar.serialize_json()) == compiled.grammar


def test_bad_token_id_is_a_clear_error(llama):
    with pytest.raises(InvalidTokenError, match=r"token id 128256 in rule 'item'.*\[0, 128256\)"):
        llama.compile({"root": Seq((Bytes(b"a"), RuleRef("item"))),
                       "item": TokenSet((1, 128256))})
    with pytest.raises(ValueError):
        TokenSet((-1,))


def test_empty_vocabulary():
    info = xmask.TokenizerInfo([])
    assert info.vocab_size == 0
    compiled = xmask.GrammarCompiler(info).compile_grammar('root ::= "ab" [a-z]*')
    m = xmask.GrammarMatcher(compiled)
    assert m.find_jump_forward_string() == "ab"
    assert m.accept_string("ab") and m.accept_string("cd") and m.is_completed()
    bitmask = xmask.allocate_token_bitmask(1, 0)
    assert tuple(bitmask.shape) == (1, 0)
    assert m.fill_next_token_bitmask(bitmask)
    assert m._reference_fill_next_token_bitmask(np.zeros((1, 0), dtype=np.int32))
    with pytest.raises(InvalidTokenError):
        m.accept_token(0)
    again = xmask.CompiledGrammar.deserialize_json(compiled.serialize_json(), info)
    assert xmask.GrammarMatcher(again).accept_string("abz")
    assert xmask.TokenizerInfo.deserialize_json(info.serialize_json()).vocab_size == 0
    with pytest.raises(InvalidTokenError, match="token id 0"):
        xmask.GrammarCompiler(info).compile_grammar(Grammar({"root": TokenSet((0,))}))


def test_resolve_token(llama):
    assert resolve_token(llama.info, "<|python_tag|>") == PYTHON_TAG
    assert resolve_token(llama.info, " hello") == 24748  # decoded text, as XGrammar
    assert resolve_token(llama.info, "<|eot_id|>") == 128009
    assert resolve_token(llama.info, np.int64(7)) == 7
    with pytest.raises(InvalidTokenError, match=r"'Ġhello' \(at tags\[1\]\.begin\)"):
        resolve_token(llama.info, "Ġhello", where="tags[1].begin")
    with pytest.raises(InvalidTokenError, match="128256"):
        resolve_token(llama.info, 128256)
    with pytest.raises(InvalidTokenError):
        resolve_token(llama.info, True)


# ---- independent oracle: the Earley recognizer over mixed byte / token sequences -----------


def oracle_allowed(v, rec, states):
    """Every token the grammar allows after any of ``states``, from the recognizer alone: a
    grammar token whose bytes it reads, or any id (not a stop, not empty) a TokenSet element
    takes; stop tokens where it can end."""
    info = v.info
    special = set(info.special_token_ids)
    stops = set(info.stop_token_ids)
    out = set()
    for state in states:
        first = set(rec.allowed_bytes(state))
        for tid, b in enumerate(info.decoded_vocab):
            if not b or tid in stops or tid in out:
                continue
            if tid not in special and b[0] in first and rec.run(b, state) is not None:
                out.add(tid)
            elif rec.step_token(state, tid) is not None:
                out.add(tid)
        if rec.can_end(state):
            out |= stops
    return out


def oracle_step(v, rec, states, item):
    """The recognizer states after ``item`` (a token id: by its bytes and as a whole token)."""
    out = []
    for state in states:
        if isinstance(item, int):
            if item not in set(v.info.special_token_ids):
                out.append(rec.run(v.info.decoded_vocab[item], state))
            out.append(rec.step_token(state, item))
        else:
            out.append(rec.run(item.encode(), state))
    return [s for s in out if s is not None]


ORACLE_GRAMMARS = [
    ({"root": Seq((Bytes(b"x"), TokenSet((PYTHON_TAG,)), Bytes(b"{"), Repeat(LETTERS, 1, 3),
                   Bytes(b"}")))}, ["x", PYTHON_TAG, "{", "ab", "}"]),
    # token 65 is "b": both by its bytes and by name (the union)
    ({"root": Seq((Bytes(b"a"), Choice((Seq((TokenSet((65,)), Bytes(b"1"))), Bytes(b"b2")))))},
     ["a", 65, "1"]),
    ({"root": Seq((Repeat(Choice((TokenSet((128000, PYTHON_TAG)), Bytes(b"q"))), 1, None),
                   Bytes(b"!")))}, [PYTHON_TAG, "q", 128000, "!"]),
    ({"root": Seq((Bytes(b"<"), TokenSet((5, 6), negated=True), Bytes(b">")))},
     ["<", 128000, ">"]),
]


@pytest.mark.parametrize("case", range(len(ORACLE_GRAMMARS)))
def test_masks_equal_the_earley_oracle(llama, case):
    rules, items = ORACLE_GRAMMARS[case]
    rec = Recognizer(Grammar(rules))
    m = xmask.GrammarMatcher(llama.compile(rules))
    states = [rec.initial()]
    for item in items + [None]:
        assert allowed(m, llama.n_words) == oracle_allowed(llama, rec, states)
        if item is None:
            break
        assert step(m, item)
        states = oracle_step(llama, rec, states, item)
        assert states
    assert llama.info.decoded_vocab[65] == b"b"


# ---- XGrammar on the same tokenizer (skipped without it) --------------------------------------
# XGrammar 0.2.8 gave exactly xmask's masks here. 0.2.9 allows more, in two ways the README lists
# as deliberate differences: one token may straddle text and a token element, read by its
# bytes ("</" where the grammar is "<" ExcludeToken(...)), and a stop token may be a token
# element after which the grammar can end. Every extra id must be one of those; xmask may never allow an id XGrammar
# rejects.


XGR_CASES = [
    (ORACLE_GRAMMARS[0][0], ["x", PYTHON_TAG, "{", "ab", "}"]),
    (ORACLE_GRAMMARS[1][0], ["a", 65, "1"]),
    (ORACLE_GRAMMARS[3][0], ["<", 128000, ">"]),
    ({"root": Seq((Bytes(b"a"), Repeat(Choice((TokenSet((PYTHON_TAG,)), TokenSet((128000,)))),
                                       0, None)))}, ["a", PYTHON_TAG, 128000]),
    ({"root": Seq((Bytes(b"a"), Choice((Bytes(b"b"), TokenSet((128009, 7))))))}, ["a", 7]),
]


def ids_of(row, vocab_size):
    bits = np.unpackbits(np.asarray(row)[0].view(np.uint32).view(np.uint8), bitorder="little")
    return set(np.nonzero(bits[:vocab_size])[0].tolist())


def allowed_ids(m, info):
    """The ids the fast mask allows (the callers' steps are checked against the reference)."""
    row = np.zeros((1, (info.vocab_size + 31) // 32), dtype=np.int32)
    m.fill_next_token_bitmask(row)
    return ids_of(row, info.vocab_size)


def straddles_a_token_element(m, info, tid, at_element):
    """Some proper prefix ``p`` of the token's bytes is accepted as text and leaves the matcher
    at a whole-token element: there it allows a token only as a whole token, not by its bytes.
    (XGrammar 0.2.9 then lets the rest of the token be anything: in "<" ExcludeToken(5, 6)
    ">" it allows every token that starts with "<", "<'" too, 6 being "'".) ``at_element``
    memoizes the answer per ``p``."""
    data = bytes(info.decoded_vocab[tid])
    for k in range(1, len(data)):
        p = data[:k]
        if p not in at_element:
            f = m.fork()
            at_element[p] = f.accept_string(p) and any(
                not f.fork().accept_string(bytes(info.decoded_vocab[u]))
                for u in sorted(allowed_ids(f, info))
                if info.decoded_vocab[u])
        if at_element[p]:
            return True
    return False


def ends_after_one_token_element(m, info, allowed):
    """Some token allowed only as a whole token (not by its bytes) completes the grammar."""
    for u in sorted(allowed):
        if info.decoded_vocab[u] and not m.fork().accept_string(bytes(info.decoded_vocab[u])):
            f = m.fork()
            if f.accept_token(u) and f.is_completed():
                return True
    return False


def unexplained_xgrammar_extras(m, info, ours, theirs):
    extra = theirs - ours
    stop = set(info.stop_token_ids)
    memo: dict = {}
    ends = extra & stop and ends_after_one_token_element(m, info, ours)
    return sorted(t for t in extra if not (t in stop and ends)
                  and not (t not in stop and straddles_a_token_element(m, info, t, memo)))


@pytest.mark.parametrize("case", range(len(XGR_CASES)))
def test_masks_equal_xgrammar(llama, case):
    xgr = pytest.importorskip("xgrammar")
    rules, items = XGR_CASES[case]
    grammar = Grammar(rules)
    info = llama.info
    xinfo = xgr.TokenizerInfo(list(info.decoded_vocab),
                              vocab_size=info.vocab_size, stop_token_ids=info.stop_token_ids)
    # XGrammar reads the EBNF xmask prints (Token(...) / ExcludeToken(...))
    xm = xgr.GrammarMatcher(xgr.GrammarCompiler(xinfo, cache_enabled=False).compile_grammar(
        xgr.Grammar.from_ebnf(str(grammar))))
    m = xmask.GrammarMatcher(llama.compile(rules))
    for item in items + [None]:
        xbm = xgr.allocate_token_bitmask(1, info.vocab_size)
        xm.fill_next_token_bitmask(xbm)
        fast, ref = rows(m, llama.n_words)
        assert diff_ids(fast, ref) == []
        ours, theirs = ids_of(fast, info.vocab_size), ids_of(xbm, info.vocab_size)
        assert ours <= theirs, (item, sorted(ours - theirs)[:10])
        assert unexplained_xgrammar_extras(m, info, ours, theirs) == [], item
        if item is None:
            break
        assert step(m, item)
        if isinstance(item, int):
            assert xm.accept_token(item)
        else:
            assert xm.accept_string(item)


def test_xgrammar_extras_are_recognised(llama):
    # the check above is not vacuous: only a token into a token element, and a stop token where
    # one more token element can end the grammar, are explained
    slash, stop = llama.tid("</"), llama.info.stop_token_ids[0]

    def unexplained(m, fake):
        ours = ids_of(rows(m, llama.n_words)[0], llama.info.vocab_size)
        return unexplained_xgrammar_extras(m, llama.info, ours, ours | fake)

    text = xmask.GrammarMatcher(llama.compile({"root": Seq((Bytes(b"<"), Bytes(b"a")))}))
    assert unexplained(text, {slash, stop}) == sorted({slash, stop})  # "<a" ends it, as text
    element = xmask.GrammarMatcher(llama.compile(
        {"root": Seq((Bytes(b"<"), TokenSet((5, 6), negated=True)))}))
    assert unexplained(element, {slash, stop}) == [stop]  # two tokens at least
    assert element.accept_string("<")
    assert unexplained(element, {stop}) == []


@pytest.mark.parametrize("name,vocab_size", [("llama2", None), ("phi3-mini", 32064)])
def test_exclude_token_universe_equals_xgrammar(name, vocab_size):
    # which ids a token element may match (no stop, empty or padding id; special tokens yes)
    # on a byte-fallback vocabulary and a padded one; all seven shared tokenizers agreed with
    # XGrammar 0.2.8 (0.2.9 also allows a stop token where the grammar ends after it)
    xgr = pytest.importorskip("xgrammar")
    transformers = pytest.importorskip("transformers")
    tok = transformers.PreTrainedTokenizerFast(tokenizer_file=str(tokenizer_json(name)))
    info = xmask.TokenizerInfo.from_huggingface(tok, vocab_size=vocab_size)
    xinfo = xgr.TokenizerInfo.from_huggingface(tok, vocab_size=info.vocab_size,
                                               stop_token_ids=info.stop_token_ids)
    n_words = (info.vocab_size + 31) // 32
    m = xmask.GrammarMatcher(xmask.GrammarCompiler(info).compile_grammar(
        Grammar({"root": TokenSet((0,), negated=True)})))
    xm = xgr.GrammarMatcher(xgr.GrammarCompiler(xinfo).compile_grammar("root ::= ExcludeToken(0)"))
    xbm = xgr.allocate_token_bitmask(1, info.vocab_size)
    xm.fill_next_token_bitmask(xbm)
    fast, _ = rows(m, n_words)
    ours, theirs = ids_of(fast, info.vocab_size), ids_of(xbm, info.vocab_size)
    assert ours <= theirs and theirs - ours <= set(info.stop_token_ids)
    assert unexplained_xgrammar_extras(m, info, ours, theirs) == []


def test_ebnf_text_with_token_elements(llama):
    # the EBNF spelling XGrammar prints (read by xmask's EBNF parser) compiles to the same masks
    compiled = llama.compiler.compile_grammar(
        'root ::= "x" Token(128010) "{" [a-z]+ "}" | "y" ExcludeToken(5, 6)')
    m, seen = walk(llama, compiled, ["x", PYTHON_TAG, "{ab}"])
    assert seen[1] == {PYTHON_TAG}
    m = xmask.GrammarMatcher(compiled)
    assert m.accept_string("y") and not m.accept_token(5) and m.accept_token(128000)
    assert m.is_completed()
