"""Token budgets over text: ``rule[max_tokens=n]`` on a rule that matches text and the
structural tag ``any_text`` with ``max_tokens``, on Llama-3 and Qwen2.5 (padded).

XGrammar 0.2.8's semantics: a budgeted rule may read at most ``n`` tokens after the token
during which it was entered (a rule entered at a token boundary was entered during the token
before it; the token that enters it does not count, its later bytes are free).  Every mask
must equal the slow reference; token verdicts must follow that rule (a pure-Python oracle) and
agree with XGrammar's, except where xmask is exact on purpose (README: a token after which the
rule could not end is masked where XGrammar relaxes the budget; budgets hold in accept_string).
"""

import json
import random

import numpy as np
import pytest
from stag_util import Tok, allowed

import xmask
from xmask.errors import GrammarError, InvalidStructuralTagError
from xmask.runtime._stack_gss import set_max_conflicts


@pytest.fixture(scope="module", params=["llama3", "qwen2.5"])
def tok(request):
    return Tok(request.param)


def _vocab(tok):
    special = set(tok.info.special_token_ids)
    out = {}
    for tid, b in enumerate(tok.info.decoded_vocab):
        if b and tid not in special:
            out.setdefault(bytes(b), tid)
    return out


def _pieces(tok, text, rnd):
    """``text`` cut at random into pieces that are each one token (longest first, 1-4 bytes)."""
    vocab, data, out, pos = _vocab(tok), text.encode(), [], 0
    while pos < len(data):
        for n in sorted(range(1, 5), key=lambda k: (rnd.random(), -k)):
            if pos + n <= len(data) and data[pos:pos + n] in vocab:
                out.append((pos, n, vocab[data[pos:pos + n]]))
                pos += n
                break
        else:
            raise AssertionError(f"no token for byte {data[pos]:#x}")
    return out


def _within_budget(pieces, begin, end, n):
    """The oracle: the rule spans bytes [begin, end); entered during the token holding byte
    begin - 1 (or before any token when begin == 0), it may read n more tokens."""
    enter = -1 if begin == 0 else next(i for i, (p, k, _) in enumerate(pieces) if p <= begin - 1 < p + k)
    if end == begin:
        return True
    last = next(i for i, (p, k, _) in enumerate(pieces) if p <= end - 1 < p + k)
    return last <= enter + n


def _verdict(compiled, ids):
    """Whether the matcher accepts ``ids`` and can end, each token allowed by the mask first."""
    m = xmask.GrammarMatcher(compiled)
    row = xmask.allocate_token_bitmask(1, compiled.tokenizer_info.vocab_size)
    for t in ids:
        m.fill_next_token_bitmask(row)
        ok = allowed(np.asarray(row)[0], t)
        if ok != m.accept_token(t):
            raise AssertionError("the mask and accept_token disagree")
        if not ok:
            return False
    return m.is_completed()


# ------------------------------------------------------------------------------- masks

def test_any_text_budget_in_tag_masks_equal_reference(tok):
    st = {"format": {"type": "sequence", "elements": [
        {"type": "tag", "begin": "<a>", "content": {"type": "any_text", "max_tokens": 4},
         "end": "</a>"}, {"type": "const_string", "value": "."}]}}
    compiled = tok.compiler.compile_structural_tag(st)
    text = tok.encode(" one two three")
    assert len(text) == 3
    ids = tok.encode("<a>") + text + tok.encode(" four") + tok.encode("</a>.")
    tok.walk(compiled, ids, tok.name)
    # after four tokens of text only the end of the tag may come
    m = xmask.GrammarMatcher(compiled)
    for t in tok.encode("<a>") + text + tok.encode(" four"):
        assert m.accept_token(t)
    fast, ref = tok.rows(m)
    assert (fast == ref).all()
    for t in np.nonzero(np.unpackbits(fast.view(np.uint8), bitorder="little"))[0].tolist():
        b = bytes(tok.info.decoded_vocab[t])
        assert "</a>.".encode().startswith(b), b
    assert not m.accept_token(tok.encode(" five")[0])
    assert m.accept_string("</a>.") and m.is_completed()


def test_ebnf_rule_budget_over_text(tok):
    compiled = tok.compiler.compile_grammar('root ::= "(" a ")"\na[max_tokens=3] ::= [a-z ]*')
    assert compiled.grammar.budgets == {"a": 3}
    assert tok.walk(compiled, tok.encode("(") + tok.encode("ab cd ef") + tok.encode(")"),
                    tok.name).is_completed()
    four = tok.encode("(") + tok.encode("ab cd ef gh") + tok.encode(")")
    assert len(four) == 6 and not _verdict(compiled, four)


def test_lark_rule_budget_is_the_ebnf_one(tok):
    compiled = tok.compiler.compile_lark('start: "(" a ")"\na[max_tokens=3]: /[a-z ]*/')
    assert compiled.grammar.budgets == {"a": 3}
    three = tok.encode("(") + tok.encode("ab cd ef") + tok.encode(")")
    assert tok.walk(compiled, three, tok.name).is_completed()
    assert not _verdict(compiled, tok.encode("(") + tok.encode("ab cd ef gh") + tok.encode(")"))


@pytest.mark.parametrize("n,body", [(1, "[a-z ]*"), (2, "[a-z ]*"), (3, "[a-z ]*"),
                                    (2, 'w*\nw ::= [a-z ] | "(" w* ")"')])
def test_budgets_ending_inside_tokens_follow_the_oracle(tok, n, body):
    # Random tokenizations: the entering token carries bytes of the rule, tokens cross out of
    # it; every verdict is the oracle's and every mask the reference's (a frame that calls
    # another rule takes the full walk at the budget's last token, the others the frame-local
    # check).
    compiled = tok.compiler.compile_grammar(f'root ::= "x=" a ";"\na[max_tokens={n}] ::= {body}')
    rnd = random.Random(n)
    text = "x=ab cd e;"
    begin, end = 2, len(text) - 1
    seen = set()
    for _ in range(40):
        pieces = _pieces(tok, text, rnd)
        ids = [t for _, _, t in pieces]
        if tuple(ids) in seen:
            continue
        seen.add(tuple(ids))
        expect = _within_budget(pieces, begin, end, n)
        assert _verdict(compiled, ids) == expect, ([tok.info.decoded_vocab[t] for t in ids], n)
        if expect and len(seen) % 4 == 1:
            tok.walk(compiled, ids, f"{tok.name} n={n}")
    assert len(seen) > 5


def test_root_and_nested_budgets_masks_equal_reference(tok):
    g = ('root ::= ("<" b ">")+\nb[max_tokens=3] ::= ([a-z] | c)*\n'
         'c[max_tokens=1] ::= "(" [a-z]*')
    compiled = tok.compiler.compile_grammar(g)
    ids = tok.encode("<") + tok.encode("ab(c") + tok.encode(">")
    old = set_max_conflicts(-1)  # every step through the merged (GSS) closure as well
    try:
        for _ in range(2):
            tok.walk(compiled, ids, tok.name)
            set_max_conflicts(old)
    finally:
        set_max_conflicts(old)
    root = tok.compiler.compile_grammar("root[max_tokens=2] ::= [a-z]*")
    assert tok.walk(root, tok.encode("ab") + tok.encode("cd"), tok.name).is_completed()
    assert not _verdict(root, tok.encode("ab") + tok.encode("cd") + tok.encode("ef"))


def _budget_end_rows(tok, compiled, prefix):
    m = xmask.GrammarMatcher(compiled)
    for t in prefix:
        assert m.accept_token(t)
    return tok.rows(m)


def test_budget_end_masks_are_memoized_per_state_and_follow_bytes(tok):
    # The mask of the last budgeted token is kept per grammar, keyed by the rule's state and
    # the bytes that may follow the rule (here "1" in one branch, "2" in the other): each
    # context gets its own memo, later matchers are answered from it, and every mask equals
    # the reference.
    compiled = tok.compiler.compile_grammar('root ::= "x" a "1" | "y" a "2"\na[max_tokens=2] ::= [a-z ]*')
    memory = lambda: compiled.cache_stats().memory["entry_payloads"]  # noqa: E731
    ab, one, two = tok.encode(" ab")[0], tok.encode("1")[0], tok.encode("2")[0]
    x, y = tok.encode("x")[0], tok.encode("y")[0]
    before = memory()
    fx, rx = _budget_end_rows(tok, compiled, [x, ab])
    grown = memory()
    assert (fx == rx).all() and allowed(fx, one) and not allowed(fx, two) and grown > before
    fy, ry = _budget_end_rows(tok, compiled, [y, ab])
    assert (fy == ry).all() and allowed(fy, two) and not allowed(fy, one)
    assert memory() > grown  # a second key
    settled = memory()
    for prefix in ([x, ab], [y, ab]):  # answered from the memo: same masks, nothing added
        fast, ref = _budget_end_rows(tok, compiled, prefix)
        assert (fast == ref).all()
    assert memory() == settled
    assert (_budget_end_rows(tok, compiled, [x, ab])[0] == fx).all()


def test_budget_end_memo_built_by_racing_threads(tok):
    import threading

    compiled = tok.compiler.compile_grammar('root ::= "(" a ")"\na[max_tokens=3] ::= [a-z ]*')
    prefix = tok.encode("(") + tok.encode(" ab cd")
    rows, errors = [], []

    def run():
        try:
            rows.append(_budget_end_rows(tok, compiled, prefix))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(rows) == 4
    for fast, ref in rows:
        assert (fast == ref).all() and (fast == rows[0][0]).all()


def test_rollback_and_fork_across_the_budget_boundary(tok):
    compiled = tok.compiler.compile_grammar('root ::= "." a "!"\na[max_tokens=2] ::= [a-z]*')
    ab, cd, ef, bang = (tok.encode(s)[0] for s in ("ab", "cd", "ef", "!"))
    m = xmask.GrammarMatcher(compiled)
    assert m.accept_token(tok.encode(".")[0]) and m.accept_token(ab)
    child = m.fork()
    assert m.accept_token(cd) and not m.accept_token(ef)
    fast, ref = tok.rows(m)
    assert (fast == ref).all() and not allowed(fast, ef) and allowed(fast, bang)
    m.rollback(1)  # back before the budget was spent
    fast, ref = tok.rows(m)
    assert (fast == ref).all() and allowed(fast, ef)
    assert m.accept_token(ef) and not m.accept_token(cd) and m.accept_token(bang)
    m.rollback(3)
    assert m.accept_token(cd) and m.accept_token(bang) and m.is_completed()
    # the fork kept its own budget: one more token of text, then only the end
    assert child.accept_token(ef)
    fast, ref = tok.rows(child)
    assert (fast == ref).all() and not allowed(fast, cd)
    assert child.accept_token(bang) and child.is_completed()


def test_batch_fill_and_draft_tree_see_the_budget(tok):
    compiled = tok.compiler.compile_grammar('root ::= "." a "!"\na[max_tokens=2] ::= [a-z]*')
    ids = [tok.encode(s)[0] for s in (".", "ab", "cd")]
    matchers = []
    for k in range(len(ids) + 1):
        m = xmask.GrammarMatcher(compiled)
        assert all(m.accept_token(t) for t in ids[:k])
        matchers.append(m)
    refs = np.stack([tok.rows(m)[1] for m in matchers])
    batch = np.zeros_like(refs)
    xmask.BatchGrammarMatcher(max_threads=2).batch_fill_next_token_bitmask(matchers, batch)
    assert (batch == refs).all()
    # a chain draft tree from the start: node i's row is the mask after ids[:i]
    rows = np.zeros_like(refs)
    n = len(ids) + 1
    nxt = np.array(list(range(1, n)) + [-1])
    assert xmask.GrammarMatcher(compiled).traverse_draft_tree(
        nxt, np.full(n, -1), np.array([0] + ids), rows)
    assert (rows == refs).all()


# ----------------------------------------------------------------- deliberate differences

def test_a_token_after_which_the_rule_cannot_end_is_masked(tok):
    # XGrammar allows "cd" and then relaxes the budget (a warning); xmask keeps the budget
    compiled = tok.compiler.compile_grammar('root ::= "." a "!"\na[max_tokens=2] ::= [a-z]{5,}')
    m = xmask.GrammarMatcher(compiled)
    assert m.accept_token(tok.encode(".")[0]) and m.accept_token(tok.encode("ab")[0])
    fast, ref = tok.rows(m)
    assert (fast == ref).all()
    assert not allowed(fast, tok.encode("cd")[0]) and allowed(fast, tok.encode("cdefg")[0]) \
        == (len(tok.encode("cdefg")) == 1)
    assert not m.accept_token(tok.encode("cd")[0])


def test_budgets_hold_in_accept_string(tok):
    compiled = tok.compiler.compile_grammar('root ::= "." a "!"\na[max_tokens=2] ::= [a-z]*')
    m = xmask.GrammarMatcher(compiled)
    for s in (".", "ab"):
        assert m.accept_token(tok.encode(s)[0])
    assert m.accept_string("cd")  # one token, as in XGrammar (its token index advances)
    assert not m.accept_string("ef") and not m.accept_token(tok.encode("ef")[0])
    assert m.accept_string("!") and m.is_completed()
    # an empty string counts too (XGrammar's token index advances)
    m = xmask.GrammarMatcher(compiled)
    for s in (".", "ab"):
        assert m.accept_token(tok.encode(s)[0])
    assert m.accept_string("") and not m.accept_token(tok.encode("cd")[0])
    assert m.accept_token(tok.encode("!")[0]) and m.is_completed()


# ------------------------------------------------------------------------- the surface

def test_printing_serialization_and_errors(tok):
    g = xmask.Grammar.from_ebnf('root ::= "(" a ")"\na[max_tokens=3] ::= [a-z ]*')
    assert "a[max_tokens=3] ::=" in str(g)
    assert xmask.Grammar.from_ebnf(str(g)) == g
    assert xmask.Grammar.deserialize_json(g.serialize_json()).budgets == {"a": 3}
    assert sorted(xmask.Grammar.concat(g, g).budgets.values()) == [3, 3]
    compiled = tok.compiler.compile_grammar(g)
    again = xmask.CompiledGrammar.deserialize_json(compiled.serialize_json(), tok.info)
    ids = tok.encode("(") + tok.encode("ab cd ef") + tok.encode(")")
    assert _verdict(again, ids) and not _verdict(again, ids[:-1] + tok.encode("gh") + ids[-1:])
    with pytest.raises(GrammarError, match="max_tokens=0"):
        xmask.Grammar.from_ebnf('root ::= a\na[max_tokens=0] ::= [a-z]*')
    with pytest.raises(GrammarError, match="runtime token budget"):
        xmask.Grammar.from_ebnf('root[max_chars=9] ::= a\na[max_tokens=2] ::= [a-z]*')
    with pytest.raises(InvalidStructuralTagError, match="max_tokens"):
        tok.compiler.compile_structural_tag({"format": {"type": "any_text", "max_tokens": 0}})
    # a budget of at most n bytes never binds (a token counts only if it starts inside): no
    # runtime budget; whole-token rules are still lowered statically
    assert xmask.Grammar.from_ebnf('root ::= a\na[max_tokens=3] ::= "abc"').budgets == {}


# ------------------------------------------------------------------------- vs XGrammar

XG_CASES = [
    ('root ::= "." a "A" | "." a "A" "." a "A"\na[max_tokens=2] ::= [a-z]*',
     [".", "ab", "cd", "A", ".st", "a", ".A", ".in"]),
    ('root ::= ("<" b ">")+\nb[max_tokens=3] ::= ([a-z] | c)*\nc[max_tokens=1] ::= "(" [a-z]*',
     ["<", ">", "ab", "(", ")<", "(a", "cd", "><", "a", "()"]),
    (json.dumps({"type": "structural_tag", "format": {"type": "triggered_tags", "triggers": ["<a>"],
     "tags": [{"type": "tag", "begin": "<a>", "content": {"type": "any_text", "max_tokens": 2},
               "end": "</a>"}]}}), ["<a>", "</a>", "ab", " x", "</", "a", ">", "<", "\n"]),
]


_XGR_COMPILERS = {}


@pytest.mark.parametrize("case", range(len(XG_CASES)))
def test_agrees_with_xgrammar(tok, case):
    xgr = pytest.importorskip("xgrammar")
    source, alphabet = XG_CASES[case]
    vocab = _vocab(tok)
    letters = [vocab[a.encode()] for a in alphabet if a.encode() in vocab]
    if tok.name not in _XGR_COMPILERS:
        xinfo = xgr.TokenizerInfo.from_huggingface(
            _hf(tok), vocab_size=tok.info.vocab_size, stop_token_ids=list(tok.info.stop_token_ids))
        _XGR_COMPILERS[tok.name] = xgr.GrammarCompiler(xinfo)
    xcomp = _XGR_COMPILERS[tok.name]
    structural = source.startswith("{")
    xcg = xcomp.compile_structural_tag(source) if structural else xcomp.compile_grammar(source)
    mcg = (tok.compiler.compile_structural_tag(source) if structural
           else tok.compiler.compile_grammar(source))
    rnd = random.Random(case)
    xrow = xgr.allocate_token_bitmask(1, tok.info.vocab_size)
    for _ in range(80):
        ids = [rnd.choice(letters) for _ in range(rnd.randint(1, 9))]
        xm = xgr.GrammarMatcher(xcg)
        mine = []
        theirs = []
        for t in ids:
            xm.fill_next_token_bitmask(xrow)
            ok = bool((int(xrow[0, t >> 5]) >> (t & 31)) & 1) and xm.accept_token(t)
            theirs.append(ok)
            if not ok:
                break
        for k in range(len(theirs)):
            mine.append(_prefix_ok(mcg, ids[:k + 1]))
        assert mine == theirs, [tok.info.decoded_vocab[t] for t in ids]


def _prefix_ok(compiled, ids):
    m = xmask.GrammarMatcher(compiled)
    return all(m.accept_token(t) for t in ids)


def _hf(tok):
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(tokenizer_object=tok.tokenizer)
