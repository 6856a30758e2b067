#!/usr/bin/env python
"""Fingerprint every compiled automaton of a sample, to check a front-end change is exact.

Compiles a MaskBench sample (``bench_json_schema.py``'s stride, Llama-3, ``strict_mode=False,
any_whitespace=True``, cache off), the built-in JSON grammar and the GBNF grammars in the data
directory, and hashes each automaton's arrays (states, transitions, flags, calls, token edges,
nullable / FIRST / FOLLOW sets, return contexts) plus the first mask.  ``--save F`` writes the
hashes; ``--compare F`` reports every grammar whose hash differs (an error message counts as the
grammar's fingerprint).  Not a benchmark: it prints no times.

Usage:  PYTHONPATH=. python bench/check_automata.py --schemas 300 --save /tmp/before.json
        PYTHONPATH=. python bench/check_automata.py --schemas 300 --compare /tmp/before.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pathlib
import sys
import warnings

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import bench_json as bj  # noqa: E402
from bench_json_schema import sample_files  # noqa: E402

FIELDS = ("rule_names", "root_start", "rule_start", "state_rule", "n_states", "n_classes",
          "byte_class", "trans", "flags", "call_offsets", "call_target", "call_ret",
          "rule_budget", "token_set_of", "token_target", "token_bits", "nullable",
          "_first_words", "rule_follow", "rule_ctx_offsets", "rule_ctx_flat", "rule_ctx_follow")


def fingerprint(compiled, matcher_cls, bitmask) -> str:
    """sha256 over the automaton's fields and the first mask."""
    auto = compiled._automaton
    h = hashlib.sha256()
    for name in FIELDS:
        value = getattr(auto, name)
        h.update(name.encode())
        if isinstance(value, np.ndarray):
            h.update(str(value.dtype).encode() + str(value.shape).encode())
            h.update(np.ascontiguousarray(value).tobytes())
        else:
            h.update(repr(value).encode())
    bitmask.zero_()
    matcher_cls(compiled).fill_next_token_bitmask(bitmask)
    h.update(bitmask.numpy().tobytes())
    return h.hexdigest()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--schemas", type=int, default=300)
    ap.add_argument("--data", type=pathlib.Path, default=bj.DEFAULT_DATA)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--save", type=pathlib.Path)
    g.add_argument("--compare", type=pathlib.Path)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    xmask, _, compiler, bitmask = bj.xmask_llama3(args.data)

    jobs = [("builtin_json", compiler.compile_builtin_json_grammar)]
    for f in sorted((args.data / "gbnf").rglob("*.gbnf")):
        jobs.append((f.name, lambda f=f: compiler.compile_grammar(f.read_text(encoding="utf-8"))))
    for f in sample_files(args.data / "maskbench", args.schemas):
        schema = json.loads(f.read_text(encoding="utf-8"))["schema"]
        jobs.append((f.name, lambda s=schema: compiler.compile_json_schema(
            s, strict_mode=False, any_whitespace=True)))
    got = {}
    for name, job in jobs:
        try:
            got[name] = fingerprint(job(), xmask.GrammarMatcher, bitmask)
        except xmask.XmaskError as e:
            got[name] = f"{type(e).__name__}: {e}"
    n_err = sum(not v[0].isalnum() or " " in v for v in got.values())
    if args.save:
        args.save.write_text(json.dumps(got, indent=0))
        print(f"saved {len(got)} fingerprints ({n_err} errors) to {args.save}")
        return
    old = json.loads(args.compare.read_text())
    diff = sorted(k for k in set(old) | set(got) if old.get(k) != got.get(k))
    for k in diff:
        print(f"DIFF {k}: {str(old.get(k))[:80]} -> {str(got.get(k))[:80]}")
    print(f"{len(got)} grammars ({n_err} errors), {len(diff)} differ")
    sys.exit(1 if diff else 0)


if __name__ == "__main__":
    main()
