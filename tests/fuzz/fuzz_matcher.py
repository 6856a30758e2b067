"""Fuzz target for the matcher API: random sequences of accept / accept_string / rollback /
fill / fork / copy / reset / re-init / jump-forward / draft-tree / batch calls on a few
matchers of a few grammars, with good and bad arguments (bad token ids, huge numbers, NumPy
integer types, wrong bitmask shape / dtype / layout, bad row indices).

The oracle: a call with good arguments succeeds and agrees with a model of the matcher (the
list of accepted token ids); a call with a bad value raises an xmask error and changes nothing;
a call with an argument of the wrong Python type raises an xmask error or ``TypeError`` (as
XGrammar does).  After each sequence every matcher is compared with a fresh matcher fed its
history: same termination, and both masks equal the slow reference.
"""

import copy

import numpy as np
from hypothesis import strategies as st

import xmask
from xmask.errors import XmaskError

GRAMMARS = [
    ("builtin_json", None),
    ("schema", {"type": "object", "properties": {"name": {"type": "string", "maxLength": 8},
                                                 "n": {"type": "integer", "minimum": -5},
                                                 "tags": {"type": "array", "items": {
                                                     "enum": ["a", "b\u00e9"]}}},
                "required": ["name"]}),
    ("ebnf", 'root ::= "a" root "b" | "" | "[" [^\\]]{0,3} "]"'),
    ("regex", r"[a-z]{0,5}(,[0-9]+)*\.?"),
]

# Integer types the API takes for a token id / count / index (wrapped around a good value).
INT_KINDS = ["int", "int64", "int32", "uint16", "uint64", "array0d"]


def as_kind(value, kind):
    if kind == "int":
        return int(value)
    if kind == "array0d":
        return np.array(value, dtype=np.int64)
    return getattr(np, kind)(value)


class Bad:
    """A bad argument: ``value`` and whether it is of a wrong Python type (then TypeError is
    an accepted answer too)."""

    def __init__(self, value, wrong_type):
        self.value, self.wrong_type = value, wrong_type

    def __repr__(self):
        return f"Bad({self.value!r})"


def bad_ints(vocab):
    values = [-1, vocab, vocab + 1000, 2 ** 31, 2 ** 31 - 1, 2 ** 32, 2 ** 63, 2 ** 64,
              -(2 ** 63), 10 ** 30, np.int8(-1), np.uint64(2 ** 64 - 1), np.int64(-(2 ** 63))]
    wrong = [True, 1.0, np.float32(3), "1", None, np.array([5]), b"\x01", 1j]
    return [Bad(v, False) for v in values] + [Bad(v, True) for v in wrong]


class Context:
    def __init__(self, deadline):
        self.info = xmask.default_tokenizer_info()
        self.vocab = self.info.vocab_size
        self.words = (self.vocab + 31) // 32
        compiler = xmask.GrammarCompiler(self.info, limits=xmask.CompileLimits(
            max_compile_seconds=deadline))
        self.compiled = []
        for kind, src in GRAMMARS:
            if kind == "builtin_json":
                self.compiled.append(compiler.compile_builtin_json_grammar())
            elif kind == "schema":
                self.compiled.append(compiler.compile_json_schema(src))
            elif kind == "ebnf":
                self.compiled.append(compiler.compile_grammar(src))
            else:
                self.compiled.append(compiler.compile_regex(src))
        self.batch = xmask.BatchGrammarMatcher(2)
        self.bad = bad_ints(self.vocab)


# ------------------------------------------------------------------------------- strategy

def _bad(ctx_vocab):
    return st.sampled_from(bad_ints(ctx_vocab))


def ops_strategy(vocab):
    pick = st.integers(0, 7)  # which live matcher (modulo their count)
    good_id = st.integers(0, vocab - 1)
    kind = st.sampled_from(INT_KINDS)
    token = st.tuples(good_id, kind) | _bad(vocab)
    count = st.tuples(st.integers(0, 12), kind) | _bad(vocab)
    bitmask = st.sampled_from(["good", "good", "good", "rows3", "wide", "narrow", "uint32",
                               "int64", "float32", "1d", "3d", "noncontig", "fortran",
                               "readonly", "list", "none"])
    index = st.tuples(st.integers(0, 2), kind) | _bad(vocab)
    text = (st.text(max_size=8) | st.binary(max_size=8)
            | st.sampled_from(['{"name": "x"}', "aab", "[\x00]", "\ud800", b"\xff\xfe", "1,2",
                               '{"n": -6', "a" * 300, Bad(5, True), Bad(None, True)]))
    op = st.one_of(
        st.tuples(st.just("accept_allowed"), pick, st.integers(0, 10 ** 6), kind),
        st.tuples(st.just("accept_allowed"), pick, st.integers(0, 10 ** 6), kind),
        st.tuples(st.just("accept_allowed"), pick, st.integers(0, 10 ** 6), kind),
        st.tuples(st.just("accept"), pick, token),
        st.tuples(st.just("accept"), pick, st.tuples(st.just(vocab - 1), kind)),  # the stop token
        st.tuples(st.just("accept_string"), pick, text),
        st.tuples(st.just("rollback"), pick, count),
        st.tuples(st.just("fill"), pick, bitmask, index),
        st.tuples(st.just("fork"), pick, st.sampled_from(["fork", "copy", "deepcopy"])),
        st.tuples(st.just("reset"), pick),
        st.tuples(st.just("reinit"), pick, st.integers(0, len(GRAMMARS) - 1),
                  st.sampled_from([None, [1718], [0, 5], [], [-1], [10 ** 9], "x"])),
        st.tuples(st.just("query"), pick),
        st.tuples(st.just("draft_tree"), pick, st.lists(st.integers(-3, 8), max_size=8),
                  st.lists(st.integers(-3, 8), max_size=8), st.lists(st.integers(-2, vocab + 2),
                                                                     max_size=8)),
        st.tuples(st.just("batch_fill"), st.lists(pick, max_size=4), st.booleans()),
        st.tuples(st.just("batch_accept"), st.lists(st.tuples(pick, token), max_size=3)),
        st.tuples(st.just("batch_rollback"), st.lists(pick, max_size=3), count),
    )
    return st.tuples(st.integers(0, len(GRAMMARS) - 1), st.lists(op, max_size=25))


# ------------------------------------------------------------------------------------ model

class Live:
    """One matcher and its model: the compiled grammar and the accepted ids (None once a
    string was accepted: its tokens are unknown, so the replay check is skipped)."""

    def __init__(self, matcher, compiled, history, stops=None):
        self.m, self.compiled, self.history, self.stops = matcher, compiled, history, stops


def _row(ctx, m, reference=False):
    out = np.zeros((1, ctx.words), np.int32)
    if reference:
        m._reference_fill_next_token_bitmask(out)
    else:
        m.fill_next_token_bitmask(out)
    return out[0]


def _allowed(ctx, row):
    return np.flatnonzero(np.unpackbits(row.view(np.uint8), bitorder="little")[:ctx.vocab])


def _bitmask(ctx, spec):
    w = ctx.words
    if spec == "good":
        return np.zeros((1, w), np.int32), True
    if spec == "rows3":
        return np.zeros((3, w), np.int32), True
    if spec == "1d":
        return np.zeros((w,), np.int32), True
    made = {
        "wide": lambda: np.zeros((1, w + 1), np.int32),
        "narrow": lambda: np.zeros((1, w - 1), np.int32),
        "uint32": lambda: np.zeros((1, w), np.uint32),
        "int64": lambda: np.zeros((1, w), np.int64),
        "float32": lambda: np.zeros((1, w), np.float32),
        "3d": lambda: np.zeros((1, 1, w), np.int32),
        "noncontig": lambda: np.zeros((2, 2 * w), np.int32)[:, ::2],
        "fortran": lambda: np.asfortranarray(np.zeros((3, w), np.int32)),
        "list": lambda: [[0] * w],
        "none": lambda: None,
    }
    if spec == "readonly":
        arr = np.zeros((1, w), np.int32)
        arr.setflags(write=False)
        return arr, False
    return made[spec](), False


def _value(arg):
    """(python value, is_good, wrong_type) of a drawn token/count/index argument."""
    if isinstance(arg, Bad):
        return arg.value, False, arg.wrong_type
    v, kind = arg
    return as_kind(v, kind), True, False


def expect_error(fn, wrong_type=False):
    """``fn()`` must raise an xmask error (or TypeError for an argument of the wrong type)."""
    try:
        fn()
    except XmaskError:
        return
    except TypeError:
        if wrong_type:
            return
        raise
    raise AssertionError("bad argument accepted without an error")


def run_matcher(ctx, example):
    start, ops = example
    lives = [Live(xmask.GrammarMatcher(ctx.compiled[start]), ctx.compiled[start], [])]
    for op in ops:
        live = lives[op[1] % len(lives)] if isinstance(op[1], int) else None
        name = op[0]
        if name == "accept_allowed":
            _, _, r, kind = op
            if live.m.is_terminated():
                continue
            allowed = _allowed(ctx, _row(ctx, live.m))
            if len(allowed) == 0:
                continue
            t = int(allowed[r % len(allowed)])
            assert live.m.accept_token(as_kind(t, kind)) is True, f"allowed token {t} refused"
            if live.history is not None:
                live.history.append(t)
        elif name == "accept":
            value, good, wrong = _value(op[2])
            if not good:
                expect_error(lambda: live.m.accept_token(value), wrong)
                continue
            t = int(value)
            expected = None
            if not live.m.is_terminated():
                expected = t in set(_allowed(ctx, _row(ctx, live.m)).tolist())
            got = live.m.accept_token(value)
            assert isinstance(got, bool)
            if expected is not None:
                assert got == expected, f"accept_token({t}) = {got}, the mask says {expected}"
            else:
                assert got is False, "a terminated matcher accepted a token"
            if got and live.history is not None:
                live.history.append(t)
        elif name == "accept_string":
            text = op[2]
            if isinstance(text, Bad):
                expect_error(lambda: live.m.accept_string(text.value), True)
                continue
            if isinstance(text, str) and any("\ud800" <= c <= "\udfff" for c in text):
                expect_error(lambda: live.m.accept_string(text))  # no UTF-8 spells it
            elif live.m.accept_string(text):
                live.history = None
        elif name == "rollback":
            value, good, wrong = _value(op[2])
            if good and live.history is not None and int(value) <= len(live.history):
                live.m.rollback(value)
                del live.history[len(live.history) - int(value):]
            elif not good or live.history is not None:
                expect_error(lambda: live.m.rollback(value), wrong)
        elif name == "fill":
            bitmask, good = _bitmask(ctx, op[2])
            index, good_index, wrong = _value(op[3])
            rows = bitmask.shape[0] if good and bitmask.ndim == 2 else 1
            if good and good_index and int(index) < rows and not live.m.is_terminated():
                assert live.m.fill_next_token_bitmask(bitmask, index) in (True, False)
                row = bitmask[int(index)] if bitmask.ndim == 2 else bitmask
                assert np.array_equal(row, _row(ctx, live.m, reference=True)), "fill != reference"
            else:
                expect_error(lambda: live.m.fill_next_token_bitmask(bitmask, index),
                             wrong or not good)
        elif name == "fork":
            maker = {"fork": lambda m: m.fork(), "copy": copy.copy, "deepcopy": copy.deepcopy}
            twin = maker[op[2]](live.m)
            lives.append(Live(twin, live.compiled,
                              None if live.history is None else list(live.history), live.stops))
        elif name == "reset":
            live.m.reset()
            live.history = []
        elif name == "reinit":
            compiled, stops = ctx.compiled[op[2]], op[3]
            good = stops is None or (isinstance(stops, list) and all(
                0 <= s < ctx.vocab for s in stops))
            if good:
                live.m.__init__(compiled, override_stop_tokens=stops)
                live.compiled, live.history = compiled, []
                live.stops = stops
            else:
                expect_error(lambda: live.m.__init__(compiled, override_stop_tokens=stops),
                             isinstance(stops, str))
        elif name == "query":
            live.m.is_terminated()
            live.m.is_completed()
            assert isinstance(live.m.find_jump_forward_string(), str)
            repr(live.m)
            if live.history is not None:
                assert live.m.num_accepted_tokens == len(live.history)
        elif name == "draft_tree":
            nxt, sib, toks = op[2], op[3], op[4]
            n = len(toks)
            bm = np.zeros((max(n, 1), ctx.words), np.int32)
            try:
                live.m.traverse_draft_tree(nxt, sib, toks, bm)
            except XmaskError:
                pass
        elif name == "batch_fill":
            chosen = [lives[i % len(lives)].m for i in op[1]]
            bm = np.zeros((max(len(chosen), 1), ctx.words), np.int32)
            indices = list(range(len(chosen))) if op[2] else None
            try:
                ctx.batch.batch_fill_next_token_bitmask(chosen, bm, indices)
            except XmaskError:  # refused: a matcher twice, or one that has terminated
                assert len(set(map(id, chosen))) < len(chosen) or any(
                    m.is_terminated() for m in chosen), "batch fill refused"
                continue
            for k, m in enumerate(chosen):
                assert np.array_equal(bm[k], _row(ctx, m, reference=True)), "batch row != reference"
        elif name == "batch_accept":
            pairs = [(lives[i % len(lives)], _value(tok)) for i, tok in op[1]]
            ms = [p[0].m for p in pairs]
            if all(v[1] for _, v in pairs) and len(set(map(id, ms))) == len(ms):
                before = [None if p[0].m.is_terminated() else
                          set(_allowed(ctx, _row(ctx, p[0].m)).tolist()) for p in pairs]
                got = xmask.BatchGrammarMatcher.batch_accept_token(ms, [v[0] for _, v in pairs])
                for (lv, v), ok, allowed in zip(pairs, got, before):
                    assert bool(ok) == (allowed is not None and int(v[0]) in allowed)
                    if ok and lv.history is not None:
                        lv.history.append(int(v[0]))
            else:
                wrong = any(v[2] for _, v in pairs)
                expect_error(lambda: xmask.BatchGrammarMatcher.batch_accept_token(
                    ms, [v[0] for _, v in pairs]), wrong)
        elif name == "batch_rollback":
            chosen = [lives[i % len(lives)] for i in op[1]]
            value, good, wrong = _value(op[2])
            ms = [lv.m for lv in chosen]
            fits = good and all(lv.history is not None and int(value) <= len(lv.history)
                                for lv in chosen) and len(set(map(id, ms))) == len(ms)
            if fits:
                xmask.BatchGrammarMatcher.batch_rollback(ms, value)
                for lv in chosen:
                    del lv.history[len(lv.history) - int(value):]
            elif chosen and (not good or all(lv.history is not None for lv in chosen)):
                expect_error(lambda: xmask.BatchGrammarMatcher.batch_rollback(ms, value), wrong)
    for live in lives:
        _check_against_replay(ctx, live)
    return "ok"


def _check_against_replay(ctx, live):
    if live.history is None:
        return
    fresh = xmask.GrammarMatcher(live.compiled, override_stop_tokens=live.stops)
    for t in live.history:
        assert fresh.accept_token(t), f"replay refused token {t}"
    assert fresh.is_terminated() == live.m.is_terminated(), "termination differs from replay"
    if not fresh.is_terminated():
        ref = _row(ctx, fresh, reference=True)
        assert np.array_equal(_row(ctx, live.m), ref), "mask differs from a replayed matcher"
