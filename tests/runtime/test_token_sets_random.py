"""Random grammars mixing bytes and whole tokens on a small vocabulary (special, stop, empty and
padding ids included): at every step of random walks the fast mask, the slow reference and the
independent Earley oracle (xmask.grammar.recognizer, no shared code with the runtime) agree, and
rollback / fork give the masks of a replay.  Seeded, so failures reproduce."""

import random

import numpy as np
import pytest
from maskutil import diff_ids

import xmask
from xmask.errors import GrammarError
from xmask.grammar.combine import map_leaves
from xmask.grammar.ir import Bytes, CharClass, Choice, Grammar, Repeat, RuleRef, Seq, TokenSet
from xmask.grammar.recognizer import Recognizer

VOCAB = ["a", "b", "c", "ab", "bc", "abc", "ca", "cab", "<x>", "<y>", "", "</s>", "ba", "cc"]
SPECIAL = [8, 9]  # <x>, <y>: added tokens, never text
STOP = 11
VOCAB_SIZE = len(VOCAB) + 4  # padding ids past the tokenizer


@pytest.fixture(scope="module")
def small():
    info = xmask.TokenizerInfo(VOCAB, vocab_size=VOCAB_SIZE, stop_token_ids=[STOP],
                               special_token_ids=SPECIAL)
    return info, xmask.GrammarCompiler(info, cache_enabled=False)


def random_expr(rng, depth, callees):
    kind = rng.choice(["bytes", "class", "token", "token", "seq", "choice", "repeat", "ref"]
                      if depth > 0 else ["bytes", "class", "token"])
    if kind == "bytes":
        return Bytes(rng.choice([b"a", b"b", b"c", b"ab", b"ca"]))
    if kind == "class":
        lo = rng.choice("abc")
        return CharClass(((ord(lo), ord(rng.choice([c for c in "abc" if c >= lo]))),))
    if kind == "token":
        ids = rng.sample(range(VOCAB_SIZE), rng.randint(1, 3))
        return TokenSet(ids, negated=rng.random() < 0.25)
    if kind == "ref" and callees:
        return RuleRef(rng.choice(callees))
    if kind == "repeat":
        lo = rng.randint(0, 1)
        return Repeat(random_expr(rng, depth - 1, callees), lo,
                      rng.choice([None, lo + 1, lo + 2]))
    items = tuple(random_expr(rng, depth - 1, callees) for _ in range(rng.randint(2, 3)))
    return Seq(items) if kind != "choice" else Choice(items)


def random_grammar(rng):
    names = ["root", "r1", "r2"]
    rules = {}
    for i, name in enumerate(names):
        rules[name] = random_expr(rng, 3, names[i + 1:])  # acyclic: no left recursion
    if rng.random() < 0.3:  # a right-recursive rule
        rules["r2"] = Choice((Seq((TokenSet((8,)), RuleRef("r2"))), Bytes(b"c")))
    return Grammar(rules)


def universe(info):
    return [t for t, b in enumerate(info.decoded_vocab) if b and t not in info.stop_token_ids]


def oracle_grammar(info, grammar):
    """``grammar`` with each token set spelled out over the ids a token element may match
    (not a stop, not empty or padding), so the recognizer sees empty sets as dead ends."""
    ok = set(universe(info))
    return Grammar({name: map_leaves(e, lambda x: TokenSet(
        [t for t in ok if (t in x.ids) != x.negated]) if type(x) is TokenSet else x)
        for name, e in grammar.rules.items()})


def oracle(info, rec, states):
    special = set(info.special_token_ids)
    out = set()
    for st in states:
        for t in universe(info):
            b = info.decoded_vocab[t]
            if (t not in special and rec.run(b, st) is not None) or rec.step_token(st, t):
                out.add(t)
        if rec.can_end(st):
            out.add(STOP)
    return out


def oracle_step(info, rec, states, t):
    out = []
    for st in states:
        if t not in set(info.special_token_ids):
            out.append(rec.run(info.decoded_vocab[t], st))
        out.append(rec.step_token(st, t))
    return [s for s in out if s is not None]


def masks(m, n_words):
    fast = np.full((1, n_words), 0x5A5A5A5A, dtype=np.int32)
    ref = np.full((1, n_words), 0x3C3C3C3C, dtype=np.int32)
    m.fill_next_token_bitmask(fast)
    m._reference_fill_next_token_bitmask(ref)
    assert diff_ids(fast, ref) == []
    bits = np.unpackbits(fast[0].view(np.uint32).view(np.uint8), bitorder="little")
    return set(np.nonzero(bits)[0].tolist())


@pytest.mark.parametrize("seed", range(200))
def test_random_mixed_grammars(small, seed):
    info, compiler = small
    n_words = (VOCAB_SIZE + 31) // 32
    rng = random.Random(seed)
    done = 0
    while done < 3:
        grammar = random_grammar(rng)
        try:
            compiled = compiler.compile_grammar(grammar)
        except GrammarError:
            continue  # no complete sentence (e.g. only a stop token): nothing to walk
        done += 1
        rec = Recognizer(oracle_grammar(info, grammar))
        m = xmask.GrammarMatcher(compiled)
        states, path, seen = [rec.initial()], [], []
        for _ in range(8):
            got = masks(m, n_words)
            assert got == oracle(info, rec, states), (str(grammar), path)
            seen.append(got)
            choices = sorted(got - {STOP})
            if not choices:
                break
            t = rng.choice(choices)
            assert m.accept_token(t)
            path.append(t)
            states = oracle_step(info, rec, states, t)
            assert states
        if path and rng.random() < 0.5:
            child = m.fork()
            k = rng.randint(1, len(path))
            m.rollback(k)
            assert masks(m, n_words) == seen[len(path) - k]
            assert masks(child, n_words) == masks(child.fork(), n_words)
        check_draft_tree(m, rng, n_words)
        if STOP in masks(m, n_words):
            assert m.accept_token(STOP) and m.is_terminated()


def check_draft_tree(m, rng, n_words):
    """A random two-level draft tree (tokens allowed or not): every row equals the mask of a
    fork that accepted the node's path, zero where a token on the path was not allowed."""
    if m.is_terminated():
        return
    firsts = [rng.randrange(VOCAB_SIZE) for _ in range(3)]
    tok, nxt, sib = [0], [1], [-1]
    for i, t in enumerate(firsts):
        node = len(tok)
        tok += [t, rng.randrange(VOCAB_SIZE)]
        nxt += [node + 1, -1]
        sib += [node + 2 if i < 2 else -1, -1]
    tree = np.zeros((len(tok), n_words), dtype=np.int32)
    assert m.traverse_draft_tree(nxt, sib, tok, tree)
    for node in range(len(tok)):
        path = [] if node == 0 else ([tok[node]] if node % 2 else [tok[node - 1], tok[node]])
        f = m.fork()
        expect = np.zeros((1, n_words), dtype=np.int32)
        ok = all(t != STOP and f.accept_token(t) for t in path)
        if ok:
            f._reference_fill_next_token_bitmask(expect)
        assert diff_ids(tree[node:node + 1], expect) == [], (node, path)
