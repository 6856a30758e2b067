"""Fuzz targets for the front ends: EBNF, regex, JSON Schema, Lark and structural tags.

Each target is a hypothesis strategy of inputs (real seeds, mutated) and a ``run`` that
compiles one input and, when it compiles, walks a few tokens through a matcher, checking the
first mask against the slow reference.  ``run`` returns the outcome's name (``"ok"`` or the
xmask error class); any other exception is a finding.  The child runner (fuzz_child.py)
executes the examples under an address-space cap, in a forked worker with a timer, so a
crash, hang or blow-up is a finding too.
"""

import copy
import contextlib
import json
import random
import sys
import zlib

import numpy as np
from hypothesis import strategies as st

import xmask
from xmask.errors import XmaskError

import fuzz_seeds

# ---------------------------------------------------------------------------- text mutation

# Pieces that reach the corners of the parsers: repeat bounds (big and nested), escapes that
# name surrogates or huge code points, NUL bytes, raw lone surrogates (what invalid UTF-8
# decoded with surrogateescape looks like), deep nesting, huge numbers.
COMMON_PIECES = [
    "\x00", "\ud800", "\udcff", "\U0010ffff", "\\", "\n", "\t", " ", "é", "你", "(", ")", "[",
    "]", "{", "}", "|", "*", "+", "?", "-", "^", "$", ".", ",", '"', "'", "99999999999999999999",
    "{0,100}", "{10000}", "{3,}", "{0,0}", "{2,1}", "((((((((", "))))))))",
]
EBNF_PIECES = COMMON_PIECES + [
    " ::= ", "::=", "root", " root ", "rule", "\nx ::= ", '"a"', "[a-z]", "[^\\n]", "\\u0000",
    "\\ud800", "\\U00110000", "\\x", "\\xff", '"\\"', "(a b)*", "&", "!", "#", " | ",
    "TagDispatch(", "Regex(", "Substring(", '("', "{0,100}){0,100}", "{0,10000}",
]
REGEX_PIECES = COMMON_PIECES + [
    "\\d", "\\w", "\\s", "\\D", "\\b", "\\p{L}", "\\u", "\\ud83d\\ude00", "\\udc00", "\\x4",
    "\\0", "(?:", "(?=", "(?!", "(?P<n>", "[^", "[a-", "\\1", "{,5}", "*?", "++", "a{0,100}",
    "(a{0,100}){0,100}", "[\\s\\S]", "\\/", "\\.",
]
LARK_PIECES = COMMON_PIECES + [
    "start:", "\nstart: ", ": ", "\nX: ", "/[a-z]+/", '"x"', "~3", "~2..5", "%ignore ", "%import ",
    "?", "!", "_", ".2", "->", "@", "NAME", "\n|", "%declare X", "/(/", "i",
]


def mutated_text(seeds, pieces, max_ops=4):
    """A seed text with 0..max_ops deletions, duplications, insertions, replacements and
    splices of other seeds (0 ops: the seed itself, which must behave)."""
    piece = st.sampled_from(pieces) | st.text(max_size=4)

    @st.composite
    def build(draw):
        text = draw(st.sampled_from(seeds))
        for _ in range(draw(st.integers(0, max_ops))):
            n = len(text)
            i = draw(st.integers(0, n))
            j = draw(st.integers(i, min(n, i + 40)))
            op = draw(st.sampled_from(["delete", "dup", "insert", "replace", "splice"]))
            if op == "delete":
                text = text[:i] + text[j:]
            elif op == "dup":
                text = text[:j] + text[i:j] * draw(st.integers(1, 50)) + text[j:]
            elif op == "insert":
                text = text[:i] + draw(piece) + text[i:]
            elif op == "replace":
                text = text[:i] + draw(piece) + text[j:]
            else:
                other = draw(st.sampled_from(seeds))
                a = draw(st.integers(0, len(other)))
                text = text[:i] + other[a:a + draw(st.integers(0, 60))] + text[j:]
        return text

    return build()


def _ebnf_literal(text):
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif not ch.isprintable() or "\ud800" <= ch <= "\udfff":
            out.append(f"\\u{ord(ch):04x}" if ord(ch) < 0x10000 else f"\\U{ord(ch):08x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


_CLASSES = ["[a-z]", "[^a]", "[0-9a-fA-F]", "[\\u00e0-\\u00ff]", "[^\\x00-\\x7f]", "[\\n\\t ]",
            "[\\ud800-\\ue000]", "[\\U0001F600-\\U0001F64F]", "[]", "[^]"]
_BOUNDS = ["*", "+", "?", "{0}", "{1}", "{3}", "{2,}", "{0,5}", "{1,50}", "{0,1000}", "{10000}",
           "{0,10000}", "{5,2}"]


def ebnf_grammars():
    """Well-formed EBNF texts (rules r0..r3 calling one another: recursion, nested bounded
    repeats, classes with surrogates, literals with escapes), to reach the compiler and the
    matcher more often than mutated text does."""
    atom = (st.text(max_size=4).map(_ebnf_literal) | st.sampled_from(_CLASSES)
            | st.sampled_from(["r0", "r1", "r2", "r3", "root"]))
    expr = st.recursive(
        atom,
        lambda inner: (st.lists(inner, min_size=2, max_size=4).map(" ".join)
                       | st.lists(inner, min_size=2, max_size=3).map(" | ".join)
                       | st.tuples(inner, st.sampled_from(_BOUNDS)).map(
                           lambda t: f"({t[0]}){t[1]}")),
        max_leaves=12)
    return st.lists(expr, min_size=5, max_size=5).map(
        lambda es: "\n".join(f"{name} ::= {e}" for name, e in zip(
            ["root", "r0", "r1", "r2", "r3"], es)))


# ---------------------------------------------------------------------------- JSON mutation

HUGE_NUMBERS = [10 ** 400, -(10 ** 400), 2 ** 63, 2 ** 64, -(2 ** 63) - 1, 1e308, -1e308,
                5e-324, float("inf"), float("nan"), -0.0, 0, -1, 1.5, 10 ** 9]
ODD_STRINGS = ["", "\x00", "a\x00b", "\ud800", "x\udcff", "\U0010ffff", "é" * 3, "^a$", "(",
               "#", "#/$defs/missing", "http://example.com/s.json", "string", "object",
               "integer", "array", "null", "date-time", "email", "uuid", "<a", "</a>"]
REF_TARGETS = ["#", "#/$defs/a", "#/$defs/b", "#/$defs/missing", "#/properties", "#/nope/0",
               "http://example.com/s.json", "", "#/$defs/a~1b", "#/items/0", "#%2F", "x.json#"]

json_scalar = (st.none() | st.booleans() | st.integers(-1000, 1000) | st.sampled_from(HUGE_NUMBERS)
               | st.floats() | st.sampled_from(ODD_STRINGS) | st.text(max_size=6))


def json_value(keys):
    return st.recursive(
        json_scalar,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
            st.sampled_from(keys) | st.text(max_size=3), inner, max_size=4),
        max_leaves=10)


class Big:
    """A large value, built only when the example runs (``materialize``), so that examples
    stay small to print and shrink: ``Big("deep", wrap, n, inner)`` nests ``inner`` n levels
    deep; ``Big("enum", kind, n)`` is an enum of n values."""

    def __init__(self, *spec):
        self.spec = spec

    def __repr__(self):
        return f"Big{self.spec!r}"

    def build(self):
        if self.spec[0] == "enum":
            _, kind, n = self.spec
            if kind == "int":
                return {"enum": list(range(n))}
            if kind == "str":
                return {"enum": [f"v{i}" for i in range(n)]}
            return {"enum": [i if i % 3 else {"k": i} for i in range(n)]}
        _, wrap, n, inner = self.spec
        node = materialize(inner)
        for _ in range(n):  # a loop, not recursion: n is up to thousands
            if wrap == "items":
                node = {"type": "array", "items": node}
            elif wrap == "properties":
                node = {"type": "object", "properties": {"a": node}, "required": ["a"]}
            elif wrap == "array":
                node = [node]
            elif wrap == "not":
                node = {"not": node}
            else:
                node = {wrap: [node]}
        return node


def materialize(value):
    """``value`` with every ``Big`` built (the seed documents are shallow: recursion is fine)."""
    if isinstance(value, Big):
        return value.build()
    if isinstance(value, dict):
        return {k: materialize(v) for k, v in value.items()}
    if isinstance(value, list):
        return [materialize(v) for v in value]
    return value


def _locations(value):
    """(container path, key) of every member/element of the nested dicts and lists."""
    out = []
    stack = [(value, ())]
    while stack:
        node, path = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) \
            if isinstance(node, list) else ()
        for k, v in items:
            out.append((path, k))
            stack.append((v, path + (k,)))
    return out


def _holder(doc, path):
    for p in path:
        doc = doc[p]
    return doc


def mutated_json(seeds, keys, specials, max_ops=3):
    """A deep copy of a seed document with 0..max_ops structural mutations: delete, duplicate
    (a subtree copied elsewhere), retype (a random JSON value), or one of ``specials``
    (functions (draw, doc, node) -> new node) applied to a random node."""
    value = json_value(keys)

    @st.composite
    def build(draw):
        doc = copy.deepcopy(draw(st.sampled_from(seeds)))
        for _ in range(draw(st.integers(0, max_ops))):
            locs = _locations(doc)
            op = draw(st.sampled_from(["delete", "dup", "retype", "special", "special"]))
            if op == "special" or not locs:
                if not locs or draw(st.booleans()):
                    doc = draw(st.sampled_from(specials))(draw, doc, doc)
                    continue
                path, key = draw(st.sampled_from(locs))
                holder = _holder(doc, path)
                holder[key] = draw(st.sampled_from(specials))(draw, doc, holder[key])
                continue
            path, key = draw(st.sampled_from(locs))
            holder = _holder(doc, path)
            if op == "delete":
                del holder[key]
            elif op == "retype":
                holder[key] = draw(value)
            else:
                src_path, src_key = draw(st.sampled_from(locs))
                holder[key] = copy.deepcopy(_holder(doc, src_path)[src_key])
        return doc

    return build()


SCHEMA_KEYS = ["type", "properties", "items", "prefixItems", "required", "enum", "const",
               "minLength", "maxLength", "minItems", "maxItems", "minimum", "maximum",
               "exclusiveMinimum", "multipleOf", "pattern", "format", "$ref", "$defs", "anyOf",
               "oneOf", "allOf", "not", "additionalProperties", "patternProperties",
               "propertyNames", "minProperties", "maxProperties", "if", "then", "else",
               "contains", "uniqueItems", "dependentRequired", "a", "b"]
_BOUND_KEYS = ["minLength", "maxLength", "minItems", "maxItems", "minProperties",
               "maxProperties", "minimum", "maximum", "exclusiveMaximum", "multipleOf",
               "minContains", "maxContains"]


def _deep(draw, doc, node):
    wrap = draw(st.sampled_from(["items", "anyOf", "properties", "not", "allOf", "array"]))
    return Big("deep", wrap, draw(st.sampled_from([5, 50, 500, 3000])), node)


def _huge_enum(draw, doc, node):
    return Big("enum", draw(st.sampled_from(["int", "str", "mixed"])),
               draw(st.sampled_from([300, 5000, 120_000])))


def _big_bound(draw, doc, node):
    node = dict(node) if isinstance(node, dict) else {}
    node[draw(st.sampled_from(_BOUND_KEYS))] = draw(st.sampled_from(
        [10 ** 4, 10 ** 6, 10 ** 12, 10 ** 400, 1e-300, 0.1, -5, 3.000001]))
    if draw(st.booleans()):
        node["pattern"] = draw(st.sampled_from(["^([a-z]{0,100}-){0,100}$", "^a{0,1000}$",
                                                "^(ab|c){5,50}$"]))
    return node


def _ref_cycle(draw, doc, node):
    if isinstance(doc, dict):
        doc.setdefault("$defs", {})
        if isinstance(doc["$defs"], dict):
            doc["$defs"].update({"a": {"$ref": "#/$defs/b"}, "b": draw(st.sampled_from(
                [{"$ref": "#/$defs/a"}, {"anyOf": [{"$ref": "#/$defs/a"}, {"type": "null"}]},
                 {"type": "array", "items": {"$ref": "#/$defs/a"}}, {"$ref": "#"}]))})
    return {"$ref": draw(st.sampled_from(REF_TARGETS))}


def _odd_string(draw, doc, node):
    s = draw(st.sampled_from(ODD_STRINGS))
    if isinstance(node, dict) and draw(st.booleans()):
        node = dict(node)
        node[s] = draw(st.sampled_from([{"type": "string"}, True, {"const": s}]))
        return node
    return draw(st.sampled_from([{"const": s}, {"pattern": s}, {"enum": [s, s]}, {"format": s},
                                 {"properties": {s: {}}, "required": [s]}, s]))


SCHEMA_SPECIALS = [_deep, _huge_enum, _big_bound, _ref_cycle, _odd_string]

# ------------------------------------------------------------------------------- the runs


class Context:
    """What every run shares in one child: the small default tokenizer and one compiler with
    the default limits but a short deadline (a finding is a run past it, not a slow compile)."""

    def __init__(self, deadline):
        self.info = xmask.default_tokenizer_info()
        self.vocab = self.info.vocab_size
        self.words = (self.vocab + 31) // 32
        self.compiler = xmask.GrammarCompiler(
            self.info, cache_enabled=False,
            limits=xmask.CompileLimits(max_compile_seconds=deadline))
        self.phase = lambda name: None  # the forked worker reports phases to its parent


def outcome(fn):
    """"ok" (or the label ``fn()`` returns) after ``fn()``; the xmask error's class name if it
    raises one (other exceptions propagate: they are findings)."""
    try:
        label = fn()
    except XmaskError as e:
        return type(e).__name__
    return label or "ok"


# Every matcher call is bounded (RuntimeLimits: work per call, also inside one parse step;
# classification: CompileLimits, one deadline per fill), so the walk runs every fill; only the
# slow reference (every token on the real stack, no limits: a test tool) is skipped once the
# matcher's steps are slow (an ambiguous grammar: fill_cost scales with the work per byte), and
# the walk is then labelled "ok, reference skipped".  A walk past fuzz_child.WALK_SECONDS is a
# finding.
REFERENCE_COST_CAP = 20_000_000


def walk(ctx, compiled, seed, steps=6):
    """Feed a few allowed tokens; the first and last masks must equal the slow reference, and
    every token a mask allows must be accepted."""
    rng = random.Random(seed)
    m = xmask.GrammarMatcher(compiled)
    fast = np.zeros((1, ctx.words), np.int32)
    ref = np.zeros((1, ctx.words), np.int32)
    label = None
    for step in range(steps):
        if m.is_terminated():
            return label
        slow = m._debug_fill_cost() > REFERENCE_COST_CAP
        m.fill_next_token_bitmask(fast)
        if step in (0, steps - 1) and slow:
            label = "ok, reference skipped"
        elif step in (0, steps - 1):
            m._reference_fill_next_token_bitmask(ref)
            assert np.array_equal(fast, ref), f"mask differs from the reference at step {step}"
        bits = np.unpackbits(fast[0].view(np.uint8), bitorder="little")[:ctx.vocab]
        allowed = np.flatnonzero(bits)
        if len(allowed) == 0:
            return label
        token = int(allowed[rng.randrange(len(allowed))])
        # (a runtime limit may stop the accept: then the matcher is in its error state)
        assert m.accept_token(token) or m.limit_error is not None, \
            f"token {token} allowed by the mask but not accepted"
        if m.limit_error is not None:
            return "ok, runtime limit"
    m.find_jump_forward_string()
    return label


def _compile_and_walk(ctx, compile_fn, seed):
    compiled = compile_fn()
    grammar = compiled.grammar
    # printing never fails, the printout reads back, and from there printing and reading are
    # a fixpoint (the first read may regroup nested sequences, never more)
    text = str(grammar)
    back = xmask.Grammar.from_ebnf(text, root_rule_name=grammar.root)
    again = str(back)
    assert str(xmask.Grammar.from_ebnf(again, root_rule_name=grammar.root)) == again, \
        "printed grammar does not read back to itself"
    ctx.phase("walk")  # compiled in time: from here a hang is the runtime's (see fuzz_child)
    return walk(ctx, compiled, seed)


def _seed_of(value):
    # not hash(): string hashes differ between processes, and a finding must replay
    return zlib.crc32(repr(value).encode("utf-8", "surrogatepass")) & 0xFFFF


def run_ebnf(ctx, text):
    return outcome(lambda: _compile_and_walk(ctx, lambda: ctx.compiler.compile_grammar(text),
                                             _seed_of(text)))


def run_regex(ctx, text):
    return outcome(lambda: _compile_and_walk(ctx, lambda: ctx.compiler.compile_regex(text),
                                             _seed_of(text)))


def run_lark(ctx, text):
    return outcome(lambda: _compile_and_walk(ctx, lambda: ctx.compiler.compile_lark(text),
                                             _seed_of(text)))


@contextlib.contextmanager
def _deep_python():
    """json.dumps of a 3,000-deep document needs more than the default 1,000 frames."""
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(max(before, 20_000))
    try:
        yield
    finally:
        sys.setrecursionlimit(before)


def run_schema(ctx, example):
    schema, as_text, options = example
    arg = schema = materialize(schema)
    if as_text:
        with _deep_python():
            arg = json.dumps(schema, ensure_ascii=bool(as_text % 2), allow_nan=True)
        if as_text == 6:  # damaged text: an xmask error with line/column, or still fine
            arg = arg[: len(arg) * 7 // 8] + "\x00"
    if not isinstance(arg, (str, dict, bool)):
        # a Python list / number / None as the schema object: a wrong type (TypeError), as
        # for any other argument; the same value as JSON text is an InvalidSchemaError
        try:
            ctx.compiler.compile_json_schema(arg, **options)
        except (TypeError, XmaskError) as e:
            return type(e).__name__
        raise AssertionError(f"a {type(arg).__name__} was taken as a schema")
    return outcome(lambda: _compile_and_walk(
        ctx, lambda: ctx.compiler.compile_json_schema(arg, **options), _seed_of(example)))


def run_structural_tag(ctx, example):
    tag, as_text = example
    tag = materialize(tag)
    arg = json.dumps(tag, allow_nan=True) if as_text else tag
    return outcome(lambda: _compile_and_walk(
        ctx, lambda: ctx.compiler.compile_structural_tag(arg), _seed_of(example)))


# --------------------------------------------------------------------------- the strategies

SCHEMA_OPTIONS = st.fixed_dictionaries({}, optional={
    "any_whitespace": st.booleans(),
    "strict_mode": st.booleans(),
    "indent": st.sampled_from([None, 0, 2, 8]),
    "separators": st.sampled_from([None, (",", ":"), (", ", ": "), (" ,", " : ")]),
    "max_whitespace_cnt": st.sampled_from([None, 1, 4]),
    "lenient": st.booleans(),
    "any_order": st.booleans(),
})

STAG_KEYS = ["type", "format", "begin", "end", "content", "elements", "triggers", "tags",
             "value", "pattern", "json_schema", "grammar", "min", "max", "excludes", "rules",
             "at_least_one", "stop_after_first", "max_chars", "style", "token"]
STAG_TYPES = ["const_string", "tag", "triggered_tags", "sequence", "or", "any_text", "regex",
              "grammar", "json_schema", "repeat", "star", "dispatch", "token", "structural_tag",
              "tags_with_separator", "qwen_xml_parameter", "nope"]


def _stag_type(draw, doc, node):
    node = dict(node) if isinstance(node, dict) else {}
    node["type"] = draw(st.sampled_from(STAG_TYPES))
    return node


def strategy(target):
    """The hypothesis strategy of inputs for ``target``."""
    if target == "ebnf":
        seeds = fuzz_seeds.gbnf_grammars() + fuzz_seeds.HAND_EBNF
        return mutated_text(seeds, EBNF_PIECES) | ebnf_grammars()
    if target == "regex":
        return mutated_text(fuzz_seeds.regex_corpus(), REGEX_PIECES)
    if target == "lark":
        return mutated_text(fuzz_seeds.HAND_LARK, LARK_PIECES)
    if target == "schema":
        docs = mutated_json(fuzz_seeds.maskbench_schemas(), SCHEMA_KEYS, SCHEMA_SPECIALS)
        return st.tuples(docs, st.integers(0, 6), SCHEMA_OPTIONS)
    if target == "structural_tag":
        docs = mutated_json(fuzz_seeds.HAND_STRUCTURAL_TAGS, STAG_KEYS,
                            [_stag_type, _odd_string, _big_bound])
        return st.tuples(docs, st.booleans())
    raise KeyError(target)


RUNS = {"ebnf": run_ebnf, "regex": run_regex, "lark": run_lark, "schema": run_schema,
        "structural_tag": run_structural_tag}
