"""MaskBench schema scoring: one file -> compile (or UnsupportedSchemaError) -> every instance
walked token by token on the Llama-3 tokenizer.

Imported by ``test_maskbench_schemas.py`` in worker processes (spawn), so it keeps per-process
state in module globals and returns plain dicts.

Rules (the issue's): the schema is compiled with ``strict_mode=False`` (the JSON Schema spec's
defaults: extra properties and items allowed unless the schema says otherwise) and
``any_whitespace=True``; each instance is ``json.dumps(data)`` (default ``", "``/``": "``
separators), tokenized without BOS, and accepted token by token; then the filled mask must allow
the stop token and the matcher must accept it.  A valid instance passes iff all of that holds;
an invalid one passes iff it does not.

Compiles leave the token-mask cache lazy (the default): acceptance never reads the cache, and the
final mask classifies only the states on top of the stack at the end.  The cache itself is
checked against the slow reference on a sample in the test module.
"""

from __future__ import annotations

import json
import os
import re
import signal
import time

import xmask
from schema_scoring import walk_tokens
from xmask.errors import GrammarError, GrammarLimitError, InvalidSchemaError, UnsupportedSchemaError

COMPILE_OPTIONS = {"strict_mode": False, "any_whitespace": True}
COMPILE_TIMEOUT_S = int(os.environ.get("XMASK_MASKBENCH_COMPILE_TIMEOUT", "60"))

_ENV = {}


def collection_of(fname: str) -> str:
    return re.split(r"---|_", fname, maxsplit=1)[0]


class _CompileTimeout(Exception):
    pass


def _on_alarm(signum, frame):
    raise _CompileTimeout()


def init_worker(tokenizer_dir: str) -> None:
    """Load the tokenizer once per process."""
    import tokenizers

    info = xmask.TokenizerInfo.from_huggingface(tokenizer_dir)
    compiler = xmask.GrammarCompiler(info, max_threads=1, cache_enabled=False)
    _ENV.update(
        info=info,
        compiler=compiler,
        hf=tokenizers.Tokenizer.from_file(os.path.join(tokenizer_dir, "tokenizer.json")),
        bitmask=xmask.allocate_token_bitmask(1, info.vocab_size),
    )


def walk(compiled, ids, stop_id: int, bitmask) -> str:
    """'' if ``ids`` are accepted one by one and then ``stop_id`` is allowed by the filled mask
    and accepted (terminating the matcher); otherwise why not."""
    w = walk_tokens(xmask.GrammarMatcher(compiled), ids, bitmask, [stop_id])
    return "" if w.accepted else f"{w.reason} at token {w.step}/{len(ids)}"


def score_file(path: str) -> dict:
    """Score one MaskBench file; returns a JSON-able record."""
    fname = os.path.basename(path)
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    rec = {"file": fname, "collection": collection_of(fname), "valid": 0, "invalid": 0,
           "valid_accepted": 0, "invalid_rejected": 0, "invalid_accepted": [], "valid_rejected": []}
    for case in data["tests"]:
        rec["valid" if case["valid"] else "invalid"] += 1
    compiler = _ENV["compiler"]
    t0 = time.perf_counter()
    old = signal.signal(signal.SIGALRM, _on_alarm)
    signal.alarm(COMPILE_TIMEOUT_S)
    try:
        compiled = compiler.compile_json_schema(data["schema"], **COMPILE_OPTIONS)
        rec["status"] = "compiled"
    except UnsupportedSchemaError as e:
        rec["status"], rec["reason"] = "unsupported", str(e)[:300]
    except InvalidSchemaError as e:  # malformed (a keyword of the wrong type): a clear refusal
        rec["status"], rec["reason"] = "invalid_schema", str(e)[:300]
    except GrammarLimitError as e:
        rec["status"], rec["reason"] = "limit", str(e)[:300]
    except GrammarError as e:  # e.g. a schema no JSON value satisfies
        rec["status"], rec["reason"] = "grammar_error", str(e)[:300]
    except _CompileTimeout:
        rec["status"], rec["reason"] = "timeout", f"compile took over {COMPILE_TIMEOUT_S} s"
    except Exception as e:  # anything else is a bug: reported, never hidden
        rec["status"], rec["reason"] = "error", f"{type(e).__name__}: {str(e)[:300]}"
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    rec["compile_s"] = round(time.perf_counter() - t0, 4)
    if rec["status"] != "compiled":
        return rec
    stop = _ENV["info"].stop_token_ids[0]
    t1 = time.perf_counter()
    for i, case in enumerate(data["tests"]):
        text = json.dumps(case["data"])
        ids = _ENV["hf"].encode(text, add_special_tokens=False).ids
        why = walk(compiled, ids, stop, _ENV["bitmask"])
        if case["valid"]:
            if why:
                rec["valid_rejected"].append([i, why, text[:160]])
            else:
                rec["valid_accepted"] += 1
        elif why:
            rec["invalid_rejected"] += 1
        else:
            rec["invalid_accepted"].append([i, text[:300]])
    rec["walk_s"] = round(time.perf_counter() - t1, 4)
    return rec


def passes(rec: dict) -> int:
    """Instances scored right (0 for a schema that did not compile)."""
    return rec["valid_accepted"] + rec["invalid_rejected"]
