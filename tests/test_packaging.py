"""Packaging: the sdist builds a wheel in a fresh venv, and that wheel works outside the tree.

What CI checks here is what a user of ``pip install xmask`` gets: ``python -m build --sdist``,
then ``pip wheel`` of that sdist in a new ``python -m venv`` (build isolation fetches setuptools
and Cython from the index), the contents of both archives, and an installed wheel that
compiles a grammar and fills a mask from a directory outside the source tree.

It takes 45-80 s on 2 cores (the wheel build compiles every Cython module).
``XMASK_SKIP_PACKAGING=1`` skips it for local work; under ``CI=true`` it always runs, and a
missing tool (``build``, ``venv``) fails instead of skipping.
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys
import tarfile
import textwrap
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
IN_CI = os.environ.get("CI", "").lower() == "true"

pytestmark = pytest.mark.skipif(
    os.environ.get("XMASK_SKIP_PACKAGING") == "1" and not IN_CI,
    reason="XMASK_SKIP_PACKAGING=1 (ignored under CI=true)",
)

# Every Cython module and declaration file in the tree: the sdist must carry them all.
PYX = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "xmask").rglob("*.pyx"))
PXD = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "xmask").rglob("*.pxd"))


def _compiled_py() -> list:
    """The pure-Python modules setup.py also compiles (``PY_MODULES``), as source paths."""
    text = (ROOT / "setup.py").read_text(encoding="utf-8")
    block = text.split("PY_MODULES = [", 1)[1].split("]", 1)[0]
    names = re.findall(r'"(xmask\.[\w.]+)"', block)
    return sorted(name.replace(".", "/") + ".py" for name in names)


COMPILED_PY = _compiled_py()


def _missing(what: str):
    if IN_CI:
        pytest.fail(f"{what} -- CI=true requires it", pytrace=False)
    pytest.skip(what)


def _run(args, *, cwd, timeout, env=None):
    out = subprocess.run(
        [str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env
    )
    assert out.returncode == 0, (
        f"{' '.join(map(str, args))} failed ({out.returncode}):\n"
        f"{out.stdout[-4000:]}\n{out.stderr[-4000:]}"
    )
    return out


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("packaging")


@pytest.fixture(scope="module")
def sdist(work) -> pathlib.Path:
    try:
        import build  # noqa: F401  (the frontend CI uses; the [test] extra installs it)
    except ImportError:
        _missing("the 'build' package is not installed (pip install build)")
    out_dir = work / "dist"
    # cwd outside the tree: the repository's build/ folder would shadow the 'build' package
    _run([sys.executable, "-m", "build", "--sdist", "--outdir", out_dir, ROOT], cwd=work,
         timeout=600)
    (path,) = out_dir.glob("xmask-*.tar.gz")
    return path


@pytest.fixture(scope="module")
def venv(work) -> pathlib.Path:
    where = work / "venv"
    try:
        _run([sys.executable, "-m", "venv", where], cwd=work, timeout=300)
    except AssertionError as exc:
        _missing(f"python -m venv does not work here: {exc}")
    python = where / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
    assert python.exists()
    return python


@pytest.fixture(scope="module")
def wheel(sdist, venv, work) -> pathlib.Path:
    out_dir = work / "wheels"
    out = _run([venv, "-m", "pip", "wheel", "--no-deps", "-v", "-w", out_dir, sdist], cwd=work,
               timeout=1800)
    # one progress line per Cython module, visible with pip -v
    assert len(re.findall(r"xmask: compiling xmask\.\S+ \(\d+/\d+\)", out.stdout + out.stderr)) \
        == len(PYX) + len(COMPILED_PY), \
        "setup.py did not print one progress line per compiled module"
    (path,) = out_dir.glob("xmask-*.whl")
    return path


def _sdist_names(sdist) -> list:
    with tarfile.open(sdist) as tar:
        # drop the top folder "xmask-<version>/"
        return [name.split("/", 1)[1] for name in tar.getnames() if "/" in name]


def test_sdist_carries_the_sources_and_not_generated_files(sdist):
    names = set(_sdist_names(sdist))
    for needed in PYX + PXD + ["LICENSE", "README.md", "docs/PYPI.md", "pyproject.toml",
                               "setup.py", "MANIFEST.in", "xmask/py.typed",
                               "xmask/data/default_corpus.txt"]:
        assert needed in names, f"{needed} missing from the sdist"
    generated = [n for n in names if n.endswith((".c", ".so", ".pyd", ".html", ".pyc"))]
    assert not generated, f"generated files in the sdist: {generated}"


def test_wheel_from_sdist_has_compiled_modules_and_no_c(wheel):
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        metadata = zf.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert not [n for n in names if n.endswith((".c", ".pyx", ".html"))], names
    suffix = ".pyd" if sys.platform == "win32" else ".so"
    for source in PYX + COMPILED_PY:
        stem = source.rsplit(".", 1)[0] + "."
        assert any(n.startswith(stem) and n.endswith(suffix) for n in names), \
            f"no compiled module for {source} in the wheel"
    # a compiled pure-Python module keeps its source beside it
    for source in COMPILED_PY:
        assert source in names, f"{source} missing from the wheel"
    for needed in PXD + ["xmask/py.typed", "xmask/data/default_corpus.txt"]:
        assert needed in names, f"{needed} missing from the wheel"
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), names
    assert "License-Expression: Apache-2.0" in metadata
    assert "pip install xmask" in metadata  # the PyPI readme, not the developer set-up text
    assert "pip install -e ." not in metadata


def test_installed_wheel_works_outside_the_source_tree(wheel, venv, work):
    # runtime dependencies (numpy, tokenizers) come from the index, as for a user
    _run([venv, "-m", "pip", "install", wheel], cwd=work, timeout=900)
    outside = work / "elsewhere"
    outside.mkdir()
    script = textwrap.dedent(
        """
        import pathlib, sys
        import numpy as np
        import xmask

        here = pathlib.Path(xmask.__file__).resolve()
        assert pathlib.Path(sys.prefix).resolve() in here.parents, here  # the installed copy
        info = xmask.default_tokenizer_info()
        compiled = xmask.GrammarCompiler(info).compile_grammar('root ::= "{" [a-z]+ "}"')
        matcher = xmask.GrammarMatcher(compiled)
        assert matcher.accept_string("{ab")
        words = (info.vocab_size + 31) // 32
        mask = np.zeros((1, words), np.int32)
        ref = np.zeros((1, words), np.int32)
        matcher.fill_next_token_bitmask(mask, 0)
        matcher._reference_fill_next_token_bitmask(ref, 0)
        assert (mask == ref).all()
        bits = np.unpackbits(mask.view(np.uint8), bitorder="little")[: info.vocab_size]
        allowed = [info.decoded_vocab[i] for i in np.flatnonzero(bits)]
        assert b"}" in allowed and b"{" not in allowed, allowed[:20]
        print("ok", len(allowed))
        """
    )
    # no PYTHONPATH and a clean cwd: only the venv's site-packages can provide xmask
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    out = _run([venv, "-c", script], cwd=outside, timeout=300, env=env)
    assert out.stdout.startswith("ok ")


def test_pypi_readme_example_runs(tmp_path):
    # The usage block of docs/PYPI.md, with its two placeholders filled: the tokenizer path (the
    # embedded tokenizer, saved) and model_step (random logits).
    import xmask

    text = (ROOT / "docs" / "PYPI.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert "path/to/tokenizer.json" in block and "model_step()" in block
    xmask.default_tokenizer().save(str(tmp_path / "tokenizer.json"))
    prelude = textwrap.dedent(
        """
        import numpy as _np
        _rng = _np.random.default_rng(0)
        def model_step():
            return _rng.standard_normal((1, 128256)).astype(_np.float32)
        """
    )
    code = prelude + block.replace("path/to/tokenizer.json", (tmp_path / "tokenizer.json")
                                   .as_posix())
    code += "\nprint('ok', matcher.is_terminated())\n"
    where = pathlib.Path(xmask.__file__).resolve().parents[1]  # as tests/test_demo.py does
    out = _run([sys.executable, "-c", code], cwd=where, timeout=300)
    assert out.stdout.strip() == "ok True"
