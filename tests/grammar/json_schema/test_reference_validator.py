"""The reference validator (xmask.grammar.json_schema.validator) agrees with the
JSON-Schema-Test-Suite labels wherever it gives an answer."""

import json

import pytest
from conftest import require_data
from schema_samples import converter, root

from xmask.errors import GrammarError, UnsupportedSchemaError
from xmask.grammar.json_schema.validator import CannotValidate, FormatUnknown


def test_validator_matches_the_suite_labels():
    suite = require_data("jsts", "draft2020-12")
    decided = 0
    mismatches = []
    for f in sorted(suite.glob("*.json")):  # the main folder: format is an annotation there
        if f.name == "vocabulary.json":
            continue  # custom metaschemas: $vocabulary is ignored (validation always applies)
        for group in json.loads(f.read_text(encoding="utf-8")):
            if "format" in json.dumps(group["schema"]):
                continue
            try:
                conv = converter(group["schema"])
            except (GrammarError, UnsupportedSchemaError):
                continue
            for case in group["tests"]:
                try:
                    got = conv.validator.validate(case["data"], root(conv))
                except (CannotValidate, GrammarError, UnsupportedSchemaError, RecursionError):
                    continue
                decided += 1
                if got != case["valid"]:
                    mismatches.append(f"{f.name}: {group['description']} / {case['description']}")
    assert decided > 900  # (982 when written)
    assert not mismatches, mismatches[:10]


def test_restricted_format_is_undecided_not_invalid():
    conv = converter({"type": "string", "format": "email"})
    # a valid address outside the sound subset grammar: the validator must not call it invalid
    try:
        ok = conv.validator.validate('"quoted local"@example.com', root(conv))
    except FormatUnknown:
        return
    assert ok


@pytest.mark.parametrize("schema,value,valid", [
    ({"multipleOf": 0.1}, 0.3, True),
    ({"const": 1}, 1.0, True),
    ({"const": 1}, True, False),
    ({"uniqueItems": True}, [1, 1.0], False),
    ({"maxLength": 1}, "\U0001F600", True),
    ({"prefixItems": [{"type": "integer"}], "items": False}, [1, 2], False),
    ({"dependentRequired": {"a": ["b"]}}, {"a": 1}, False),
])
def test_json_schema_equality_and_counting(schema, value, valid):
    conv = converter(schema)
    assert conv.validator.validate(value, root(conv)) is valid
