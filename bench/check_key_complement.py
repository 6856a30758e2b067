#!/usr/bin/env python
"""Do two xmask trees emit the same language for "any key except the declared names"?

``word_complement_expr(words, alphabet)`` (the key rules of objects with additional
properties) may change shape between trees; its language must not.  For each word list --
random ones (prefixes of each other, the empty word, shared suffixes, 1..200 words, over
printable ASCII and over a 3-letter alphabet where a trie node can have no gap) and the word
lists the MaskBench sample's key rules are built from -- this script has each tree (a worker
process with ``PYTHONPATH=<tree>``) emit the expression, inline its rules, build the minimal
automaton (``dfa_from_expr``, canonically numbered), and test it on probe strings: every word,
every word with a character added, removed or changed, and random strings.  It compares

* the two trees' minimal automata (equal automata = equal languages),
* the two trees' answers on the probes, and each against the definition (a string of the
  alphabet that is not a word),

and, with ``--instances``, compiles each sample schema in both trees (Llama-3, as
``ttfm_ab.py``) and feeds both matchers the schema's test instances plus copies of its object
instances with an extra key near a declared name (a name with a character added, removed,
changed); the two trees must accept the same ones.

Prints counts; exit status 1 on any disagreement.

Usage:  python bench/check_key_complement.py --a /work/main --b . [--lists 2000]
        [--schemas 100] [--instances]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import random
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve()
LIT = [(0x20, 0x21), (0x23, 0x5B), (0x5D, 0x7E)]  # keys.py _LIT: printable ASCII but '"' and '\\'
SMALL = [(97, 99)]


# ---------------------------------------------------------------------------- worker (in a tree)

def _inline(e, rules, ir):
    """``e`` with every rule reference replaced by the rule's body (these rules do not recurse)."""
    if isinstance(e, ir.RuleRef):
        return _inline(rules[e.name], rules, ir)
    if isinstance(e, ir.Seq):
        return ir.Seq(tuple(_inline(x, rules, ir) for x in e.items))
    if isinstance(e, ir.Choice):
        return ir.Choice(tuple(_inline(x, rules, ir) for x in e.items))
    if isinstance(e, ir.Repeat):
        return ir.Repeat(_inline(e.item, rules, ir), e.min, e.max)
    return e


def worker(request: dict) -> dict:
    import warnings

    from xmask.grammar import ir
    from xmask.grammar.code_point_dfa import dfa_minimize
    from xmask.grammar.dfa_expr import dfa_from_expr, word_complement_expr
    from xmask.grammar.rule_sink import RuleSink

    out = {"lists": [], "instances": []}
    for words, alphabet, probes in request["lists"]:
        sink = RuleSink()
        e = word_complement_expr(words, [tuple(r) for r in alphabet], sink, "k")
        if e is None:
            out["lists"].append([None, [False] * len(probes), 0])
            continue
        d = dfa_minimize(dfa_from_expr(_inline(e, dict(sink.rules), ir)))
        out["lists"].append([[list(map(list, d.edges)), list(d.accept)], [d.matches(p) for p in probes],
                             len(sink.rules)])
    if request["schemas"]:
        sys.path.insert(0, str(HERE.parent))
        import bench_json as bj
        warnings.simplefilter("ignore")
        xmask, _, compiler, _ = bj.xmask_llama3(pathlib.Path(request["data"]))
        for schema, texts in request["schemas"]:
            try:
                g = compiler.compile_json_schema(schema, strict_mode=False, any_whitespace=True)
            except xmask.XmaskError as exc:
                out["instances"].append(f"{type(exc).__name__}: {exc}")
                continue
            got = []
            for t in texts:
                m = xmask.GrammarMatcher(g)
                ok = bool(m.accept_string(t))
                got.append(ok and bool(m.accept_token(128009)))  # (the stop token: complete)
            out["instances"].append(got)
    return out


def run_tree(tree: pathlib.Path, request: dict) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    r = subprocess.run([sys.executable, str(HERE), "--worker"], input=json.dumps(request), env=env,
                       capture_output=True, text=True, cwd="/")
    if r.returncode:
        raise SystemExit(f"worker in {tree} failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout)


# ---------------------------------------------------------------------------- inputs

def chars_of(alphabet):
    return [chr(c) for lo, hi in alphabet for c in range(lo, hi + 1)]


def random_words(rng: random.Random, alphabet) -> list:
    """1..200 words built from a few shared pieces (prefixes, suffixes, the empty word)."""
    cs = chars_of(alphabet)
    pieces = ["".join(rng.choice(cs) for _ in range(rng.randint(1, 4))) for _ in range(rng.randint(2, 12))]
    n = rng.choice([1, 2, 3, 5, 8, 20, 60, 200])
    words = set()
    for _ in range(n):
        kind = rng.random()
        if kind < 0.6:
            w = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 4)))
        elif kind < 0.8 and words:
            w = rng.choice(sorted(words))
            w = w[:rng.randint(0, len(w))]  # a prefix of another word
        else:
            w = "".join(rng.choice(cs) for _ in range(rng.randint(0, 6)))
        words.add(w)
    return sorted(words)


def probes(rng: random.Random, words, alphabet, n_random: int = 30) -> list:
    """Every word, every word with a character added / removed / changed (a few positions
    each), and random strings over the alphabet and the words' characters."""
    cs = chars_of(alphabet)
    used = sorted({ch for w in words for ch in w}) or cs
    out = {""}
    for w in words:
        out.add(w)
        for i in sorted({0, len(w), rng.randint(0, len(w))}):
            out.add(w[:i] + rng.choice(used) + w[i:])
            out.add(w[:i] + rng.choice(cs) + w[i:])
            if i < len(w):
                out.add(w[:i] + w[i + 1:])
                out.add(w[:i] + rng.choice(used) + w[i + 1:])
    for _ in range(n_random):
        pool = used if rng.random() < 0.7 else cs
        out.add("".join(rng.choice(pool) for _ in range(rng.randint(0, 8))))
    return sorted(out)


def maskbench_key_lists(tree: pathlib.Path, files) -> list:
    """The declared-name lists the sample's key rules are emitted for (in ``tree``)."""
    code = r"""
import json, sys, warnings
warnings.simplefilter("ignore")
import xmask
from xmask.grammar.json_schema import keys
seen = []
inner = keys.word_complement_expr
def spy(words, *a, **k):
    seen.append(sorted(words))
    return inner(words, *a, **k)
keys.word_complement_expr = spy
for f in json.loads(sys.stdin.read()):
    try:
        xmask.Grammar.from_json_schema(json.load(open(f))["schema"], strict_mode=False, any_whitespace=True)
    except Exception:
        pass
print(json.dumps(seen))
"""
    r = subprocess.run([sys.executable, "-c", code], input=json.dumps([str(f) for f in files]),
                       env=dict(os.environ, PYTHONPATH=str(tree)), capture_output=True, text=True, cwd="/")
    if r.returncode:
        raise SystemExit(r.stderr[-3000:])
    uniq = {tuple(w): None for w in json.loads(r.stdout)}
    return [list(w) for w in uniq]


def near_miss_instances(rng: random.Random, data) -> list:
    """``data`` with one extra key near one of its keys (recursively the top level only)."""
    if not isinstance(data, dict) or not data:
        return []
    out = []
    for k in list(data)[:4]:
        for extra in {k + "x", k[:-1], (rng.choice("abz_") + k[1:]) if k else "q", k[:1]}:
            if extra not in data:
                d = dict(data)
                d[extra] = 1
                out.append(json.dumps(d))
    return out


# ---------------------------------------------------------------------------- main

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--a", type=pathlib.Path, help="the base tree")
    ap.add_argument("--b", type=pathlib.Path, help="the new tree")
    ap.add_argument("--lists", type=int, default=2000, help="random word lists")
    ap.add_argument("--schemas", type=int, default=100, help="MaskBench sample size")
    ap.add_argument("--instances", action="store_true", help="also compare whole schemas on instances")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data", type=pathlib.Path, default=pathlib.Path("/work/shared/data"))
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(json.loads(sys.stdin.read()))))
        return
    if args.a is None or args.b is None:
        ap.error("--a and --b are required")
    sys.path.insert(0, str(HERE.parent))
    from bench_json_schema import sample_files

    rng = random.Random(args.seed)
    files = sample_files(args.data / "maskbench", args.schemas)
    lists = []
    for i in range(args.lists):
        alphabet = SMALL if i % 4 == 3 else LIT
        words = random_words(rng, alphabet)
        lists.append([words, alphabet, probes(rng, words, alphabet)])
    mb = maskbench_key_lists(args.b, files)
    for words in mb:
        lists.append([words, LIT, probes(rng, words, LIT)])
    schemas = []
    if args.instances:
        for f in files:
            d = json.loads(f.read_text(encoding="utf-8"))
            texts = []
            for t in d.get("tests", []):
                texts.append(json.dumps(t["data"]))
                texts.extend(near_miss_instances(rng, t["data"]))
            schemas.append([d["schema"], texts])
    request = {"lists": lists, "schemas": schemas, "data": str(args.data)}
    res_a, res_b = run_tree(args.a, request), run_tree(args.b, request)

    n_probe = dfa_diff = probe_diff = truth_diff = rules_b = 0
    for (words, alphabet, ps), (da, ma, _), (db, mb_, nr) in zip(lists, res_a["lists"], res_b["lists"]):
        ws, cs = set(words), set(chars_of(alphabet))
        truth = [p not in ws and all(ch in cs for ch in p) for p in ps]
        n_probe += len(ps)
        rules_b += nr > 0
        if da != db:
            dfa_diff += 1
            print(f"automata differ: {words[:8]}{'...' if len(words) > 8 else ''}")
        probe_diff += sum(x != y for x, y in zip(ma, mb_))
        truth_diff += sum(x != t for x, t in zip(mb_, truth)) + sum(x != t for x, t in zip(ma, truth))
    print(f"word lists: {len(lists)} ({args.lists} random, {len(mb)} from {len(files)} MaskBench schemas; "
          f"{rules_b} emitted with sub-rules in B)")
    print(f"  minimal automata differing: {dfa_diff}")
    print(f"  probes: {n_probe}; A/B disagreements: {probe_diff}; disagreements with the definition: {truth_diff}")
    inst_diff = n_inst = 0
    if args.instances:
        for ia, ib in zip(res_a["instances"], res_b["instances"]):
            if isinstance(ia, str) or isinstance(ib, str):
                inst_diff += ia != ib
                continue
            n_inst += len(ia)
            inst_diff += sum(x != y for x, y in zip(ia, ib))
        print(f"schemas: {len(schemas)}; instances: {n_inst} "
              f"(accepted in A: {sum(sum(x) for x in res_a['instances'] if not isinstance(x, str))}); "
              f"A/B disagreements: {inst_diff}")
    sys.exit(1 if dfa_diff or probe_diff or truth_diff or inst_diff else 0)


if __name__ == "__main__":
    main()
