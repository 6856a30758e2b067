"""avoid_dfa (xmask.grammar.text_exclusion) against the definition, on every short text."""

import itertools
import random

import pytest

from xmask.grammar.recognizer import Recognizer
from xmask.grammar.ir import CharClass, Grammar, Repeat
from xmask.grammar.rule_sink import RuleSink
from xmask.grammar.text_exclusion import avoid_dfa, expr_avoiding


@pytest.mark.parametrize("words", [["ab"], ["aa"], ["aba", "b"], ["abab", "bba"], ["</p>", "<"], ["\u00e9t\u00e9"]])
def test_avoid_dfa_is_the_definition(words):
    d = avoid_dfa(words)
    alphabet = sorted({c for w in words for c in w} | {"x"})
    for n in range(7):
        for t in itertools.product(alphabet, repeat=n):
            text = "".join(t)
            assert d.matches(text) == (not any(w in text for w in words)), text


def test_random_words_and_texts():
    rnd = random.Random(7)
    for _ in range(200):
        words = ["".join(rnd.choice("abc") for _ in range(rnd.randint(1, 4))) for _ in range(rnd.randint(1, 3))]
        d = avoid_dfa(words)
        for _ in range(30):
            text = "".join(rnd.choice("abcd") for _ in range(rnd.randint(0, 12)))
            assert d.matches(text) == (not any(w in text for w in words)), (words, text)


def test_expr_avoiding_and_bad_words():
    rules = {}
    e = expr_avoiding(Repeat(CharClass(((0x61, 0x63),)), 0, None), ["cab"], RuleSink(rules), "t")
    rules["root"] = e
    r = Recognizer(Grammar(rules))
    assert r.accepts(b"abca") and r.accepts(b"cacb") and not r.accepts(b"acab")
    assert expr_avoiding(CharClass(((0x61, 0x61),)), ["a"], None, "t") is None
    with pytest.raises(ValueError):
        avoid_dfa(["ok", ""])
