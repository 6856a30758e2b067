"""Shared fixtures: the real-data directory (../shared/data or $XMASK_DATA).

Tests that need real tokenizers or datasets use ``data_dir`` / ``tokenizer_path``.  Without the
data they skip with a reason, except under CI (``CI=true``), where missing data is a failure.
"""

import os
import pathlib

import pytest

_REPO = pathlib.Path(__file__).resolve().parent.parent
DATA_DIR = pathlib.Path(os.environ.get("XMASK_DATA", _REPO.parent / "shared" / "data"))


def _missing(what: str):
    msg = f"test data not found: {what} (set XMASK_DATA to the shared data directory)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(msg + " -- CI=true requires the data", pytrace=False)
    pytest.skip(msg)


def require_data(*parts) -> pathlib.Path:
    path = DATA_DIR.joinpath(*parts)
    if not path.exists():
        _missing(str(path))
    return path


@pytest.fixture(scope="session")
def data_dir() -> pathlib.Path:
    return require_data()


def tokenizer_json(name: str) -> pathlib.Path:
    """Path of ``tokenizers/<name>/tokenizer.json`` in the data dir (skips/fails if absent)."""
    return require_data("tokenizers", name, "tokenizer.json")


def require_module(name: str):
    """Import an optional test dependency (from the ``[test]`` extra); skip without it, except
    under CI (``CI=true``), where a missing one is a failure."""
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError:
        msg = f"optional test dependency not installed: {name} (pip install -e .[test])"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(msg + " -- CI=true requires it", pytrace=False)
        pytest.skip(msg)
