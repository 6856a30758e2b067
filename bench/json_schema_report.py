"""Tables of bench_json_schema.py: compile, masks per pass, time to first mask, xmask phases."""

from __future__ import annotations

import collections
import re

import bench_json as bj

XMASK_VARIANTS = ("xmask", "xmask-eager")
PEERS = ("xgrammar", "llguidance")
PHASES = (("schema_to_grammar_ms", "schema -> Grammar"), ("grammar_to_compiled_ms", "Grammar -> CompiledGrammar"),
          ("automaton_ms", "  of which automaton"), ("mask_cache_ms", "  of which eager mask cache"),
          ("matcher_init_ms", "matcher creation"), ("first_mask_ms", "first fill"))


def ratio_columns(engines, kind):
    """(numerator, denominator) engine pairs: "peer/x" (> 1: xmask lower) or "x/peer" (<= 1: xmask at or below)."""
    xs = [e for e in engines if e in XMASK_VARIANTS]
    ps = [e for e in engines if e in PEERS]
    return [(p, x) if kind == "peer/x" else (x, p) for x in xs for p in ps]


def row(label, summ, engines, get, ratios=()):
    """[label, value per engine, a/b per ratio pair]; get(engine summary) -> value (None: "-")."""
    vals = {}
    for e in engines:
        try:
            vals[e] = get(summ["engines"][e])
        except (KeyError, TypeError):
            vals[e] = None
    return [label, *[bj._fmt(vals[e]) for e in engines], *[ratio(vals[a], vals[b]) for a, b in ratios]]


def ratio(a, b):
    """a / b with 3 significant digits."""
    if a is None or b is None or b == 0:
        return "-"
    return f"{a / b:.3g}x"


def print_table(header, rows):
    """A one-cell row is a section title, printed across the table."""
    cells = [header, *[[str(c) for c in r] for r in rows]]
    widths = [max(len(r[i]) for r in cells if len(r) > 1) for i in range(len(header))]
    for j, r in enumerate(cells):
        if len(r) == 1:
            print(r[0])
            continue
        print(" | ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))))
        if j == 0:
            print("-+-".join("-" * w for w in widths))


def padded(rows, width):
    """Rows without ratio cells padded to the table width (section titles stay one cell)."""
    return [r if len(r) == 1 else r + [""] * (width - len(r)) for r in rows]


def report_main(summ, engines, limit_s):
    """Counts, compile, both mask passes, lazy-cache shares and correctness, ratios peer/xmask."""
    nc, ni = summ["common_schemas"], summ["common_valid_instances"]
    rc = ratio_columns(engines, "peer/x")
    g = summ["engines"]
    rows = [
        row("schemas", summ, engines, lambda s: s["schemas"]),
        row("compiled", summ, engines, lambda s: s["compiled"]),
        row("unsupported (compile error)", summ, engines, lambda s: s["unsupported"]),
        row(f"timeout (> {limit_s:g} s)", summ, engines, lambda s: s["timeout"]),
        [f"-- compile, the {nc} schemas all engines compiled (ratios peer/xmask: > 1 = xmask faster) --"],
    ]
    for key, name, stats in (("compile_ms_common", "compile", ("mean", "p50", "p90", "max")),
                             ("first_mask_ms_common", "first mask", ("p50", "max"))):
        rows += [row(f"{name} {st} (ms)", summ, engines, lambda s, k=key, st=st: s[k][st], rc) for st in stats]
    rows.append(row("compiled memory p50 (KiB)", summ, engines,
                     lambda s: s["compiled_memory_bytes_p50"] / 1024))
    if any(g[e].get("memory_after_first_pass_bytes_p50") for e in engines):
        rows.append(row("memory after first pass p50 (KiB)", summ, engines,
                         lambda s: s["memory_after_first_pass_bytes_p50"] / 1024))
    rows.append(["-- compile, each engine's own compiled schemas (no ratios: different sets) --"])
    rows += [row(f"compile {st} (ms)", summ, engines, lambda s, st=st: s["compile_ms_own"][st])
             for st in ("mean", "p50", "p90", "max")]
    for p, what in ((1, "FIRST PASS (fresh grammar: a lazy cache classifies states here)"),
                    (2, "STEADY STATE (second pass, new matchers, same grammar)")):
        rows.append([f"-- mask, {what}: {ni} valid instances of the {nc} common schemas, accepted by all "
                     "(ratios peer/xmask) --"])
        rows.append(row("tokens masked (incl. the end)", summ, engines, lambda s, p=p: s[f"mask_pass{p}_us_common"]["n"]))
        rows += [row(f"mask {st} (us)", summ, engines, lambda s, st=st, p=p: s[f"mask_pass{p}_us_common"][st], rc)
                 for st in ("mean", "p50", "p99", "p99.9", "max")]
    for p in (1, 2):
        rows.append([f"-- mask, pass {p}, every valid instance each engine walked (own sets) --"])
        rows.append(row("tokens masked", summ, engines, lambda s, p=p: s[f"mask_pass{p}_us_own"]["n"]))
        rows += [row(f"mask {st} (us)", summ, engines, lambda s, st=st, p=p: s[f"mask_pass{p}_us_own"][st])
                 for st in ("mean", "p50", "p99", "p99.9", "max")]
    lazy = [e for e in engines if (g[e].get("classified_share_after_first_pass") or {}).get("n")]
    if lazy:
        rows.append(["-- lazy cache: classified / top states, per schema (own sets) --"])
        for key, name in (("classified_share_after_first_mask", "after first mask"),
                          ("classified_share_after_first_pass", "after first pass")):
            rows += [row(f"{name} {st} (%)", summ, engines, lambda s, k=key, st=st: 100 * s[k][st])
                     for st in ("p50", "p90")]
    rows.append(["-- correctness, own compiled schemas --"])
    for k, label in (("valid", "valid instances walked"), ("valid_accepted", "valid accepted (tokens + stop)"),
                     ("mask_disallows_token", "mask_disallows_token (tokens)"),
                     ("accept_failed", "valid rejected (accept failed)"), ("stop_not_allowed", "stop not allowed"),
                     ("exceptions", "exceptions while walking"), ("invalid", "invalid instances walked"),
                     ("invalid_wrongly_accepted", "invalid wrongly accepted")):
        rows.append(row(label, summ, engines, lambda s, k=k: s["counts_own"][k]))
    rows.append([f"-- correctness, the {nc} common schemas --"])
    for k, label in (("valid", "valid instances walked"), ("valid_accepted", "valid accepted"),
                     ("invalid", "invalid instances walked"), ("invalid_wrongly_accepted", "invalid wrongly accepted")):
        rows.append(row(label, summ, engines, lambda s, k=k: s["counts_common"][k]))
    header = ["metric", *engines, *[f"{a}/{b}" for a, b in rc]]
    print_table(header, padded(rows, len(header)))


def report_ttfm(summ, engines):
    """Time to first mask, the issue's headline: xmask/peer ratios (<= 1: xmask at or below the peer)."""
    nc = summ["common_schemas"]
    rc = ratio_columns(engines, "x/peer")
    print(f"\nTIME TO FIRST MASK = compile + matcher creation + first fill (ms); ratios xmask/peer, "
          "<= 1 means xmask is at or below the peer")
    rows = [[f"-- the {nc} schemas all engines compiled --"]]
    rows += [row(f"TTFM {st} (ms)", summ, engines, lambda s, st=st: s["ttfm_ms_common"][st], rc)
             for st in ("p50", "p90", "p99", "max")]
    rows.append(["-- each engine's own compiled schemas (no ratios: different sets) --"])
    rows += [row(f"TTFM {st} (ms)", summ, engines, lambda s, st=st: s["ttfm_ms_own"][st])
             for st in ("p50", "p90", "p99", "max")]
    header = ["metric", *engines, *[f"{a}/{b}" for a, b in rc]]
    print_table(header, padded(rows, len(header)))


def report_phases(summ, engines):
    """xmask's TTFM split by phase (only for xmask columns with phase records)."""
    xs = [e for e in engines if summ["engines"][e].get("ttfm_phases_common")]
    if not xs:
        return
    print(f"\nxmask TTFM by phase, the {summ['common_schemas']} common schemas: p50 / p90 ms and share of the "
          "summed TTFM (schema -> Grammar includes the compiler's overhead)")
    header = ["phase", *[f"{e} {c}" for e in xs for c in ("p50 ms", "p90 ms", "share")]]
    rows = []
    for key, label in PHASES:
        row = [label]
        for e in xs:
            d = summ["engines"][e]["ttfm_phases_common"].get(key)
            row += ["-", "-", "-"] if d is None else [bj._fmt(d["p50"]), bj._fmt(d["p90"]),
                                                      f"{100 * d['share_of_ttfm']:.1f}%"]
        rows.append(row)
    print_table(header, rows)


def report(summ, engines, per_schema, items, limit_s, slow_ms):
    """Every table; returns (per-collection counts, slow compiles, unsupported messages) for the JSON."""
    report_main(summ, engines, limit_s)
    report_ttfm(summ, engines)
    report_phases(summ, engines)

    # per-collection compile counts
    print()
    by_col = collections.defaultdict(lambda: collections.Counter())
    for item, recs in zip(items, per_schema):
        c = by_col[item["collection"]]
        c["schemas"] += 1
        for e in engines:
            c[e] += recs[e]["status"] == "ok"
        c["all"] += all(recs[e]["status"] == "ok" for e in engines)
    cols = ["schemas", *engines, "all"]
    total = sum(by_col.values(), collections.Counter())
    print_table(["collection (compiled)", *cols],
                [[name, *[by_col[name][c] for c in cols]] for name in sorted(by_col)]
                + [["total", *[total[c] for c in cols]]])
    collections_table = {name: dict(by_col[name]) for name in sorted(by_col)}

    # slow compiles and error kinds
    slow = {e: sorted(((recs[e]["compile_ms"], item["file"], recs[e]["status"])
                       for item, recs in zip(items, per_schema) if recs[e]["compile_ms"] > slow_ms), reverse=True)
            for e in engines}
    errors = {}
    for e in engines:
        kinds = collections.Counter(re.sub(r"\d+", "N", recs[e]["error"])[:110]
                                    for recs in per_schema if recs[e].get("error"))
        errors[e] = kinds.most_common()
    for e in engines:
        print(f"\n[{e}] compiles over {slow_ms / 1e3:g} s: {len(slow[e])}")
        for ms, f, st in slow[e]:
            print(f"    {ms / 1e3:8.2f} s  {f}{'' if st == 'ok' else '  (' + st + ')'}")
        print(f"[{e}] unsupported, by message ({sum(c for _, c in errors[e])}):")
        for msg, c in errors[e][:8]:
            print(f"    {c:4d}  {msg}")
    return collections_table, slow, errors
