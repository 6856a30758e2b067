"""The exception hierarchy as servers use it: every xmask error is a RuntimeError (what they
catch from XGrammar), carries XGrammar's names, and survives pickling (worker -> engine)."""

import pickle

import pytest

import xmask
from xmask import errors


def _raised(fn):
    with pytest.raises(xmask.XmaskError) as info:
        fn()
    return info.value


REAL_ERRORS = {
    "regex": lambda: xmask.Grammar.from_regex("(unclosed"),
    "ebnf": lambda: xmask.Grammar.from_ebnf('root ::= "a" (\n'),
    "undefined rule": lambda: xmask.Grammar.from_ebnf("root ::= missing"),
    "schema keyword": lambda: xmask.Grammar.from_json_schema(
        {"properties": {"a": {"type": "string", "format": "no-such-format"}}}),
    "schema text": lambda: xmask.Grammar.from_json_schema('{"type": '),
    "malformed schema": lambda: xmask.Grammar.from_json_schema(
        {"properties": {"a": {"minLength": "3"}}}),
}


@pytest.mark.parametrize("name", sorted(REAL_ERRORS))
def test_real_errors_are_runtime_errors_and_pickle_intact(name):
    err = _raised(REAL_ERRORS[name])
    assert isinstance(err, RuntimeError)
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is type(err)
    assert str(back) == str(err)  # no second location suffix
    assert back.__dict__ == err.__dict__


def test_invalid_schema_text_is_invalid_json_error_with_position():
    err = _raised(REAL_ERRORS["schema text"])
    assert isinstance(err, xmask.InvalidJSONError) and isinstance(err, ValueError)
    assert err.position == len('{"type": ')


def test_compile_json_schema_bad_text_raises_invalid_json_error():
    compiler = xmask.GrammarCompiler(xmask.default_tokenizer_info())
    with pytest.raises(xmask.InvalidJSONError):
        compiler.compile_json_schema("{not json")


def test_every_exported_error_class_is_a_runtime_error():
    exported = [getattr(xmask, n) for n in xmask.__all__ if n.endswith("Error")]
    assert xmask.DeserializeFormatError in exported and xmask.DeserializeVersionError in exported
    for cls in exported + [errors.SchemaUnsupportedError]:
        assert issubclass(cls, xmask.XmaskError) and issubclass(cls, RuntimeError), cls


def test_malformed_schema_error_names_its_keyword():
    err = _raised(REAL_ERRORS["malformed schema"])
    assert isinstance(err, xmask.InvalidSchemaError) and err.path == "#/properties/a/minLength"


def test_regex_error_fields_survive_pickling():
    err = _raised(REAL_ERRORS["regex"])
    back = pickle.loads(pickle.dumps(err))
    assert (back.pattern, back.position, back.line, back.column) == (
        err.pattern, err.position, err.line, err.column)
