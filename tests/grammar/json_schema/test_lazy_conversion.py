"""The lazy JSON Schema conversion (issue 10): ``Converter.run_partial`` then ``finish``.

What a lazy compile will rely on, checked on real schemas (a MaskBench stride and the
JSON-Schema-Test-Suite, strict and not, compact and indented):

* ``finish`` gives exactly the grammar an eager ``run`` gives (same rules, same names), also
  after rules were generated out of queue order (then it converts afresh);
* a schema the eager conversion refuses is refused by ``run_partial`` with the same error,
  so errors never surface after a compile;
* every rule left pending is productive in the final grammar (``productivity`` on the IR: an
  independent least fixpoint), so a first mask built without it cannot let through a member
  or an item that has no value.
"""

import json

import pytest

import xmask
from xmask.grammar.ir import Bytes, CharClass, Choice, Repeat, RuleRef, Seq
from xmask.grammar.json_schema.layout import Layout
from xmask.grammar.json_schema.converter import Converter
from xmask.compiler._first_reach import productive_rule_names
from xmask.grammar.productivity import productive_rules

from conftest import require_data

pytestmark = pytest.mark.filterwarnings("ignore::xmask.SchemaKeywordWarning")

LAYOUTS = {"compact": Layout(True), "indent": Layout(False, 2)}


def _schemas():
    out = []
    mb = require_data("maskbench")
    for f in sorted(mb.glob("*.json"))[::60]:
        out.append((f.name, json.loads(f.read_text(encoding="utf-8"))["schema"]))
    for f in sorted(require_data("jsts").rglob("*.json"))[::2]:
        try:
            groups = json.loads(f.read_text(encoding="utf-8"))
        except ValueError:
            continue
        for i, g in enumerate(groups if isinstance(groups, list) else []):
            if isinstance(g, dict) and "schema" in g:
                out.append((f"{f.name}#{i}", g["schema"]))
    return out


def _outcome(make):
    try:
        return make(), None
    except xmask.XmaskError as e:
        return None, (type(e), str(e))


def test_partial_then_finish_is_the_eager_conversion():
    counts = {"pending": 0, "rules": 0, "same_error": 0, "early": 0, "reordered": 0}
    for name, schema in _schemas():
        for strict in (False, True):
            for lname, layout in LAYOUTS.items():
                where = f"{name} strict={strict} {lname}"
                eager, eager_err = _outcome(lambda: Converter(schema, layout, strict_mode=strict).run())
                conv = Converter(schema, layout, strict_mode=strict)
                part, part_err = _outcome(conv.run_partial)
                assert part_err == eager_err, where
                if eager_err is not None:
                    counts["same_error"] += 1
                    continue
                done, pending = part
                assert "root" in done and not set(done) & set(pending), where
                if pending and lname == "indent":
                    # generating some pending rules early (first_reach's near ones) changes
                    # nothing: the rest still finishes as the eager conversion
                    want = pending[-1:] + pending[:1]
                    done, pending = conv.generate_now(want)
                    assert not set(want) & set(pending) and set(want) <= set(done), where
                    counts["early"] += 1
                own = conv.drain()  # this conversion's rule names (the pending ones')
                counts["reordered"] += conv.reordered
                final = conv.finish()
                assert str(final) == str(eager), where
                productive = productive_rules(own)
                assert [p for p in pending if p not in productive] == [], where
                counts["pending"] += len(pending)
                counts["rules"] += len(final.rules)
    # the checks above are not vacuous: rules are left pending, and refusals are compared
    assert counts["pending"] > 500 and counts["same_error"] > 20 and counts["early"] > 50, counts
    assert counts["reordered"] > 20, counts  # (finish converting afresh is exercised)


@pytest.mark.parametrize("value, deferred", [
    ({"type": "string"}, True),
    ({"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}, True),
    ({"type": "array", "items": {"type": "boolean"}, "minItems": 2}, True),
    ({"enum": ["a", 1, None]}, True),
    (False, False),  # no rule at all
    ({"type": "string", "minLength": 3, "maxLength": 1}, False),
    ({"type": "integer", "minimum": 0.2, "maximum": 0.8}, False),
    ({"type": "object", "properties": {"x": False}, "required": ["x"]}, False),
    ({"type": "object", "required": ["y"]}, False),  # not proven (additional members)
    ({"type": "array", "items": False, "minItems": 1}, False),
    ({"type": "string", "pattern": "^a+$"}, False),  # not a plain keyword: converted now
    ({"type": "string", "enum": [1, 2]}, False),
    ({"type": "object", "properties": {"r": {"$ref": "#/properties/a"}}, "required": ["r"]}, False),
    ({"anyOf": [{"type": "string"}, {"type": "null"}]}, False),
    ({"type": "string", "format": "date-time"}, True),  # a known format alone: fixed grammar
    ({"type": "string", "format": "date", "maxLength": 8}, False),  # an intersection
    # ``false`` is plain: an object closed by it, or a ``false`` item schema with no count
    ({"type": "object", "properties": {"x": {"type": "integer"}}, "additionalProperties": False}, True),
    ({"type": "array", "items": False}, True),
    ({"type": "array", "items": False, "minItems": 2}, False),
    # a minLength every string of the format meets is the format alone; a longer one is not
    ({"type": "string", "format": "date", "minLength": 10}, True),
    ({"type": "string", "format": "uri", "minLength": 1}, True),
    ({"type": "string", "format": "date", "minLength": 11}, False),
    ({"type": "string", "format": "uri-reference", "minLength": 1}, False),
    # a small numeric format bounds numbers plainly; int64's bounds are big numbers
    ({"type": "integer", "format": "int32"}, True),
    ({"type": "integer", "format": "int64"}, False),
    ({"type": "integer", "format": "uint8", "maximum": -1}, False),  # no value left
    ({"type": "number", "format": "date"}, True),  # a string format on numbers: ignored
    # long bounds take a chunked form, which raises nothing: deferred (past the count bound
    # the converter refuses them: see the next test)
    ({"type": ["string", "null"], "maxLength": 8192}, True),
    ({"type": "array", "items": {"type": "integer"}, "minItems": 300, "maxItems": 5000}, True),
])
def test_what_is_left_pending(value, deferred):
    schema = {"type": "object", "properties": {"a": value}}
    done, pending = Converter(schema, LAYOUTS["compact"], strict_mode=True).run_partial()
    assert ("root_a" in pending) == deferred
    assert "root" in done


def test_a_late_refusal_is_reported_by_the_partial_conversion():
    # an optional member whose nested schema cannot be enforced: not deferrable, so the
    # error comes from run_partial, as from an eager conversion
    schema = {"type": "object", "properties": {"a": {"type": "object", "properties": {
        "b": {"type": "array", "uniqueItems": True}}}}}
    with pytest.raises(xmask.UnsupportedSchemaError):
        Converter(schema, LAYOUTS["compact"], strict_mode=True).run()
    with pytest.raises(xmask.UnsupportedSchemaError):
        Converter(schema, LAYOUTS["compact"], strict_mode=True).run_partial()
    # nor is a length bound the converter refuses
    schema = {"type": "object", "properties": {"a": {"type": "string", "maxLength": 2_000_000}}}
    with pytest.raises(xmask.GrammarLimitError):
        Converter(schema, LAYOUTS["compact"], strict_mode=True).run_partial()
    # an unknown format is not deferred either
    schema = {"type": "object", "properties": {"a": {"type": "string", "format": "url"}}}
    with pytest.raises(xmask.UnsupportedSchemaError, match="unknown format"):
        Converter(schema, LAYOUTS["compact"], strict_mode=True).run_partial()


def test_productive_rules():
    rules = {
        "root": Seq((Bytes(b"["), Repeat(RuleRef("loop"), 0, None), RuleRef("ok"))),
        "loop": Seq((Bytes(b"x"), RuleRef("loop"))),  # no way out
        "ok": Choice((CharClass(()), RuleRef("digit"))),
        "digit": CharClass(((48, 57),)),
        "empty": CharClass(((0xD800, 0xDFFF),)),  # surrogates only: no character
        "neg": CharClass(((0, 0x10FFFF),), negated=True),
        "need": Repeat(RuleRef("loop"), 1, 3),
        "missing": RuleRef("nowhere"),
    }
    assert productive_rules(rules) == {"root", "ok", "digit"}
    assert productive_rule_names(rules) == {"root", "ok", "digit"}  # the compiled pass


def test_finish_after_reordering_is_eager_and_warns_nothing_new():
    # "a" (plain) is queued before "b" (a pattern: converted now), so the first part generates
    # out of queue order; finish converts afresh, silently (the misspelt keyword warned once)
    import warnings

    schema = {"type": "object", "properties": {
        "a": {"type": "string"}, "b": {"type": "string", "pattern": "^x+$", "maxLenght": 3}}}
    with warnings.catch_warnings(record=True) as first:
        warnings.simplefilter("always")
        conv = Converter(schema, LAYOUTS["compact"])
        done, pending = conv.run_partial()
    assert [str(w.message) for w in first if "maxLenght" in str(w.message)], first
    assert conv.reordered and pending == ["root_a"] and "root_b" in done
    with warnings.catch_warnings(record=True) as later:
        warnings.simplefilter("always")
        final = conv.finish()
    assert later == []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert str(final) == str(Converter(schema, LAYOUTS["compact"]).run())


def test_quiet_warnings_is_per_thread():
    import threading
    import warnings

    from xmask._caller_warning import quiet_warnings, warn_from_caller

    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        with quiet_warnings():
            warn_from_caller("hidden")
            t = threading.Thread(target=warn_from_caller, args=("from another thread",))
            t.start()
            t.join()
        warn_from_caller("shown")
    assert [str(w.message) for w in got] == ["from another thread", "shown"]
