"""``python -m xmask compile | inspect | bench``: figures a shell user can act on, exit codes,
and errors without tracebacks."""

import json
import subprocess
import sys

import pytest
from conftest import require_module

import xmask
from xmask.__main__ import main

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}, "n": {"type": "integer"}},
          "required": ["city"], "additionalProperties": False}


@pytest.fixture
def schema_file(tmp_path):
    path = tmp_path / "tool.json"
    path.write_text(json.dumps(SCHEMA))
    return path


def test_compile_reports_states_memory_and_writes_a_loadable_grammar(schema_file, tmp_path, capsys):
    out_file = tmp_path / "tool.xmask.json"
    assert main(["compile", str(schema_file), "--precompute", "--output", str(out_file)]) == 0
    text = capsys.readouterr().out
    info = xmask.default_tokenizer_info()
    compiled = xmask.CompiledGrammar.deserialize_json(out_file.read_text(), info)
    summary = compiled.cache_summary()
    assert f"classified {summary['top_states']}, pending 0" in text
    assert "uncertain tokens" in text and "compile:" in text
    # the written grammar works
    matcher = xmask.GrammarMatcher(compiled)
    assert matcher.accept_string('{"city": "Oslo"}')


def test_inspect_lists_rules_with_memory_that_adds_up(tmp_path, capsys):
    path = tmp_path / "g.gbnf"
    path.write_text('root ::= item ("," item)*\nitem ::= [a-z]+ | num\nnum ::= [0-9]+\n')
    assert main(["inspect", str(path), "--top", "50"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = next(i for i, ln in enumerate(lines) if ln.startswith("rule"))
    rows = [ln.split() for ln in lines[header + 1:]]
    compiled = xmask.GrammarCompiler(xmask.default_tokenizer_info(), precompute=True).compile_grammar(
        path.read_text())
    assert {r[0] for r in rows} == {rec.rule for rec in compiled.cache_stats()}
    assert sum(int(r[1]) for r in rows) == compiled.cache_summary()["classified"]


def test_bench_walks_documents_and_fails_on_a_rejected_one(schema_file, tmp_path, capsys):
    docs = tmp_path / "docs.jsonl"
    docs.write_text('{"city": "Paris", "n": 3}\n{"city": "Zürich"}\n')
    assert main(["bench", str(schema_file), "--documents", str(docs)]) == 0
    out = capsys.readouterr().out
    assert "documents accepted: 2 of 2" in out and "steady pass:" in out
    docs.write_text('{"city": "Paris"}\n{"n": 1}\n')
    assert main(["bench", str(schema_file), "--documents", str(docs)]) == 1
    assert "documents accepted: 1 of 2" in capsys.readouterr().out


@pytest.mark.parametrize("content, name, message", [
    (None, "missing.json", "cannot read"),
    ('{"type": 5}', "bad.json", "InvalidSchemaError"),
    ('root ::= "a', "bad.ebnf", "GrammarSyntaxError"),
    ("x", "grammar.txt", "pass --kind"),
])
def test_bad_input_is_one_error_line_and_status_3(tmp_path, capsys, content, name, message):
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    assert main(["compile", str(path)]) == 3
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and "Traceback" not in err


def test_help_is_plain_text():
    out = subprocess.run([sys.executable, "-m", "xmask", "--help"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0
    for command in ("demo", "compile", "inspect", "bench"):
        assert command in out.stdout
    assert "``" not in out.stdout and ":func:" not in out.stdout


def test_precompute_shows_a_progress_bar_on_a_terminal(schema_file, capsys, monkeypatch):
    require_module("tqdm")  # the bar's optional dependency (in the [test] extra)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert main(["compile", str(schema_file), "--precompute"]) == 0
    captured = capsys.readouterr()
    assert "classifying states" in captured.err and "100%" in captured.err
    assert "pending 0" in captured.out
