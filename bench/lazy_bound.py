#!/usr/bin/env python
"""What building rules lazily could buy the time to first mask: an estimate, beside llguidance.

xmask compiles every rule of a schema before the first mask: the front end generates each
sub-schema's rule, the automaton builds each rule's NFA and minimal DFA.  A first mask only
walks the rules its tokens can reach from the root's start.  This script measures, per schema
of the ``bench_json_schema.py`` sample (Llama-3, same options, compile cache off, CPU time of the
compiling thread, one cold run each):

* the eager time to first mask (front end + compile + matcher + first fill), and its phases;
* which called rules a first fill's walks enter: every token of the vocabulary run from the
  root's start on the pushdown automaton (the tokens it lets through are checked against the
  real first mask); with ``--horizon N``, every rule reached within N bytes instead;
* the front end's time per generated rule (the outermost ``Converter.value_expr`` calls, one
  per rule ``Converter.drain`` generates; shared
  rules made on the way count for the rule that first asked), and the NFA and DFA time of the
  reached rules: the eager phase's time times the share the reached rules take when the NFA
  and the DFAs are rebuilt for them alone and for all rules;
* the **lazy estimate**: eager time minus the front end of the rules not needed (needed: the
  reached rules, the rules inlined into them and the rules they call, whose bodies decide
  inlining), minus the NFA and DFA time of the unreached rules.  Everything else (the front
  end's fixed part, the glue, pruning, analysis, tables, matcher, fill) is kept whole;
* llguidance's time to first mask of the same schema, in the same loop.

It prints percentiles of each and the ratios to llguidance, and writes
``bench/results/lazy_bound.json``.  It is an estimate of an upper bound on the saving, not a
lazy build: no rule is left out of the grammar that is timed.

Usage:  python bench/lazy_bound.py [--schemas 100] [--horizon 0]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import bench_json as bj  # noqa: E402
from bench_json_schema import sample_files  # noqa: E402
from profile_ttfm import llguidance_first_mask  # noqa: E402
from xmask.compiler.automaton import FLAG_FINAL  # noqa: E402
from xmask.testing import bitmask_to_bool_mask  # noqa: E402

OUT = bj.REPO / "bench" / "results" / "lazy_bound.json"
clock = time.thread_time


class Spies:
    """Wraps the converter's rule queue and the automaton's NFA / DFA / inlining phases to
    record per-rule front-end time and what the rebuild of a subset needs."""

    def __init__(self):
        from xmask.compiler import automaton as am
        from xmask.grammar.json_schema import converter as cv
        self.am, self.per_rule, self.seen = am, {}, {}
        value_expr, per_rule, nesting = cv.Converter.value_expr, self.per_rule, [0]

        def timed_value_expr(conv, atoms, depth, hint, stack):
            # an outermost call is Converter.drain generating the queued rule ``hint``; the
            # nested ones (alternatives, negations) count for it
            if nesting[0]:
                return value_expr(conv, atoms, depth, hint, stack)
            nesting[0] += 1
            t = clock()
            try:
                return value_expr(conv, atoms, depth, hint, stack)
            finally:
                nesting[0] -= 1
                per_rule[hint] = per_rule.get(hint, 0.0) + clock() - t
        cv.Converter.value_expr = timed_value_expr
        for attr, key in (("_inline_small_rules", "inline"), ("_build_nfas", "nfa"),
                          ("_build_rule_dfas", "dfa")):
            self._wrap(attr, key)

    def _wrap(self, attr: str, key: str) -> None:
        fn, seen = getattr(self.am, attr), self.seen

        def timed(*a, **k):
            if key == "dfa":  # one thread: this thread's CPU time is all of it
                a, k = a[:7], {**k, "threads": 1}
            t = clock()
            out = fn(*a, **k)
            seen[key] = clock() - t
            seen[key + "_args"] = a
            if key == "inline":
                seen["inlined"] = out
            return out
        setattr(self.am, attr, timed)

    def reset(self) -> None:
        self.per_rule.clear()
        self.seen.clear()


def reached_rules(a, horizon: int) -> set:
    """Rules (indices) the automaton ``a`` reaches from the root's start within ``horizon``
    bytes: byte edges cost one, calls (to the callee's start and to the return state) none."""
    n = a.n_states
    trans = a.trans.reshape(n, a.n_classes)
    co, ct, cr = a.call_offsets.tolist(), a.call_target.tolist(), a.call_ret.tolist()
    state_rule = a.state_rule.tolist()
    seen, layer, reach = {a.root_start}, [a.root_start], set()
    for _ in range(horizon + 1):
        closed, todo = set(layer), list(layer)
        while todo:
            s = todo.pop()
            for i in range(co[s], co[s + 1]):
                for t in (ct[i], cr[i]):
                    if t >= 0 and t not in closed:
                        closed.add(t)
                        todo.append(t)
        reach.update(state_rule[s] for s in closed)
        nxt = set(np.unique(trans[list(closed)]).tolist()) - {-1}
        layer = list(nxt - seen)
        seen |= nxt
    return reach


def token_trie(info) -> dict:
    """The vocabulary's byte strings as a trie (nested dicts keyed by byte; key -1 lists the
    ids of the tokens ending at a node), special tokens left out."""
    special = set(info.special_token_ids)
    root: dict = {}
    for i, raw in enumerate(info.decoded_vocab):
        if i in special or not raw:
            continue
        node = root
        for b in raw:
            node = node.setdefault(b, {})
        node.setdefault(-1, []).append(i)
    return root


def token_reached_rules(a, trie: dict, max_depth: int = 64) -> tuple:
    """Rules (indices) a first fill's walks enter: every token is run from the root's start on
    the pushdown automaton (calls push their return state, a final state pops; sets of
    configurations, shared over the trie's prefixes), and the rule of every state met counts.
    Also returns the ids of the tokens that end with a live configuration: the first mask's
    allowed tokens, special tokens aside (``main`` checks that they are)."""
    nc, trans, flags = a.n_classes, a.trans.tolist(), a.flags.tolist()
    byte_class = a.byte_class.tolist()
    co, ct, cr = a.call_offsets.tolist(), a.call_target.tolist(), a.call_ret.tolist()
    state_rule = a.state_rule.tolist()
    final = FLAG_FINAL
    reach: set = set()

    def closure(configs):
        out, seen, todo = set(), set(), list(configs)
        while todo:
            cfg = todo.pop()
            if cfg in seen:
                continue
            seen.add(cfg)
            s, stack = cfg
            reach.add(state_rule[s])
            out.add(cfg)
            if len(stack) < max_depth:
                for i in range(co[s], co[s + 1]):
                    r = cr[i]
                    todo.append((ct[i], stack + (r,) if r >= 0 else stack))
            if flags[s] & final and stack:  # the rule may end: return to the caller's state
                todo.append((stack[-1], stack[:-1]))
        return out

    allowed: list = []
    todo = [(trie, closure({(a.root_start, ())}))]
    while todo:
        node, configs = todo.pop()
        for b, child in node.items():
            if b < 0:
                if node is not trie:
                    allowed.extend(child)
                continue
            cls = byte_class[b]
            nxt = set()
            for s, stack in configs:
                t = trans[s * nc + cls]
                if t >= 0:
                    nxt.add((t, stack))
            if nxt:
                todo.append((child, closure(nxt)))
    return reach, allowed


def needed_ir_rules(inl, called: set) -> set:
    """The IR rules a lazy build of ``called`` would need generated: those rules, every rule
    inlined into them (transitively) and every rule they call (its body decides inlining)."""
    need, todo = set(), list(called)
    while todo:
        r = todo.pop()
        if r in need:
            continue
        need.add(r)
        for x in inl.refs.get(r, ()):
            if x in inl.bodies:
                todo.append(x)
            else:
                need.add(x)
    return need


def subset_nfa_dfa(am, spies, names, keep) -> tuple:
    """CPU seconds of the NFA and of the rule DFAs of the rules ``keep`` (indices) alone."""
    inl, limits = spies.seen["inlined"], spies.seen["nfa_args"][2]
    rule_index = {n: i for i, n in enumerate(names)}
    t = clock()
    nfa = am.NFA(limits, am.dfa_of_fragment(False), inline=(inl.bodies, inl.sizes))
    starts, ends = [], []
    for i in keep:
        s, e = nfa.add_rule(names[i], inl.rules[names[i]], rule_index)
        starts.append(s)
        ends.append(e)
    arrays = nfa.arrays()
    t_nfa = clock() - t
    byte_class = am.byte_classes(arrays)
    t = clock()
    am.rule_dfas(arrays, byte_class, starts, ends, [names[i] for i in keep], limits, 0, False,
                 runs=True, threads=1)
    return t_nfa, clock() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--schemas", type=int, default=100)
    ap.add_argument("--horizon", type=int, default=0,
                    help="bytes walked from the root's start (0: run every token instead)")
    ap.add_argument("--data", type=pathlib.Path, default=bj.DEFAULT_DATA)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    xmask, info, compiler, bitmask = bj.xmask_llama3(args.data)
    trie = token_trie(info) if args.horizon == 0 else None
    special, mismatched = set(info.special_token_ids), 0
    peer = llguidance_first_mask(args.data)
    spies = Spies()
    am = spies.am
    compiler.compile_json_schema({"type": "object", "properties": {"a": {"type": "string"}}})
    rows = []
    for f in sample_files(args.data / "maskbench", args.schemas):
        schema = json.loads(f.read_text(encoding="utf-8"))["schema"]
        text = json.dumps(schema)
        t = clock()
        if peer(schema).is_error():
            continue
        t_peer = clock() - t
        spies.reset()
        t0 = clock()
        try:
            grammar = xmask.Grammar.from_json_schema(text, strict_mode=False, any_whitespace=True)
            t1 = clock()
            compiled = compiler.compile_grammar(grammar)
        except xmask.XmaskError:
            continue
        t2 = clock()
        xmask.GrammarMatcher(compiled).fill_next_token_bitmask(bitmask)
        t3 = clock()
        a = compiled._automaton
        names = spies.seen["nfa_args"][1]
        if trie is not None:
            reach, allowed = token_reached_rules(a, trie)
            # the model of the walks must allow exactly the first mask's tokens
            bits = np.asarray(bitmask_to_bool_mask(bitmask, info.vocab_size))[0]
            mask = set(np.flatnonzero(bits).tolist()) - special
            mismatched += mask != set(allowed)
            reach = sorted(reach)
        else:
            reach = sorted(reached_rules(a, args.horizon))
        need = needed_ir_rules(spies.seen["inlined"], {names[r] for r in reach})
        # both rebuilt after the eager build (warm caches): the eager phase times the share
        nfa_sub, dfa_sub = subset_nfa_dfa(am, spies, names, reach)
        nfa_all, dfa_all = subset_nfa_dfa(am, spies, names, range(len(names)))
        nfa_need = spies.seen["nfa"] * min(1.0, nfa_sub / nfa_all)
        dfa_need = spies.seen["dfa"] * min(1.0, dfa_sub / dfa_all)
        fe_rules = sum(spies.per_rule.values())
        fe_need = sum(v for k, v in spies.per_rule.items() if k in need)
        sizes = np.diff(np.append(a.rule_start, a.n_states))
        eager = t3 - t0
        lazy = eager - (fe_rules - fe_need) - (spies.seen["nfa"] - nfa_need) \
            - (spies.seen["dfa"] - dfa_need)
        rows.append(dict(
            name=f.name, llguidance=t_peer, eager=eager, lazy=lazy, front_end=t1 - t0,
            fe_rules=fe_rules, fe_needed=fe_need, nfa=spies.seen["nfa"], nfa_needed=nfa_need,
            dfa=spies.seen["dfa"], dfa_needed=dfa_need,
            rest=(t2 - t1) - spies.seen["nfa"] - spies.seen["dfa"], matcher_fill=t3 - t2,
            rules=len(names), rules_reached=len(reach),
            state_share_reached=float(sizes[reach].sum() / max(1, sizes.sum()))))
    pct = lambda k, q: float(np.percentile([r[k] for r in rows], q)) * 1e3  # noqa: E731
    how = f"horizon {args.horizon} bytes" if args.horizon else "rules the vocabulary's tokens enter"
    print(f"{len(rows)} schemas compiled by both, {how}, CPU ms, one cold run")
    print(f"{'':16}{'p50':>9}{'p75':>9}{'p90':>9}{'sum':>9}")
    for k in ("llguidance", "eager", "lazy", "front_end", "fe_rules", "fe_needed", "nfa",
              "nfa_needed", "dfa", "dfa_needed", "rest", "matcher_fill"):
        print(f"{k:16}{pct(k, 50):9.3f}{pct(k, 75):9.3f}{pct(k, 90):9.3f}"
              f"{sum(r[k] for r in rows) * 1e3:9.1f}")
    for k in ("eager", "lazy"):
        print(f"{k} / llguidance: " + ", ".join(
            f"p{q} {pct(k, q) / pct('llguidance', q):.2f}x" for q in (50, 75, 90)))
    fixed = [r["lazy"] - r["fe_needed"] - r["nfa_needed"] - r["dfa_needed"] for r in rows]
    print(f"lazy estimate without the needed rules' front end, NFA and DFA (fixed costs): "
          f"p50 {np.percentile(fixed, 50) * 1e3:.3f} p90 {np.percentile(fixed, 90) * 1e3:.3f}")
    print(f"rules reached, median share {np.median([r['rules_reached'] / r['rules'] for r in rows]):.2f}; "
          f"states in them, median share {np.median([r['state_share_reached'] for r in rows]):.2f}")
    if trie is not None:
        print(f"schemas whose first mask differs from the tokens the walk model allows: {mismatched}")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"horizon": args.horizon, "rows": rows}, indent=1))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
