"""Source-level rules from STYLE.md, checked as tests."""

import pathlib
import re

PKG = pathlib.Path(__file__).resolve().parent.parent / "xmask"


def _files(pattern):
    files = sorted(PKG.rglob(pattern))
    assert files, f"no {pattern} files under {PKG}"
    return files


def test_every_runtime_cdef_function_in_a_pxd_declares_its_exception_contract():
    # a cdef function declaration, possibly spanning lines, up to the end of its signature line
    decl = re.compile(r"^\s*cdef\s+(?!class\b|enum\b|struct\b|readonly\b|public\b)"
                      r"[\w \t\*]+\([^)]*\)[^\n]*", re.M)
    bad = []
    for path in _files("*.pxd"):
        text = re.sub(r"#[^\n]*", "", path.read_text())
        for m in decl.finditer(text):
            sig = " ".join(m.group(0).split())
            # functions returning Python objects always propagate exceptions (Cython allows
            # no exception clause on them), so they have nothing to declare
            if re.match(r"cdef (inline )?(object|list|str|dict|tuple|bytes) ", sig):
                continue
            if "noexcept" not in sig and " except" not in sig:
                bad.append(f"{path.name}: {sig}")
    assert not bad, "cdef functions without noexcept/except:\n" + "\n".join(bad)


def test_no_deprecated_compile_time_constructs():
    for path in _files("*.pyx") + _files("*.pxd"):
        text = path.read_text()
        assert not re.search(r"^\s*(DEF|IF)\s", text, re.M), f"{path.name} uses DEF/IF"


def test_with_gil_only_on_failure_branches_in_runtime():
    # every `with gil:` in the runtime must be followed by a raise (a failure branch)
    for path in _files("*.pyx"):
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            if line.strip() == "with gil:":
                assert lines[i + 1].strip().startswith("raise "), f"{path.name}:{i + 1}"


def test_nothing_in_the_package_imports_bench_or_notebooks():
    for path in list(PKG.rglob("*.py")) + list(PKG.rglob("*.pyx")):
        text = path.read_text()
        assert not re.search(r"^\s*(from|import)\s+(bench|notebooks)\b", text, re.M), path.name
