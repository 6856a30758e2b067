"""Why does xmask reject valid MaskBench instances?  A per-cause table of every rejected one.

Scoring is MaskBench's (``tests/conformance/maskbench_scoring.py``: Llama-3, ``strict_mode=False``,
``any_whitespace=True``, ``json.dumps`` text walked token by token, then the stop token).  Every
valid instance the default compile rejects is put through these checks, in this order:

* ``data_error`` -- python-jsonschema (the schema's ``$schema`` draft, 2020-12 when absent, with
  its format checkers) says the instance is *not* valid: the benchmark's label is wrong.
  Formats python-jsonschema cannot check here (``uri``, ``hostname``...) are not checked.
* ``token_level`` -- ``accept_string`` of the same text is accepted, the token walk is not
  (a tokenizer/runtime disagreement, never expected).
* then the instance is *repaired* and re-walked; the repairs that are needed (each one is left
  out in turn: the cause is the set whose removal makes the walk fail again) name the cause:

  - ``member_order`` -- object members permuted: in the order of the schema's ``properties``
    map sharing most names with each object, else in an order found by a search guided by the
    grammar (:func:`ordered_text`): the documented restriction.  Whether ``any_order=True``
    (``lenient=True``: objects past ``MAX_ANY_ORDER_PROPERTIES`` keep declaration order)
    accepts the instance as it is is recorded too;
  - ``integral_float`` -- floats with an integral value written as integers (``1.0`` -> ``1``:
    ``type: integer`` accepts integer syntax only, a documented restriction);
  - ``number_spelling`` -- floats written without exponent (``1e-05`` -> ``0.00001``: numbers
    with ``multipleOf`` or non-integer-only bounds accept plain spellings only);
  - ``format`` -- the schema compiled without ``format`` keywords (the format grammars are
    sound subsets; the failing values are listed so each can be judged);

* ``unexplained`` -- no repair helps: look at it (``--show``).

``--any-order`` then measures what ``any_order=True`` costs on the files it fixes: automaton
states, compile time, time to first mask (the first fill after the compile: the lazy cache
classifies the start state), the first pass over the valid instances (every fill, states
classified as they are met) and the median fill of a second pass (cached), for the default and
for ``any_order=True`` in the same run.  The default walks the same instances with their
members in an order it accepts (what it would have generated), ``any_order`` walks them as
they are.

Usage::

    python bench/maskbench_rejects.py                       # scores all ~9,100 files first
    python bench/maskbench_rejects.py --report r.jsonl      # reuse XMASK_MASKBENCH_REPORT records
    python bench/maskbench_rejects.py --files 'Github_hard*' --show --any-order
    python bench/maskbench_rejects.py --classified bench/results/maskbench_rejects.json --any-order

Writes ``bench/results/maskbench_rejects.json`` (``--out``).
"""

from __future__ import annotations

import argparse
import collections
import fnmatch
import json
import math
import os
import pathlib
import statistics
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
import multiprocessing

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "conformance"))

import maskbench_scoring as scoring  # noqa: E402  (the benchmark's own rules)

import xmask  # noqa: E402

REPAIRS = ("member_order", "integral_float", "number_spelling", "format")
CAUSE_ORDER = ("member_order", "integral_float", "number_spelling", "format", "data_error",
               "token_level", "unexplained", "now_accepted", "not_compiled")


# ------------------------------------------------------------------ instance rewrites
def _properties_maps(schema, out):
    """Every ``properties`` map of the schema (all depths), as name lists (then names that are
    only ``required``)."""
    if isinstance(schema, dict):
        props = schema.get("properties")
        if isinstance(props, dict) and props:
            req = schema.get("required")
            extra = [r for r in req if isinstance(r, str) and r not in props] if isinstance(req, list) else []
            out.append(list(props) + extra)
        for v in schema.values():
            _properties_maps(v, out)
    elif isinstance(schema, list):
        for v in schema:
            _properties_maps(v, out)
    return out


def schema_ordered(value, maps):
    """``value`` with each object's members in the order of the ``properties`` map sharing most
    names with it (other members last, in their own order): a cheap first guess."""
    if isinstance(value, list):
        return [schema_ordered(v, maps) for v in value]
    if not isinstance(value, dict):
        return value
    best = max(maps, key=lambda names: len(set(names) & set(value)), default=None)
    keys = list(value)
    if best is not None:
        pos = {n: i for i, n in enumerate(best)}
        keys.sort(key=lambda k: pos.get(k, len(pos)))
    return {k: schema_ordered(value[k], maps) for k in keys}


def ordered_text(compiled, value, plain: bool = False):
    """A ``json.dumps`` text of ``value`` with object members permuted so that ``compiled``
    accepts it, or None.

    Each object is ordered once (its nested objects the same way), by a bounded depth-first
    search: of the members the grammar takes next, the one after which most of the remaining
    members can still come (directly or through others) is tried first -- in declaration order,
    the one declared earliest, so the first path nearly always succeeds."""
    found = {}

    def emit(m, v):
        """``m`` (not modified) advanced over ``v``: (matcher, text) or None."""
        m = m.fork()
        if isinstance(v, list):
            parts = []
            if not m.accept_string("["):
                return None
            for k, x in enumerate(v):
                if k and not m.accept_string(", "):
                    return None
                r = emit(m, x)
                if r is None:
                    return None
                m, t = r
                parts.append(t)
            return (m, "[" + ", ".join(parts) + "]") if m.accept_string("]") else None
        if isinstance(v, dict):
            t = found.get(id(v))
            if t is not None and m.fork().accept_string(t):
                m.accept_string(t)
                return m, t
            # searched again here: in a union (anyOf, oneOf) the order may depend on the place
            t = order_object(m, v)
            if t is None:
                return None
            found[id(v)] = t
            return (m, t) if m.accept_string(t) else None
        t = dumps(v, plain)
        return (m, t) if m.accept_string(t) else None

    def order_object(m, obj, budget=2000):
        m = m.fork()
        if not m.accept_string("{"):
            return None
        nxt = {}  # nxt[name]: the remaining members the grammar takes right after it
        dead = set()
        left = [budget]

        def later(name, rest):  # the remaining members that may come after ``name``
            seen, todo = set(), [name]
            while todo:
                for o in nxt.get(todo.pop(), ()):
                    if o not in seen and o in rest:
                        seen.add(o)
                        todo.append(o)
            return seen

        def place(m, rest, done, last):
            """Depth first, best candidate first: the member order from here, or None."""
            if not rest:
                return "{" + ", ".join(done) + "}" if m.fork().accept_string("}") else None
            key = (frozenset(rest), last)
            left[0] -= 1
            if key in dead or left[0] < 0:
                return None
            cands = []
            for name in rest:
                m2 = m.fork()
                head = (", " if done else "") + json.dumps(name) + ": "
                r = emit(m2, obj[name]) if m2.accept_string(head) else None
                if r is None:
                    continue
                m3, t = r
                # measured here: in a union of object grammars (anyOf) it depends on the place
                nxt[name] = {o for o in rest if o != name
                             and m3.fork().accept_string(", " + json.dumps(o) + ": ")}
                cands.append((name, m3, json.dumps(name) + ": " + t))
            # the member declared earliest leaves every other one reachable after it
            cands.sort(key=lambda c: -len(later(c[0], rest)))
            for name, m3, text in cands:
                r = place(m3, [n for n in rest if n != name], done + [text], name)
                if r is not None:
                    return r
            dead.add(key)
            return None

        return place(m, list(obj), [], None)

    r = emit(xmask.GrammarMatcher(compiled), value)
    return None if r is None else r[1]


def integral_floats_as_ints(value):
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [integral_floats_as_ints(v) for v in value]
    if isinstance(value, dict):
        return {k: integral_floats_as_ints(v) for k, v in value.items()}
    return value


def _plain_number(x: float) -> str:
    """``x`` in plain decimal notation (no exponent), as ``json.dumps`` would otherwise write it."""
    import decimal

    s = format(decimal.Decimal(repr(x)), "f")
    return s if "." in s else s + ".0"


def dumps(value, plain: bool = False) -> str:
    """``json.dumps(value)``; with ``plain`` floats are written without exponent."""
    if not plain:
        return json.dumps(value)
    if isinstance(value, float) and math.isfinite(value) and "e" in repr(value):
        return _plain_number(value)
    if isinstance(value, list):
        return "[" + ", ".join(dumps(v, True) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)}: {dumps(v, True)}" for k, v in value.items()) + "}"
    return json.dumps(value)


def strip_formats(schema):
    """The schema without ``format`` keywords (inside every subschema; property *names*
    called ``format`` are kept)."""
    if isinstance(schema, list):
        return [strip_formats(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for k, v in schema.items():
        if k == "format" and isinstance(v, str):
            continue
        if k in ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas") \
                and isinstance(v, dict):
            out[k] = {n: strip_formats(s) for n, s in v.items()}
        else:
            out[k] = strip_formats(v)
    return out


# ------------------------------------------------------------------ reference validation
def jsonschema_errors(schema, instance) -> list:
    """python-jsonschema's errors for the instance (draft from ``$schema``, formats asserted);
    ``["cannot validate: ..."]`` when it cannot run."""
    import jsonschema
    from jsonschema.validators import validator_for

    try:
        cls = validator_for(schema, default=jsonschema.Draft202012Validator)
        v = cls(schema, format_checker=cls.FORMAT_CHECKER)
        return [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:160]}"
                for e in v.iter_errors(instance)][:5]
    except Exception as e:  # unresolvable remote $ref, bad regex for Python's re, ...
        return [f"cannot validate: {type(e).__name__}: {str(e)[:160]}"]


# ------------------------------------------------------------------ acceptance
_W = {}


def init_worker(tok_dir: str) -> None:
    scoring.init_worker(tok_dir)
    _W["compiler"] = scoring._ENV["compiler"]
    warnings.simplefilter("ignore")


def _accepts(compiled, text: str) -> bool:
    ids = scoring._ENV["hf"].encode(text, add_special_tokens=False).ids
    return scoring.walk(compiled, ids, scoring._ENV["info"].stop_token_ids[0], scoring._ENV["bitmask"]) == ""


def _accepts_string(compiled, text: str) -> bool:
    m = xmask.GrammarMatcher(compiled)
    if not m.accept_string(text):
        return False
    return m.accept_token(scoring._ENV["info"].stop_token_ids[0]) and m.is_terminated()


def _any_order_accepts(inst, variant) -> bool:
    c = variant("any_order")
    return not isinstance(c, Exception) and _accepts(c, json.dumps(inst))


def where_rejected(compiled, text: str, context: int = 60) -> str:
    """The text around the first character the grammar rejects (or ``at end``)."""
    m = xmask.GrammarMatcher(compiled)
    for k, ch in enumerate(text):
        if not m.accept_string(ch):
            return f"at char {k}: ...{text[max(0, k - context):k]}<<HERE>>{text[k:k + 20]}..."
    return "accepted" if _accepts_string(compiled, text) else "at end (cannot terminate)"


def _compile(schema, **extra):
    try:
        return _W["compiler"].compile_json_schema(schema, **scoring.COMPILE_OPTIONS, **extra)
    except Exception as e:  # a repair compile that fails just does not help
        return e


def classify_file(path: str) -> dict:
    """Classify every valid instance of one file that the default compile rejects."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    schema = data["schema"]
    fname = os.path.basename(path)
    out = {"file": fname, "instances": []}
    compiled = _compile(schema)
    if isinstance(compiled, Exception):
        out["not_compiled"] = f"{type(compiled).__name__}: {str(compiled)[:200]}"
        return out
    lazy = {}

    def variant(name):
        if name not in lazy:
            if name == "any_order":
                lazy[name] = _compile(schema, any_order=True, lenient=True)
            else:
                lazy[name] = _compile(strip_formats(schema))
        return lazy[name]

    maps = _properties_maps(schema, [])
    for i, case in enumerate(data["tests"]):
        if not case["valid"]:
            continue
        inst = case["data"]
        text = json.dumps(inst)
        if _accepts(compiled, text):
            continue
        rec = {"index": i, "text": text[:300]}
        out["instances"].append(rec)
        errs = jsonschema_errors(schema, inst)
        if errs:
            rec["cause"], rec["detail"] = "data_error", errs
            continue
        if _accepts_string(compiled, text):
            rec["cause"] = "token_level"
            continue
        rec["cause"], rec["repairs"] = "unexplained", []
        needed = _needed_repairs(inst, compiled, variant, maps)
        if needed is None:  # where the walk stops, on the text with the value repairs
            rec["detail"] = where_rejected(compiled, dumps(_repaired(inst, REPAIRS), True))
        else:
            rec["repairs"] = needed
            rec["cause"] = "+".join(needed)
            if "format" in needed:
                rec["detail"] = _format_values(schema, inst)
            if "member_order" in needed:
                rec["any_order_accepts"] = _any_order_accepts(inst, variant)
    return out


def _repaired(inst, repairs):
    return integral_floats_as_ints(inst) if "integral_float" in repairs else inst


def _accepted_with(inst, repairs, compiled, variant, maps) -> bool:
    target = variant("format") if "format" in repairs else compiled
    if isinstance(target, Exception):
        return False
    v, plain = _repaired(inst, repairs), "number_spelling" in repairs
    if "member_order" in repairs:
        if _accepts(target, dumps(schema_ordered(v, maps), plain)):
            return True
        text = ordered_text(target, v, plain)
        return text is not None and _accepts(target, text)
    return _accepts(target, dumps(v, plain))


def _needed_repairs(inst, compiled, variant, maps):
    """The repairs after which the instance is accepted, each one left out in turn and dropped
    if it is not needed; None if even all of them do not help."""
    have = set(REPAIRS)
    if not _accepted_with(inst, have, compiled, variant, maps):
        return None
    for r in REPAIRS:
        if _accepted_with(inst, have - {r}, compiled, variant, maps):
            have.discard(r)
    return [r for r in REPAIRS if r in have]


def _format_values(schema, inst):
    """(format, value) pairs of the schema's formats that the instance's strings use: a hint."""
    fmts = set()

    def walk(s):
        if isinstance(s, dict):
            if isinstance(s.get("format"), str):
                fmts.add(s["format"])
            for v in s.values():
                walk(v)
        elif isinstance(s, list):
            for v in s:
                walk(v)

    walk(schema)
    return sorted(fmts)


# ------------------------------------------------------------------ finding the rejects
def score_all(files, tok_dir, jobs):
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(jobs, mp_context=ctx, initializer=scoring.init_worker,
                             initargs=(tok_dir,)) as pool:
        return list(pool.map(scoring.score_file, files, chunksize=4))


def table(files_out) -> str:
    per = collections.Counter()
    per_files = collections.defaultdict(set)
    for fo in files_out:
        if fo.get("not_compiled"):
            per["not_compiled"] += 1
            per_files["not_compiled"].add(fo["file"])
        for r in fo["instances"]:
            per[r["cause"]] += 1
            per_files[r["cause"]].add(fo["file"])
    causes = [c for c in CAUSE_ORDER if c in per] + sorted(c for c in per if c not in CAUSE_ORDER)
    lines = [f"{'cause':<34}{'files':>7}{'instances':>11}"]
    for c in causes:
        lines.append(f"{c:<34}{len(per_files[c]):>7}{per[c]:>11}")
    all_files = {fo["file"] for fo in files_out if fo["instances"]}
    lines.append(f"{'TOTAL':<34}{len(all_files):>7}{sum(per.values()) - per['not_compiled']:>11}")
    return "\n".join(lines)


# ------------------------------------------------------------------ any_order cost
def any_order_cost(path: str) -> dict:
    """Default vs ``any_order=True`` on one file: states, compile, first and steady masks."""
    import numpy as np

    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    info, hf = scoring._ENV["info"], scoring._ENV["hf"]
    out = {"file": os.path.basename(path)}
    values = [c["data"] for c in data["tests"] if c["valid"]]
    maps = _properties_maps(data["schema"], [])
    for name, extra in (("default", {}), ("any_order", {"any_order": True, "lenient": True})):
        compiler = xmask.GrammarCompiler(info, max_threads=1, cache_enabled=False)
        t0 = time.perf_counter()
        try:
            cg = compiler.compile_json_schema(data["schema"], **scoring.COMPILE_OPTIONS, **extra)
        except Exception as e:
            out[name] = {"error": f"{type(e).__name__}: {str(e)[:200]}"}
            continue
        compile_s = time.perf_counter() - t0
        texts = [json.dumps(v) for v in values]
        if name == "default":  # the same instances with members in an order it accepts
            texts = [_in_accepted_order(cg, v, maps) or t for v, t in zip(values, texts)]
        bm = np.asarray(xmask.allocate_token_bitmask(1, info.vocab_size))
        m = xmask.GrammarMatcher(cg)
        t1 = time.perf_counter()
        m.fill_next_token_bitmask(bm)
        first = time.perf_counter() - t1
        passes, accepted = [], 0
        for rep in range(2):  # pass 1 classifies states lazily as it meets them, pass 2 is cached
            fills = []
            for text in texts:
                m = xmask.GrammarMatcher(cg)
                ok = True
                for tid in hf.encode(text, add_special_tokens=False).ids + [None]:
                    t = time.perf_counter()
                    m.fill_next_token_bitmask(bm)
                    fills.append(time.perf_counter() - t)
                    if tid is None:
                        break
                    if not m.accept_token(tid):
                        ok = False
                        break
                accepted += ok and rep == 1
            passes.append(fills)
        first_pass, steady = passes
        out[name] = {"compile_ms": compile_s * 1e3, "first_mask_ms": first * 1e3,
                     "first_pass_total_ms": sum(first_pass) * 1e3,
                     "first_pass_ms_per_fill": sum(first_pass) * 1e3 / max(1, len(first_pass)),
                     "steady_mask_us": statistics.median(steady) * 1e6,
                     "steady_mask_mean_us": statistics.mean(steady) * 1e6, "masks": len(steady),
                     "states": int(cg._automaton.n_states),  # as bench_compile_limits
                     "top_states": cg.cache_summary()["top_states"], "valid_accepted": accepted,
                     "valid": len(texts)}
    return out


def _in_accepted_order(compiled, value, maps):
    """``value``'s text with members in an order ``compiled`` accepts, or None."""
    for text in (json.dumps(value), json.dumps(schema_ordered(value, maps))):
        if _accepts(compiled, text):
            return text
    text = ordered_text(compiled, value)
    return text if text is not None and _accepts(compiled, text) else None


def print_any_order(rows):
    ok = [r for r in rows if "compile_ms" in r.get("default", {}) and "compile_ms" in r.get("any_order", {})]
    print(f"\nany_order=True vs default on the {len(ok)} files it fixes (same run, ratios any/default):")
    hdr = (f"{'file':<44}{'states':>16}{'compile ms':>20}{'1st mask ms':>18}{'1st pass ms/fill':>18}"
           f"{'steady p50 us':>16}{'valid ok':>10}")
    print(hdr)
    agg = collections.defaultdict(list)
    for r in ok:
        d, a = r["default"], r["any_order"]
        cells = []
        for k, w in (("states", 16), ("compile_ms", 20), ("first_mask_ms", 18), ("first_pass_ms_per_fill", 18),
                     ("steady_mask_us", 16)):
            if d[k] is None or a[k] is None:
                cells.append("-".rjust(w))
                continue
            cells.append(f"{d[k]:.4g}->{a[k]:.4g}".rjust(w))
            if d[k]:
                agg[k].append(a[k] / d[k])
        print(f"{r['file'][:43]:<44}{''.join(cells)}{d['valid_accepted']:>4}->{a['valid_accepted']:<5}")
    for k, v in agg.items():
        tot_d = sum(r["default"][k] for r in ok if r["default"][k] is not None)
        tot_a = sum(r["any_order"][k] for r in ok if r["any_order"][k] is not None)
        print(f"  {k}: any_order/default per file median {statistics.median(v):.2f}x, "
              f"geo-mean {statistics.geometric_mean(v):.2f}x, max {max(v):.2f}x; "
              f"summed over files {tot_d:.4g} -> {tot_a:.4g} ({tot_a / tot_d:.2f}x)")
    for r in rows:
        if r not in ok:
            print(f"  {r['file']}: {r.get('default', {}).get('error') or r.get('any_order', {}).get('error')}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=os.environ.get("XMASK_DATA", str(ROOT.parent / "shared" / "data")))
    ap.add_argument("--report", help="JSONL of scoring records (XMASK_MASKBENCH_REPORT); default: score now")
    ap.add_argument("--files", default="*", help="glob of MaskBench file names")
    ap.add_argument("--jobs", type=int, default=max(1, min(os.cpu_count() or 1, 8)))
    ap.add_argument("--show", action="store_true", help="print every rejected instance with its cause")
    ap.add_argument("--any-order", action="store_true", help="measure any_order=True on the files it fixes")
    ap.add_argument("--classified", help="a JSON this script wrote: reuse its classification "
                    "(with --any-order: measure only)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "maskbench_rejects.json"))
    a = ap.parse_args(argv)
    mb = pathlib.Path(a.data) / "maskbench"
    tok_dir = str(pathlib.Path(a.data) / "tokenizers" / "llama3")
    if a.classified:
        recs = []
    elif a.report:
        recs = [json.loads(line) for line in open(a.report, encoding="utf-8")]
        recs = [r for r in recs if fnmatch.fnmatch(r["file"], a.files)]
    else:
        files = sorted(str(p) for p in mb.glob(a.files) if p.suffix == ".json")
        t = time.perf_counter()
        recs = score_all(files, tok_dir, a.jobs)
        print(f"scored {len(recs)} files in {time.perf_counter() - t:.0f} s")
    todo = sorted({str(mb / r["file"]) for r in recs if r.get("valid_rejected")})
    print(f"{len(todo)} files with rejected valid instances "
          f"({sum(len(r.get('valid_rejected') or ()) for r in recs)} instances in the records)")
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(a.jobs, mp_context=ctx, initializer=init_worker, initargs=(tok_dir,)) as pool:
        if a.classified:
            files_out = json.loads(pathlib.Path(a.classified).read_text())["files"]
        else:
            files_out = list(pool.map(classify_file, todo))
        for fo in files_out:
            if not fo["instances"] and not fo.get("not_compiled"):
                fo["instances"] = []  # accepted now (fixed since the records were written)
        fixed = 0 if a.classified else \
            sum(1 for r in recs if r.get("valid_rejected")) - sum(1 for fo in files_out if fo["instances"])
        if a.show:
            for fo in files_out:
                for r in fo["instances"]:
                    print(f"{fo['file']} #{r['index']} {r['cause']} {r.get('detail', '')}\n    {r['text'][:200]}")
        print(table(files_out))
        if fixed:
            print(f"({fixed} files of the records have no rejected valid instance any more)")
        result = {"files": files_out, "table": table(files_out)}
        if a.any_order:
            mo = [r for fo in files_out for r in fo["instances"] if "member_order" in r["cause"]]
            print(f"\nany_order=True accepts {sum(1 for r in mo if r.get('any_order_accepts'))} of the "
                  f"{len(mo)} member-order instances")
            fixes = sorted(str(mb / fo["file"]) for fo in files_out
                           if any(r.get("any_order_accepts") for r in fo["instances"]))
            # one measuring process: timings of two workers sharing the cores would disturb
            # each other
            with ProcessPoolExecutor(1, mp_context=ctx, initializer=init_worker, initargs=(tok_dir,)) as one:
                rows = list(one.map(any_order_cost_worker, fixes))
            print_any_order(rows)
            result["any_order"] = rows
    pathlib.Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    pathlib.Path(a.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {a.out}")


def any_order_cost_worker(path):
    return any_order_cost(path)


if __name__ == "__main__":
    main()
