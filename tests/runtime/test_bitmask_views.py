"""fill_next_token_bitmask writes in place (no copy) into NumPy arrays, torch CPU tensors and
2-D views of 3-D speculative-decoding buffers; bad bitmasks raise clear BitmaskErrors before
anything is written.  Masks are compared with the slow reference on Llama-3 and Qwen2.5 (padded
to 151,936 rows)."""

import numpy as np
import pytest
from matchers_util import DOCS, Tok, advanced, reference_row

import xmask

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module", params=["llama3", "qwen2.5"])
def tok(request):
    return Tok(request.param, vocab_size=151936 if request.param == "qwen2.5" else None)


@pytest.fixture(scope="module")
def matcher(tok):
    ids = tok.encode(DOCS[0])
    return advanced(tok.json, ids, len(ids) // 2)


def test_torch_tensor_is_written_in_place(tok, matcher):
    bm = torch.full((3, tok.n_words), -7, dtype=torch.int32)
    ptr = bm.data_ptr()
    assert matcher.fill_next_token_bitmask(bm, 1) is True
    assert bm.data_ptr() == ptr
    np.testing.assert_array_equal(bm[1].numpy(), reference_row(matcher, tok.n_words))
    assert (bm[0] == -7).all() and (bm[2] == -7).all()


def test_allocated_bitmask_round_trip(tok, matcher):
    bm = xmask.allocate_token_bitmask(2, tok.vocab_size)
    matcher.fill_next_token_bitmask(bm, 1)
    np.testing.assert_array_equal(np.asarray(bm)[1], reference_row(matcher, tok.n_words))


@pytest.mark.parametrize("lib", ["numpy", "torch"])
def test_speculative_3d_views(tok, lib):
    """bitmask3d[i] rows and bitmask3d[:, j, :] (rows spaced by the middle dimension)."""
    ids = tok.encode(DOCS[1])
    matchers = [advanced(tok.json, ids, k) for k in (0, 3, len(ids) // 2)]
    shape = (3, 4, tok.n_words)
    buf = np.full(shape, -3, np.int32) if lib == "numpy" else torch.full(shape, -3, dtype=torch.int32)
    expected = np.full(shape, -3, np.int32)
    for i, m in enumerate(matchers):
        m.fill_next_token_bitmask(buf[i], 2)  # contiguous 2-D block, row 2
        expected[i, 2] = reference_row(m, tok.n_words)
        m.fill_next_token_bitmask(buf[:, 1, :], i)  # strided rows: row stride 4 * n_words
        expected[i, 1] = reference_row(m, tok.n_words)
    got = buf if lib == "numpy" else buf.numpy()
    np.testing.assert_array_equal(got, expected)


def test_row_is_all_that_is_written(tok, matcher):
    """Neighbouring memory of a strided row view keeps its values."""
    base = np.full((4, tok.n_words + 5), 11, np.int32)
    view = base[:, 2 : 2 + tok.n_words]
    matcher.fill_next_token_bitmask(view, 3)
    np.testing.assert_array_equal(base[3, 2 : 2 + tok.n_words], reference_row(matcher, tok.n_words))
    assert (base[:3] == 11).all() and (base[3, :2] == 11).all() and (base[3, -3:] == 11).all()


def test_one_dimensional_is_one_row(tok, matcher):
    row = torch.zeros(tok.n_words, dtype=torch.int32)
    matcher.fill_next_token_bitmask(row)
    np.testing.assert_array_equal(row.numpy(), reference_row(matcher, tok.n_words))


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda n: torch.zeros((1, n), dtype=torch.int64), "torch.int32"),
        (lambda n: torch.zeros((1, n), dtype=torch.float32), "torch.int32"),
        (lambda n: torch.zeros((1, n + 1), dtype=torch.int32), "ceil(vocab_size / 32)"),
        (lambda n: torch.zeros((1, n - 1), dtype=torch.int32), "words per row"),
        (lambda n: torch.zeros((2, 2, n), dtype=torch.int32), "1-D or 2-D"),
        (lambda n: torch.zeros((1, n), dtype=torch.int32, device="meta"), "fill it on the CPU"),
        (lambda n: torch.zeros((1, 2 * n), dtype=torch.int32)[:, ::2], "contiguous"),
        (lambda n: torch.zeros((n, 2), dtype=torch.int32).t(), "contiguous"),
        (lambda n: np.zeros((n, 2), dtype=np.int32).T, "contiguous"),
        (lambda n: np.zeros((1, n), dtype=">i4"), "int32"),
        (lambda n: np.zeros((1, n), dtype=np.uint32), "int32"),
        (lambda n: [[0] * n], "numpy.ndarray or a torch.Tensor"),
    ],
)
def test_bad_bitmasks_raise_clear_errors(tok, matcher, make, words):
    bm = make(tok.n_words)
    with pytest.raises(xmask.BitmaskError) as ei:
        matcher.fill_next_token_bitmask(bm)
    assert words in str(ei.value)


def test_read_only_and_bad_index(tok, matcher):
    ro = np.zeros((1, tok.n_words), np.int32)
    ro.setflags(write=False)
    with pytest.raises(xmask.BitmaskError, match="read-only"):
        matcher.fill_next_token_bitmask(ro)
    bm = torch.zeros((2, tok.n_words), dtype=torch.int32)
    for bad in (2, -1, 1.0, True, "0"):
        with pytest.raises(xmask.BitmaskError):
            matcher.fill_next_token_bitmask(bm, bad)
    assert (bm == 0).all()


def test_cuda_tensor_message_names_the_fix(tok, matcher):
    """A non-CPU tensor names the device and says to fill on the CPU then copy."""
    bm = torch.zeros((1, tok.n_words), dtype=torch.int32, device="meta")
    with pytest.raises(xmask.BitmaskError, match=r"on meta: fill it on the CPU.*\.to\(device\)"):
        matcher.fill_next_token_bitmask(bm)


def test_debug_print_kwargs(tok, capsys):
    m = xmask.GrammarMatcher(tok.json)
    bm = np.zeros((1, tok.n_words), np.int32)
    assert m.fill_next_token_bitmask(bm, 0, debug_print=True)
    assert m.accept_token(tok.encode("[")[0], debug_print=True)
    assert m.accept_string("1", debug_print=True)
    out = capsys.readouterr().out
    assert "tokens allowed" in out and "accept_token" in out and "accept_string" in out
    with pytest.raises(TypeError):
        m.accept_token(tok.encode("]")[0], True)  # debug_print is keyword-only, as in XGrammar


def _layouts(n_words):
    """Bitmasks of many layouts, good and bad, NumPy and torch: each goes through the C fast
    path or falls back to the Python checks."""
    base = np.zeros((4, 3, n_words + 2), np.int32)
    out = {
        "np 2-D": np.zeros((3, n_words), np.int32),
        "np 1-D": np.zeros(n_words, np.int32),
        "np 3-D view [:, 1, :n]": base[:, 1, :n_words],
        "np 3-D view [2, :, :n]": base[2, :, :n_words],
        "np one row of many": np.zeros((1, n_words), np.int32),
        "np fortran": np.asfortranarray(np.zeros((3, n_words), np.int32)),
        "np read-only": np.zeros((3, n_words), np.int32),
        "np big-endian": np.zeros((3, n_words), ">i4"),
        "np int64": np.zeros((3, n_words), np.int64),
        "np too narrow": np.zeros((3, n_words - 1), np.int32),
        "np reversed rows": np.zeros((3, n_words), np.int32)[::-1],
        "np misaligned": np.frombuffer(bytearray(4 * 3 * n_words + 1), np.int32,
                                       count=3 * n_words, offset=1).reshape(3, n_words),
        "np 3-D": np.zeros((2, 2, n_words), np.int32),
        "torch 2-D": torch.zeros((3, n_words), dtype=torch.int32),
        "torch 1-D": torch.zeros(n_words, dtype=torch.int32),
        "torch 3-D view [:, 1]": torch.zeros((4, 3, n_words), dtype=torch.int32)[:, 1],
        "torch transposed": torch.zeros((n_words, 3), dtype=torch.int32).t(),
        "torch int64": torch.zeros((3, n_words), dtype=torch.int64),
        "torch 3-D": torch.zeros((2, 2, n_words), dtype=torch.int32),
    }
    out["np read-only"].flags.writeable = False
    return out


def test_fast_and_python_bitmask_checks_agree_on_every_layout(tok, matcher):
    # The Python checks (bitmask_rows) define what is accepted; the fill, which takes the C
    # fast path for the common layouts, must accept exactly those and write the right row.
    from xmask.errors import BitmaskError
    from xmask.runtime.bitmask_rows import bitmask_rows

    expected = reference_row(matcher, tok.n_words)
    for name, bm in _layouts(tok.n_words).items():
        try:
            rows = bitmask_rows(bm, tok.n_words)
        except BitmaskError:
            with pytest.raises(BitmaskError):
                matcher.fill_next_token_bitmask(bm, 0)
            continue
        index = rows.n_rows - 1
        for idx in (index, np.int64(index)):
            matcher.fill_next_token_bitmask(bm, idx)
            row = np.asarray(bm if bm.ndim == 1 else bm[index])
            np.testing.assert_array_equal(row.astype(np.int32), expected, err_msg=name)
        with pytest.raises(BitmaskError):
            matcher.fill_next_token_bitmask(bm, rows.n_rows)
