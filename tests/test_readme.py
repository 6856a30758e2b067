"""The README's Use example runs as written, and what it prints obeys its schema."""

import contextlib
import io
import json
import pathlib
import re

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def _use_example() -> str:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Use\n"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_use_example_runs_and_prints_a_document_valid_under_its_schema():
    jsonschema = __import__("jsonschema")
    code = _use_example()
    out = io.StringIO()
    scope: dict = {}
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(README), "exec"), scope)  # noqa: S102 -- the README's own code
    doc = json.loads(out.getvalue())
    jsonschema.validate(doc, scope["schema"])
    assert scope["matcher"].is_terminated()
