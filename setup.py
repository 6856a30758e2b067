"""Build the Cython extensions: the .pyx modules (one directives dict for all), and a few
pure-Python modules compiled as they are (``PY_MODULES``, their own directives).

XMASK_DEBUG=1 turns bounds checks back on (for hunting memory errors); XMASK_SANITIZE=1 adds
AddressSanitizer.  Generated C is rebuilt on every build, never shipped stale: the sdist carries
the .pyx/.pxd sources (MANIFEST.in), and each module is cythonized right before it is compiled,
so ``setup.py sdist`` does not run Cython at all.

Each module prints ``xmask: compiling xmask.runtime.matcher (14/65)`` to stderr as it starts, so a
first install (a few minutes on 2 cores) shows progress; pip shows it with ``pip install -v``.
"""

import os
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

DEBUG = os.environ.get("XMASK_DEBUG") == "1"
SANITIZE = os.environ.get("XMASK_SANITIZE") == "1"

DIRECTIVES = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": False,
    "initializedcheck": DEBUG,
    "nonecheck": False,
    "cdivision": True,
    "embedsignature": True,
    "freethreading_compatible": True,
}

MODULES = [
    "xmask.runtime._tables",
    "xmask.runtime._stack",
    "xmask.runtime._stack_gss",
    "xmask.runtime._stack_budget",
    "xmask.runtime._plain_depth",
    "xmask.runtime._cache_entry",
    "xmask.runtime._classify",
    "xmask.runtime._token_equivalence",
    "xmask.runtime._mask_cache",
    "xmask.runtime._fill_spent",
    "xmask.runtime._fill",
    "xmask.runtime._bitmask_view",
    "xmask.runtime._draft_tree",
    "xmask.runtime.matcher",
    "xmask.runtime.batch",
    "xmask.runtime._apply",
    "xmask.compiler._partition",
    "xmask.compiler._state_merge",
    "xmask.compiler._minimize",
    "xmask.compiler._determinize",
    "xmask.compiler._rule_dfas",
    "xmask.compiler._analysis",
    "xmask.compiler._rule_graph",
    "xmask.compiler._rule_scan",
    "xmask.compiler._nfa_build",
    "xmask.compiler._first_reach",
    "xmask.grammar._ir_build",
    "xmask.grammar._ir_nodes",
    "xmask.grammar._ir_walk",
    "xmask.grammar._word_complement",
    "xmask.grammar._subset",
    "xmask.grammar._cp_minimize",
    "xmask._gil",
]

# Pure-Python modules also compiled by Cython as they are: the JSON-schema front end (schema ->
# grammar IR) and the IR it builds, Python on every compile, run 15-30% faster compiled
# (bench/README, issue 10: time to first mask).  The .py files stay the source and the
# fallback (XMASK_PURE_PYTHON=1 builds without them); an extension module shadows its .py on
# import.  Their annotations are not C types (``annotation_typing`` off): a compiled module
# behaves as its source does.
PURE_PYTHON = os.environ.get("XMASK_PURE_PYTHON") == "1"
PY_MODULES = [
    "xmask.grammar.json_schema.api",
    "xmask.grammar.json_schema.arrays",
    "xmask.grammar.json_schema.atoms",
    "xmask.grammar.json_schema.combinators",
    "xmask.grammar.json_schema.context",
    "xmask.grammar.json_schema.converter",
    "xmask.grammar.json_schema.counting",
    "xmask.grammar.json_schema.deferrable",
    "xmask.grammar.json_schema.disjointness",
    "xmask.grammar.json_schema.document",
    "xmask.grammar.json_schema.keys",
    "xmask.grammar.json_schema.layout",
    "xmask.grammar.json_schema.literals",
    "xmask.grammar.json_schema.merge",
    "xmask.grammar.json_schema.merged",
    "xmask.grammar.json_schema.negation",
    "xmask.grammar.json_schema.numbers",
    "xmask.grammar.json_schema.objects",
    "xmask.grammar.json_schema.parts",
    "xmask.grammar.json_schema.strings",
    "xmask.grammar.json_schema.unevaluated",
    "xmask.grammar.json_schema.validator",
    "xmask.grammar.json_schema.values",
    "xmask.grammar.json_schema.vocabulary",
    "xmask.grammar.schema_check",
    "xmask.grammar.string_format",
    "xmask.grammar.ir",
    "xmask.grammar.ir_expr",
    "xmask.grammar.rule_sink",
    "xmask.grammar.dfa_expr",
    "xmask.grammar.code_point_dfa",
    "xmask.grammar.edge_runs",
    "xmask.grammar.emission_memo",
    "xmask.grammar.regex",
]
COMPILED_PY = [] if PURE_PYTHON else PY_MODULES
PY_DIRECTIVES = {"language_level": 3, "binding": True, "annotation_typing": False,
                 "embedsignature": False, "freethreading_compatible": True}

# AddressSanitizer builds use -O1 (its usual level: faster to build, exact stack traces)
compile_args = ["-O0", "-g"] if DEBUG else ["-O1", "-g"] if SANITIZE else ["-O3"]
link_args = []
# Python's own CFLAGS usually carry -g: debug info quadruples the modules (wheel 4 MB instead of
# ~1 MB) and users never read it.  XMASK_DEBUG / XMASK_SANITIZE builds keep it.
if not DEBUG and not SANITIZE and sys.platform != "win32":
    compile_args += ["-g0"]
# OpenMP for BatchGrammarMatcher's prange (the other modules have no parallel regions, so the
# flag changes nothing for them).  Without it prange runs serially (still correct).
# XMASK_NO_OPENMP=1 turns it off; Apple's clang has no OpenMP, so macOS needs XMASK_OPENMP=1
# (with libomp installed) to turn it on.
if os.environ.get("XMASK_NO_OPENMP") != "1":
    if sys.platform == "win32":
        compile_args += ["/openmp"]
    elif sys.platform != "darwin" or os.environ.get("XMASK_OPENMP") == "1":
        compile_args += ["-fopenmp"]
        link_args += ["-fopenmp"]
if SANITIZE:
    compile_args += ["-fsanitize=address", "-fno-omit-frame-pointer"]
    link_args += ["-fsanitize=address"]


class CythonizeEachBuildExt(build_ext):
    """Cythonize one module right before compiling it, and say which one.

    Cythonizing lazily (instead of calling ``cythonize`` at the top of this file) keeps Cython out
    of ``sdist`` and ``egg_info``, and gives one progress line per module: a fresh
    install otherwise sits silent for a minute or more.
    """

    def build_extensions(self):
        # No numpy include dir: no module cimports numpy, so numpy is not a build requirement.
        self._xmask_done = 0
        super().build_extensions()

    def build_extension(self, ext):
        from Cython.Build import cythonize

        self._xmask_done += 1
        print(f"xmask: compiling {ext.name} ({self._xmask_done}/{len(self.extensions)})",
              file=sys.stderr, flush=True)
        if any(source.endswith((".pyx", ".py")) for source in ext.sources):
            directives = PY_DIRECTIVES if ext.sources[0].endswith(".py") else DIRECTIVES
            (generated,) = cythonize(
                [ext], compiler_directives=directives, force=True, include_path=["."], quiet=True
            )
            ext.sources = generated.sources
        super().build_extension(ext)


extensions = [
    Extension(
        name,
        [name.replace(".", "/") + ".pyx"],
        extra_compile_args=compile_args,
        extra_link_args=link_args,
    )
    for name in MODULES
] + [
    Extension(
        name,
        [name.replace(".", "/") + ".py"],
        extra_compile_args=[a for a in compile_args if a not in ("-fopenmp", "/openmp")],
        extra_link_args=[a for a in link_args if a != "-fopenmp"],
    )
    for name in COMPILED_PY
]

setup(ext_modules=extensions, cmdclass={"build_ext": CythonizeEachBuildExt})
