"""Which rules a two-part JSON Schema compile builds first (issue 10, ``first_reach.py``), and
the compiled passes that choice runs on.

* The compiled productivity pass (``productive_rule_names``) equals its pure-Python twin
  (``productive_rules``, a plain fixpoint) on converted MaskBench schemas, whole and as first
  parts with their pending rules counted productive, on llama.cpp's GBNF grammars, and on hand
  cases (cycles, surrogate-only and negated classes, undefined rules).
* The compiled offset walk equals its pure-Python twin at several horizons.
* What ``first_part_rules`` gives is a grammar that keeps its promises: the root is built,
  every reference of a built rule is built or stubbed, every stubbed rule that was generated
  is productive, the placeholders are the ASCII byte for value rules (none is nullable) and
  any byte for the others (keys, member chains, which may be empty: a hand case in
  ``test_lazy_schema.py``).  A larger horizon builds a superset.

The masks of first parts built this way are checked against the eager compile and the slow
reference in ``test_lazy_schema.py`` (at the default horizon and at 1, where most values are
stubs).
"""

import json
import sys

import pytest

from xmask.compiler._first_reach import productive_rule_names, walk_offsets
from xmask.compiler.first_reach import FIRST_HORIZON, first_part_rules, walk_offsets_reference
from xmask.compiler.lazy_schema import ANY_BYTE_STUB_BODY, STUB_BODY, partial_grammar
from xmask.grammar.ebnf import parse_ebnf
from xmask.grammar.ir import Bytes, CharClass, Choice, Repeat, RuleRef, Seq, TokenSet
from xmask.grammar.ir_expr import node_kind
from xmask.grammar.json_schema.converter import Converter
from xmask.grammar.json_schema.layout import Layout
from xmask.grammar.productivity import productive_rules

from conftest import require_data

pytestmark = pytest.mark.filterwarnings("ignore::xmask.SchemaKeywordWarning")

LAYOUTS = [Layout(True), Layout(False, 2), Layout(False)]


def _partials():
    """(name, generated rules, pending names, value rule names, whole grammar's rules) of a
    MaskBench stride in three layouts."""
    out = []
    for k, f in enumerate(sorted(require_data("maskbench").glob("*.json"))[::25]):
        schema = json.loads(f.read_text(encoding="utf-8"))["schema"]
        conv = Converter(schema, LAYOUTS[k % 3], strict_mode=k % 2 == 0)
        try:
            rules, pending = conv.run_partial()
            values = conv.value_rules()
            whole = conv.drain()  # (this conversion's own rule names, as the first part's)
        except Exception as e:  # noqa: BLE001  (refused schemas: nothing to check)
            if type(e).__module__.startswith("xmask"):
                continue
            raise
        out.append((f.name, rules, pending, values, whole))
    assert len(out) > 200
    return out


@pytest.fixture(scope="module")
def partials():
    return _partials()


def test_productivity_pass_equals_its_twin_on_schemas(partials):
    unproductive = 0
    for name, rules, pending, _, whole in partials:
        want = productive_rules(whole)
        assert productive_rule_names(whole) == want, name
        unproductive += len(whole) - len(want)
        # first parts: the pending rules known productive (and undefined for the twin)
        stubbed = {**rules, **{p: Bytes(b"0") for p in pending}}
        assert productive_rule_names(rules, pending) - set(pending) == \
            productive_rules(stubbed) - set(pending), name
    assert unproductive > 0  # (the sample has rules without values: the check has teeth)


def test_productivity_pass_equals_its_twin_on_gbnf():
    folder = require_data("gbnf", "llama.cpp", "grammars")
    n = 0
    for f in sorted(folder.glob("*.gbnf")):
        try:
            rules = parse_ebnf(f.read_text(encoding="utf-8")).rules
        except Exception:  # noqa: BLE001  (grammars xmask refuses are tested elsewhere)
            continue
        assert productive_rule_names(rules) == productive_rules(rules), f.name
        n += 1
    assert n >= 8


def test_productivity_pass_hand_cases():
    # (test_lazy_conversion.test_productive_rules has the plain cases, for both passes)
    rules = {
        "root": Choice((RuleRef("late"), RuleRef("bytes"))),
        "bytes": CharClass(((0xD8, 0xDF),), byte_level=True),  # raw bytes: not surrogates
        "neg_some": CharClass(((0, 0x7F),), negated=True),
        "neg_all": CharClass(((0, 0xD7FF), (0xE000, 0x10FFFF)), negated=True),  # surrogates left
        "neg_top": CharClass(((0, 0xD7FF), (0xE000, 0x10FFFE)), negated=True),  # U+10FFFF left
        "neg_mid": CharClass(((0, 0xD7FF), (0xE001, 0x10FFFF)), negated=True),  # U+E000 left
        "neg_bytes": CharClass(((0, 0xFF),), negated=True, byte_level=True),
        "neg_byte": CharClass(((0, 0x40), (0x42, 0xFF)), negated=True, byte_level=True),
        "tokens": TokenSet((), negated=False),  # no token
        "late": Seq((RuleRef("later"), Bytes(b"1"))),  # defined before what it needs
        "later": Choice((RuleRef("late"), Bytes(b"z"))),
        "cycle_a": Seq((Bytes(b"a"), RuleRef("cycle_b"))),
        "cycle_b": Choice((RuleRef("cycle_a"), RuleRef("missing"))),
        "missing": RuleRef("nowhere"),
    }
    want = {"root", "bytes", "neg_some", "neg_top", "neg_mid", "neg_byte", "late", "later"}
    assert productive_rules(rules) == want
    assert productive_rule_names(rules) == want
    assert productive_rule_names(rules, ["nowhere"]) == want | {"missing", "nowhere", "cycle_a",
                                                                "cycle_b"}


@pytest.fixture
def deep():
    # the twin recurses along the expressions (converted ones nest hundreds of levels deep)
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 8000))
    yield
    sys.setrecursionlimit(old)


@pytest.mark.parametrize("only_values", [True, False])
@pytest.mark.parametrize("horizon", [1, 3, FIRST_HORIZON, 17])
def test_offset_walk_equals_its_twin(partials, horizon, only_values, deep):
    # only_values: only value rules may be cut; else any rule (values=None, as first_part_rules)
    cut_total = 0
    for name, rules, pending, values, _ in partials:
        cuttable = values if only_values else None
        got = walk_offsets(rules, set(pending), cuttable, set(), horizon, "root")
        want = walk_offsets_reference(rules, set(pending), cuttable, set(), horizon, "root")
        assert got == want, name
        cut_total += len(got[1])
    assert cut_total > 0


def _nullable_rules(rules):
    # an independent least fixpoint (a rule is nullable once its body is)
    out = set()

    def nullable(e):
        t = node_kind(e)
        if t is Bytes:
            return not e.data
        if t is Seq:
            return all(nullable(x) for x in e.items)
        if t is Choice:
            return any(nullable(x) for x in e.items)
        if t is Repeat:
            return e.min == 0 or nullable(e.item)
        if t is RuleRef:
            return e.name in out
        return False  # classes, token sets; word complements are not value rules' bodies

    changed = True
    while changed:
        changed = False
        for name, body in rules.items():
            if name not in out and nullable(body):
                out.add(name)
                changed = True
    return out


@pytest.mark.parametrize("horizon", [1, FIRST_HORIZON])
def test_first_part_keeps_its_promises(partials, horizon):
    stubbed_generated = stubbed_other = 0
    for name, rules, pending, values, whole in partials:
        built, stubs, near = first_part_rules(rules, pending, horizon=horizon)
        assert "root" in built and "root" not in stubs, name
        assert not set(built) & set(stubs), name
        assert set(stubs) <= set(rules) | set(pending), name
        defined = set(built) | set(stubs)
        for rule, body in built.items():
            assert {r.name for r in _refs(body)} <= defined, (name, rule)
        productive = productive_rules(whole)
        generated = [s for s in stubs if s not in pending]
        assert all(s in productive for s in generated), name
        stubbed_generated += len(generated)
        nullable = _nullable_rules(whole)
        assert not nullable & set(values), name
        assert set(pending) <= values, name  # (pending rules get the value placeholder)
        grammar = partial_grammar(built, stubs, values)
        for s in stubs:
            want = STUB_BODY if s in values else ANY_BYTE_STUB_BODY
            assert grammar.rules[s] is want, (name, s)
            stubbed_other += s not in values
        if horizon == 1:
            wider, _, _ = first_part_rules(rules, pending, horizon=FIRST_HORIZON)
            assert set(built) <= set(wider), name
    assert stubbed_generated > 50 and stubbed_other > 50


def _refs(e):
    from xmask.grammar.ir import iter_nodes

    return [x for x in iter_nodes(e, into_words=False) if type(x) is RuleRef]


def test_an_unproductive_value_past_the_horizon_is_built():
    # "b" is generated (a pattern: not deferrable) and has no value: it is not stubbed
    rules = {"root": Seq((Bytes(b'{"a":'), RuleRef("a"), Bytes(b',"bbbb":'), RuleRef("b"),
                          Bytes(b"}"))),
             "a": Bytes(b"1"), "b": Seq((Bytes(b'"'), RuleRef("never"), Bytes(b'"'))),
             "never": CharClass(())}
    built, stubs, _ = first_part_rules(rules, [], horizon=3)
    assert stubs == ["a"] and set(built) == {"root", "b", "never"}


def test_pending_values_near_the_start_are_reported():
    # a pending value right after '[' (offset 1) is near: a first token like '[{' steps into
    # it; one past a 7-byte key is not (stubbed, reported as such only)
    rules = {"root": Seq((Bytes(b"["), RuleRef("item"), Bytes(b"]"))),
             "obj": Seq((Bytes(b'{"alpha":'), RuleRef("v"), Bytes(b"}")))}
    built, stubs, near = first_part_rules(rules, ["item"], horizon=FIRST_HORIZON)
    assert near == ["item"] and stubs == ["item"] and list(built) == ["root"]
    rules["root"] = Seq((Bytes(b"["), RuleRef("obj"), Bytes(b"]")))
    built, stubs, near = first_part_rules(rules, ["v"], horizon=FIRST_HORIZON)
    assert near == [] and stubs == ["v"] and set(built) == {"root", "obj"}
    # the walk reports the least offset of each pending rule met
    rules["root"] = Seq((Bytes(b"[["), RuleRef("v"), Bytes(b","), RuleRef("obj")))
    _, _, met = walk_offsets(rules, {"v"}, None, set(), FIRST_HORIZON, "root")
    assert met == {"v": 2}
