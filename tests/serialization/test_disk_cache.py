"""GrammarCompiler(cache_dir=...): compiled grammars survive a restart through the disk, bad
files are recompiled (never trusted), concurrent writers leave a valid file."""

import json
import multiprocessing
import os
import threading

import numpy as np
from sertools import DOC, SCHEMA, doc_ids, llama3, walk_masks  # noqa: F401 (fixtures)

import xmask


def files(d):
    return sorted(os.listdir(d))


def test_second_compiler_loads_from_disk(llama3, tmp_path):
    first = xmask.GrammarCompiler(llama3.info, cache_dir=tmp_path)
    a = first.compile_json_schema(SCHEMA)
    info = first.cache_info()
    assert (info["disk_misses"], info["disk_writes"], info["disk_hits"]) == (1, 1, 0)
    assert info["cache_dir"] == str(tmp_path)
    [name] = files(tmp_path)
    assert name.endswith(".json") and len(name) == 64 + 5

    second = xmask.GrammarCompiler(llama3.info, cache_dir=tmp_path)
    b = second.compile_json_schema(SCHEMA)
    info = second.cache_info()
    assert (info["disk_hits"], info["disk_misses"], info["disk_writes"]) == (1, 0, 0)
    assert b.cache_stats() == a.cache_stats()
    ids = doc_ids(llama3)
    for x, y in zip(walk_masks(a, ids), walk_masks(b, ids, reference_every=11)):
        np.testing.assert_array_equal(x, y)
    # the in-memory cache still answers first
    assert second.compile_json_schema(SCHEMA) is b
    assert second.cache_info()["memory_hits"] == 1 and second.cache_info()["disk_hits"] == 1


def test_key_covers_input_options_and_limits(llama3, tmp_path):
    c = xmask.GrammarCompiler(llama3.info, cache_dir=tmp_path)
    c.compile_json_schema(SCHEMA)
    c.compile_json_schema(SCHEMA, any_whitespace=False)
    c.compile_grammar('root ::= "a"')
    c.compile_grammar(xmask.Grammar.from_ebnf('root ::= "a"'))
    c.compile_regex("a")
    c.compile_builtin_json_grammar()
    xmask.GrammarCompiler(llama3.info, cache_dir=tmp_path,
                          limits=xmask.CompileLimits(max_repeat=99)).compile_grammar('root ::= "a"')
    assert len(files(tmp_path)) == 7
    assert c.cache_info()["disk_hits"] == 0
    # another tokenizer never reads these files
    other = xmask.GrammarCompiler(xmask.default_tokenizer_info(), cache_dir=tmp_path)
    other.compile_grammar('root ::= "a"')
    assert other.cache_info()["disk_hits"] == 0 and len(files(tmp_path)) == 8


def corrupt_variants(text):
    doc = json.loads(text)
    doc["__VERSION__"] = "xmask-v0"
    middle = len(text) // 2
    return {
        "truncated": text[: len(text) // 3],
        "empty": "",
        "flipped": text[:middle] + ("0" if text[middle] != "0" else "1") + text[middle + 1:],
        "garbage": "\x00\xff not json",
        "old version": json.dumps(doc),
        "other kind": xmask.Grammar.from_ebnf('root ::= "a"').serialize_json(),
    }


def test_bad_file_is_recompiled_and_rewritten(llama3, tmp_path):
    good = xmask.GrammarCompiler(llama3.info, cache_dir=tmp_path)
    ref = good.compile_json_schema(SCHEMA)
    [name] = files(tmp_path)
    path = tmp_path / name
    text = path.read_text()
    ids = doc_ids(llama3)
    expected = walk_masks(ref, ids)
    for label, bad in corrupt_variants(text).items():
        path.write_bytes(bad.encode("utf-8", "surrogatepass") if isinstance(bad, str) else bad)
        c = xmask.GrammarCompiler(llama3.info, cache_dir=tmp_path)
        got = c.compile_json_schema(SCHEMA)
        info = c.cache_info()
        assert (info["disk_rejected"], info["disk_hits"], info["disk_writes"]) == (1, 0, 1), label
        for x, y in zip(expected, walk_masks(got, ids)):
            np.testing.assert_array_equal(x, y, err_msg=label)
        # rewritten: the next compiler loads it
        again = xmask.GrammarCompiler(llama3.info, cache_dir=tmp_path)
        again.compile_json_schema(SCHEMA)
        assert again.cache_info()["disk_hits"] == 1, label
    assert files(tmp_path) == [name]  # no temporary files left behind


def test_concurrent_writers_leave_a_valid_file(llama3, tmp_path):
    import _workers

    schema = {"type": "array", "items": {"type": "string", "maxLength": 5}, "maxItems": 4}
    ctx = multiprocessing.get_context("spawn")
    errors = []

    def thread_writer():
        try:
            for _ in range(3):
                xmask.GrammarCompiler(llama3.info, cache_dir=tmp_path,
                                      max_threads=1).compile_json_schema(schema)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    with ctx.Pool(3) as pool:
        jobs = [pool.apply_async(_workers.compile_into_cache,
                                 (llama3.path, str(tmp_path), schema, 3)) for _ in range(3)]
        threads = [threading.Thread(target=thread_writer) for _ in range(2)]
        for t in threads:
            t.start()
        totals = [j.get(timeout=300) for j in jobs]
        for t in threads:
            t.join()
    assert not errors
    assert all(t["disk_rejected"] == 0 and t["disk_errors"] == 0 for t in totals)
    [name] = files(tmp_path)  # one file, no temporary leftovers
    c = xmask.GrammarCompiler(llama3.info, cache_dir=tmp_path)
    cg = c.compile_json_schema(schema)
    assert c.cache_info()["disk_hits"] == 1
    fresh = xmask.GrammarCompiler(llama3.info).compile_json_schema(schema)
    ids = llama3.encode('["ab", "", "\u00e9\u00e9"]')
    for x, y in zip(walk_masks(fresh, ids), walk_masks(cg, ids, reference_every=5)):
        np.testing.assert_array_equal(x, y)


def test_io_errors_skip_the_cache_but_compile(llama3, tmp_path):
    first = xmask.GrammarCompiler(llama3.info, cache_dir=tmp_path)
    first.compile_grammar('root ::= "a"')
    [name] = files(tmp_path)
    os.remove(tmp_path / name)
    os.mkdir(tmp_path / name)  # unreadable and not replaceable: every I/O call fails
    c = xmask.GrammarCompiler(llama3.info, cache_dir=tmp_path)
    assert c.compile_grammar('root ::= "a"').cache_summary()["top_states"]
    info = c.cache_info()
    assert (info["disk_rejected"], info["disk_errors"], info["disk_writes"]) == (1, 1, 0)
    assert files(tmp_path) == [name]  # the temporary file was removed
