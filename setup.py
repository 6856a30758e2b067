"""Build the Cython extensions.  One directives dict for every module.

XMASK_DEBUG=1 turns bounds checks back on (for hunting memory errors); XMASK_SANITIZE=1 adds
AddressSanitizer.  Generated C is rebuilt on every build, never shipped stale.
"""

import os
import sys

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

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
    "xmask.runtime._fill",
    "xmask.runtime._draft_tree",
    "xmask.runtime.matcher",
    "xmask.runtime.batch",
    "xmask.runtime._apply",
    "xmask.compiler._kernels",
    "xmask.compiler._partition",
]

compile_args = ["-O3"] if not DEBUG else ["-O0", "-g"]
link_args = []
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

extensions = [
    Extension(
        name,
        [name.replace(".", "/") + ".pyx"],
        include_dirs=[np.get_include()],
        extra_compile_args=compile_args,
        extra_link_args=link_args,
    )
    for name in MODULES
]

setup(
    ext_modules=cythonize(
        extensions, compiler_directives=DIRECTIVES, force=True, include_path=["."], quiet=True
    ),
)
