#!/usr/bin/env python
"""Is the JSON schema -> grammar IR conversion unchanged?  Records, then compares, the text of
``Grammar.from_json_schema`` over a large MaskBench sample and the JSON-Schema-Test-Suite.

For every schema (MaskBench: ``--schemas`` files evenly strided, default 1,500; JSTS: every
group of draft2020-12 and draft7, ``optional/`` included) and every option set of ``OPTIONS``,
it keeps ``str(grammar)`` plus a hash of ``serialize_json()`` (or the exception's type and
message, warnings ignored).  ``--record FILE`` writes them; ``--compare FILE`` converts again
in this tree and prints every schema whose result differs (exit status 1 if any).  Timings are
not the point (see ``profile_ttfm.py``); the total conversion time is printed as a hint only.

Usage:
  PYTHONPATH=/work/main python bench/check_schema_ir_identity.py --record /tmp/ir_main.json
  PYTHONPATH=. python bench/check_schema_ir_identity.py --compare /tmp/ir_main.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pathlib
import sys
import time
import warnings

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import bench_json as bj  # noqa: E402
from bench_json_schema import sample_files  # noqa: E402

OPTIONS = {
    "ttfm": {"strict_mode": False, "any_whitespace": True},
    "default": {},
    "compact": {"any_whitespace": False, "indent": 2},
}


def schemas(data: pathlib.Path, n: int):
    """(name, schema) pairs: the MaskBench sample, then every JSTS group."""
    for f in sample_files(data / "maskbench", n):
        yield f"mb/{f.name}", json.loads(f.read_text(encoding="utf-8"))["schema"]
    for f in sorted((data / "jsts").rglob("*.json")):
        for i, group in enumerate(json.loads(f.read_text(encoding="utf-8"))):
            yield f"jsts/{f.relative_to(data / 'jsts')}#{i}", group["schema"]


def convert(schema, opts: dict) -> str:
    from xmask import Grammar
    try:
        g = Grammar.from_json_schema(schema, **opts)
    except Exception as e:  # the error is part of the result
        return f"!{type(e).__name__}: {e}"
    return str(g) + "\n#" + hashlib.sha256(g.serialize_json().encode()).hexdigest()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--schemas", type=int, default=1500, help="MaskBench files, strided (0: all)")
    ap.add_argument("--data", type=pathlib.Path, default=bj.DEFAULT_DATA)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--record", type=pathlib.Path)
    g.add_argument("--compare", type=pathlib.Path)
    args = ap.parse_args(argv)

    import xmask
    print(f"xmask from {pathlib.Path(xmask.__file__).parent}", flush=True)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 20000))
    warnings.simplefilter("ignore")
    old = json.loads(args.compare.read_text()) if args.compare else None
    out, diffs, t_total = {}, [], 0.0
    for name, schema in schemas(args.data, args.schemas):
        for tag, opts in OPTIONS.items():
            key = f"{name} [{tag}]"
            t = time.process_time()
            out[key] = res = convert(schema, opts)
            t_total += time.process_time() - t
            if old is not None and old.get(key) != res:
                diffs.append(key)
                print(f"DIFF {key}\n  old: {str(old.get(key))[:300]!r}\n  new: {res[:300]!r}",
                      flush=True)
    errors = sum(v.startswith("!") for v in out.values())
    print(f"{len(out)} conversions ({errors} raise), {t_total:.1f} s CPU converting")
    if args.record:
        args.record.write_text(json.dumps(out))
        print(f"recorded in {args.record}")
        return 0
    missing = set(old) - set(out)
    print(f"{len(diffs)} differ, {len(missing)} missing of {len(old)} recorded")
    return 1 if diffs or missing else 0


if __name__ == "__main__":
    sys.exit(main())
