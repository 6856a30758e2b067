"""Seed inputs for the fuzz targets: real grammars, schemas and regexes from the shared data
(GBNF grammars, MaskBench schemas, and the MaskBench ``pattern`` / ``patternProperties``
strings as the regex corpus: the data has no separate one), plus small hand-written seeds for
the front ends the data does not cover (Lark, structural tags).

Every loader is deterministic (sorted files, a fixed stride), so a derandomized run sees the
same seeds everywhere.
"""

import json
import os
import pathlib

DATA_DIR = pathlib.Path(os.environ["XMASK_DATA"]) if "XMASK_DATA" in os.environ else None

# MaskBench files larger than this are left out: mutating and compiling them costs seconds
# each, and the small ones already cover every keyword.
_MAX_SCHEMA_BYTES = 6000
_SCHEMA_SEEDS = 400  # files sampled with a fixed stride over the sorted listing


def _data(*parts) -> pathlib.Path:
    if DATA_DIR is None:
        raise RuntimeError("XMASK_DATA is not set (the parent test resolves it)")
    return DATA_DIR.joinpath(*parts)


def gbnf_grammars():
    """Text of every GBNF grammar in the data (llama.cpp examples and the SQL grammar)."""
    root = _data("gbnf")
    return [p.read_text(encoding="utf-8") for p in sorted(root.rglob("*.gbnf"))]


def maskbench_schemas():
    """About 400 small MaskBench schemas (dicts), a fixed sample of the sorted files."""
    files = sorted(_data("maskbench").glob("*.json"))
    small = [p for p in files if p.stat().st_size <= _MAX_SCHEMA_BYTES]
    step = max(1, len(small) // _SCHEMA_SEEDS)
    out = []
    for p in small[::step]:
        schema = json.loads(p.read_text(encoding="utf-8"))["schema"]
        if isinstance(schema, (dict, bool)):
            out.append(schema)
    return out


def regex_corpus():
    """Every distinct ``pattern`` value and ``patternProperties`` key of every third MaskBench
    schema (about 700), in first-seen order over the sorted files, and a few hand patterns."""
    seen = {}

    def walk(node):
        if isinstance(node, dict):
            pat = node.get("pattern")
            if isinstance(pat, str):
                seen.setdefault(pat, None)
            pp = node.get("patternProperties")
            if isinstance(pp, dict):
                for key in pp:
                    seen.setdefault(key, None)
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    for p in sorted(_data("maskbench").glob("*.json"))[::3]:  # a third: 2 s -> 0.7 s
        walk(json.loads(p.read_text(encoding="utf-8"))["schema"])
    return list(seen) + HAND_REGEXES


HAND_REGEXES = [
    r"[a-z]+@[a-z]+\.(com|org)", r"\d{4}-\d{2}-\d{2}", r"(ab|cd)*e?", r"[^\x00-\x1f]{0,20}",
    r"\p{L}+", r"(?:a|b)+?c", r"\u00e9+[\u4e00-\u9fff]", r"a{2,5}(b{0,3}){1,4}", r".*x.*",
    r"^\s*\w+\s*$", r"[\[\]\\]+", r"(((a)))|b",
]

HAND_EBNF = [
    'root ::= "a" root "b" | ""',
    'root ::= item ("," item){0,20}\nitem ::= [0-9]+ | "\\"" [^"\\\\]* "\\""',
    'root ::= ("x" | "y"){3,7} [\\u00e0-\\u00ff]? "\\n"',
    'root ::= a b\na ::= "a"*\nb ::= "b"+ | (a "c")?',
    'root ::= [^\\x00-\\x7f]{1,4} "end"',
    'root ::= TagDispatch(("<a>", t), ("<b>", t))\nt ::= "x"',
]

HAND_LARK = [
    'start: NAME NAME ";"\nNAME: /[a-z]+/\n%ignore " "',
    'start: item ("," item)*\nitem: NUMBER | STRING\nNUMBER: /-?[0-9]+/\nSTRING: /"[^"]*"/',
    'start: a+ b?\na: "a" | "x" a\nb: "b"~3',
    'start: "(" start ")" | "x"',
    '?start: sum\nsum: product (("+"|"-") product)*\nproduct: atom (("*"|"/") atom)*\n'
    'atom: /[0-9]+/ | "(" sum ")"',
    'start: expr\nexpr: term ("|" term)*\nterm: /[a-z]/~2..5',
]

_C = {"type": "const_string", "value": "x"}
HAND_STRUCTURAL_TAGS = [
    {"type": "structural_tag", "format": _C},
    {"type": "structural_tag", "format": {"type": "tag", "begin": "<f>", "content": {
        "type": "json_schema", "json_schema": {"type": "object", "properties": {
            "a": {"type": "integer"}}, "required": ["a"]}}, "end": "</f>"}},
    {"type": "structural_tag", "format": {"type": "triggered_tags", "triggers": ["<fn"],
     "tags": [{"type": "tag", "begin": "<fn=a>", "content": {"type": "regex", "pattern": "[0-9]+"},
               "end": "</fn>"},
              {"type": "tag", "begin": "<fn=b>", "content": {"type": "any_text"}, "end": "</fn>"}],
     "at_least_one": False, "stop_after_first": False}},
    {"type": "structural_tag", "format": {"type": "sequence", "elements": [
        _C, {"type": "or", "elements": [{"type": "grammar", "grammar": 'root ::= "g"+'},
                                        {"type": "any_text", "max_chars": 5}]}]}},
    {"type": "structural_tag", "format": {"type": "repeat", "min": 1, "max": 3, "content": _C}},
    {"type": "structural_tag", "format": {"type": "dispatch", "rules": [["<a>", _C]],
     "excludes": ["zz"]}},
]
