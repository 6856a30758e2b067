"""Bitmask helpers: allocate / shape / apply (NumPy and torch), checked against a plain loop."""

import pathlib
import subprocess
import sys

import numpy as np
import pytest

import xmask
from xmask.bitmask import (
    allocate_token_bitmask,
    apply_token_bitmask_inplace,
    get_bitmask_shape,
    reset_token_bitmask,
)


def ref_apply(logits, bitmask, indices=None, vocab_size=None):
    """Straightforward reference: for every masked row r -- all rows, or ``indices`` --
    logits[r, i] = -inf for i < vocab_size whose bit i % 32 of bitmask[r, i // 32] is 0; without
    vocab_size, columns the bitmask does not cover are -inf too (padding is safe by default).
    Returns a new array."""
    out = np.array(logits, copy=True)
    rows_l = out.reshape(1, -1) if out.ndim == 1 else out
    bm = np.asarray(bitmask)
    bm = bm.reshape(1, -1) if bm.ndim == 1 else bm
    width = min(rows_l.shape[1], 32 * bm.shape[1]) if vocab_size is None else vocab_size
    rows = range(bm.shape[0]) if indices is None else indices
    for r in rows:
        for i in range(width):
            if not (int(bm[r, i // 32]) >> (i % 32)) & 1:
                rows_l[r, i] = -np.inf
        if vocab_size is None:
            rows_l[r, width:] = -np.inf
    return out


def random_bitmask(rng, batch, vocab):
    bm = rng.integers(-(2**31), 2**31, size=get_bitmask_shape(batch, vocab), dtype=np.int64)
    return bm.astype(np.int32)


# ---------------------------------------------------------------------------- allocate / shape


@pytest.mark.parametrize(
    "batch, vocab, shape",
    [(1, 128256, (1, 4008)), (2, 100, (2, 4)), (1, 33, (1, 2)), (1, 32, (1, 1)), (3, 1, (3, 1)),
     (0, 100, (0, 4)), (1, 0, (1, 0)), (4, 151936, (4, 4748))],
)
def test_shape_and_allocate(batch, vocab, shape):
    torch = pytest.importorskip("torch")
    assert get_bitmask_shape(batch, vocab) == shape
    bm = allocate_token_bitmask(batch, vocab)
    assert isinstance(bm, torch.Tensor)  # as XGrammar: servers call .to(device) / .numpy()
    assert tuple(bm.shape) == shape
    assert bm.dtype == torch.int32 == xmask.bitmask_dtype
    assert bm.device.type == "cpu" and bm.is_contiguous()
    assert (bm == -1).all()  # every bit set: all tokens allowed
    arr = bm.numpy()  # shares memory
    assert arr.dtype == np.int32 and arr.flags.c_contiguous and arr.flags.writeable


def test_allocate_without_torch_is_numpy(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now raises ImportError
    bm = allocate_token_bitmask(2, 100)
    assert isinstance(bm, np.ndarray) and bm.dtype == np.int32 and bm.shape == (2, 4)
    assert bm.flags.c_contiguous and (bm == -1).all()
    assert xmask.bitmask_dtype is np.int32
    from xmask import bitmask as module

    assert module.bitmask_dtype is np.int32
    bm[1, 2] = 5
    reset_token_bitmask(bm)
    assert (bm == -1).all()


def test_allocate_returns_fresh_arrays():
    a = allocate_token_bitmask(1, 64)
    b = allocate_token_bitmask(1, 64)
    a[0, 0] = 0
    assert b[0, 0] == -1


def test_import_xmask_imports_neither_torch_nor_transformers():
    code = (
        "import sys, xmask\n"
        "assert 'torch' not in sys.modules and 'transformers' not in sys.modules\n"
        "xmask.contrib\n"
        "assert 'torch' not in sys.modules and 'transformers' not in sys.modules\n"
        "assert str(xmask.bitmask_dtype) == 'torch.int32'\n"
        "assert 'transformers' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=pathlib.Path(xmask.__file__).parents[1])


def test_reset_token_bitmask():
    arr = np.zeros((2, 3), np.int32)
    reset_token_bitmask(arr)
    assert (arr == -1).all()
    bm = allocate_token_bitmask(2, 96)
    bm[0, 1] = 0
    view = bm[1]
    view[0] = 7
    reset_token_bitmask(bm)  # in place: the same storage, every bit set again
    assert (np.asarray(bm) == -1).all() and int(view[0]) == -1
    with pytest.raises(xmask.BitmaskError, match="int32"):
        reset_token_bitmask(np.zeros((1, 2), np.int64))
    with pytest.raises(xmask.BitmaskError, match="list"):
        reset_token_bitmask([[0, 0]])


@pytest.mark.parametrize("batch, vocab", [(-1, 10), (1, -5)])
def test_shape_rejects_negative(batch, vocab):
    with pytest.raises(ValueError):
        get_bitmask_shape(batch, vocab)


def test_exported_from_package():
    assert xmask.allocate_token_bitmask is allocate_token_bitmask
    assert xmask.apply_token_bitmask_inplace is apply_token_bitmask_inplace
    assert xmask.get_bitmask_shape is get_bitmask_shape
    assert xmask.reset_token_bitmask is reset_token_bitmask
    assert {"bitmask_dtype", "reset_token_bitmask", "contrib"} <= set(xmask.__all__)


# ---------------------------------------------------------------------------- apply (numpy)


def test_apply_documented_example():
    logits = np.zeros((1, 40), dtype=np.float32)
    mask = allocate_token_bitmask(1, 40)  # a torch tensor applied to numpy logits
    mask[0, 0] = 0b101
    apply_token_bitmask_inplace(logits, mask)
    assert np.isfinite(logits[0, :4]).tolist() == [True, False, True, False]
    assert np.isneginf(logits[0, :32]).sum() == 30
    assert np.isfinite(logits[0, 32:]).all()  # word 1 is -1: untouched


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("batch, vocab", [(1, 1), (1, 31), (2, 64), (3, 100), (2, 1000)])
def test_apply_2d_matches_reference(dtype, batch, vocab):
    rng = np.random.default_rng(batch * 1000 + vocab)
    logits = rng.standard_normal((batch, vocab)).astype(dtype)
    bm = random_bitmask(rng, batch, vocab)
    expected = ref_apply(logits, bm)
    apply_token_bitmask_inplace(logits, bm)
    assert logits.dtype == dtype
    np.testing.assert_array_equal(logits, expected)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_apply_1d(dtype):
    rng = np.random.default_rng(1)
    logits = rng.standard_normal(77).astype(dtype)
    bm = random_bitmask(rng, 1, 77)[0]
    expected = ref_apply(logits, bm)
    apply_token_bitmask_inplace(logits, bm)
    np.testing.assert_array_equal(logits, expected)
    # 1-D logits with a (1, words) bitmask too
    logits2 = rng.standard_normal(77).astype(dtype)
    expected2 = ref_apply(logits2, bm[None, :])
    apply_token_bitmask_inplace(logits2, bm[None, :])
    np.testing.assert_array_equal(logits2, expected2)


def test_apply_vocab_size_argument():
    rng = np.random.default_rng(2)
    logits = rng.standard_normal((2, 100)).astype(np.float32)
    bm = np.zeros(get_bitmask_shape(2, 100), dtype=np.int32)  # nothing allowed
    apply_token_bitmask_inplace(logits, bm, vocab_size=10)
    assert np.isneginf(logits[:, :10]).all()
    assert np.isfinite(logits[:, 10:]).all()
    with pytest.raises(xmask.BitmaskError):
        apply_token_bitmask_inplace(logits, bm, vocab_size=129)  # beyond the bitmask
    with pytest.raises(xmask.BitmaskError):
        apply_token_bitmask_inplace(np.zeros((2, 50), np.float32), bm, vocab_size=60)


def test_apply_logits_wider_than_mask_masks_the_padding():
    # a model whose logits are padded past the tokenizer: the extra columns are never left
    # open by default (XGrammar leaves them untouched), and an explicit vocab_size keeps them
    rng = np.random.default_rng(3)
    logits = rng.standard_normal((2, 200)).astype(np.float32)
    orig = logits.copy()
    bm = random_bitmask(rng, 2, 128)
    apply_token_bitmask_inplace(logits, bm)
    np.testing.assert_array_equal(logits, ref_apply(orig, bm))
    assert np.isneginf(logits[:, 128:]).all() and np.isfinite(logits[:, :128]).any()
    logits = orig.copy()
    apply_token_bitmask_inplace(logits, bm, indices=[1])
    np.testing.assert_array_equal(logits[0], orig[0])
    assert np.isneginf(logits[1, 128:]).all()
    logits = orig.copy()
    apply_token_bitmask_inplace(logits, bm, vocab_size=128)
    np.testing.assert_array_equal(logits[:, 128:], orig[:, 128:])


def test_apply_mask_wider_than_logits():
    rng = np.random.default_rng(4)
    logits = rng.standard_normal((1, 100)).astype(np.float32)
    bm = np.zeros((1, 4), dtype=np.int32)  # 128 bits (a vocab of 97..128), nothing allowed
    apply_token_bitmask_inplace(logits, bm)
    assert np.isneginf(logits).all()
    # a whole word more than the logits need: allocated for another vocabulary
    with pytest.raises(xmask.BitmaskError, match="allocated for a larger vocabulary"):
        apply_token_bitmask_inplace(np.zeros((1, 96), np.float32), bm)
    logits = np.zeros((1, 40), np.float32)
    apply_token_bitmask_inplace(logits, bm, vocab_size=40)
    assert np.isneginf(logits).all()


def test_apply_identity_indices_and_untouched_rows():
    rng = np.random.default_rng(5)
    logits = rng.standard_normal((3, 70)).astype(np.float32)
    bm = random_bitmask(rng, 3, 70)
    expected = ref_apply(logits, bm)
    apply_token_bitmask_inplace(logits, bm, indices=[0, 1, 2])
    np.testing.assert_array_equal(logits, expected)
    # only the listed row changes (rows 0 and 2 of the bitmask are equal, so the row of the
    # bitmask used for logits row 2 is the same whichever convention is used)
    logits = rng.standard_normal((3, 70)).astype(np.float32)
    orig = logits.copy()
    bm[2] = bm[0]
    apply_token_bitmask_inplace(logits, bm, indices=[2])
    np.testing.assert_array_equal(logits[:2], orig[:2])
    np.testing.assert_array_equal(logits, ref_apply(orig, bm, indices=[2]))


def test_apply_indices_xgrammar_semantics():
    rng = np.random.default_rng(6)
    logits = rng.standard_normal((4, 70)).astype(np.float32)
    bm = random_bitmask(rng, 4, 70)
    expected = ref_apply(logits, bm, indices=[1, 3])
    apply_token_bitmask_inplace(logits, bm, indices=[1, 3])
    np.testing.assert_array_equal(logits, expected)


def test_apply_batch_mismatch_without_indices():
    with pytest.raises(xmask.BitmaskError):
        apply_token_bitmask_inplace(np.zeros((1, 64), np.float32), np.zeros((2, 2), np.int32))


def test_apply_bad_types():
    with pytest.raises(xmask.BitmaskError):
        apply_token_bitmask_inplace(np.zeros((1, 64), np.int64), np.zeros((1, 2), np.int32))
    with pytest.raises(xmask.BitmaskError):
        apply_token_bitmask_inplace(np.zeros((1, 64), np.float32), np.zeros((1, 2), np.int64))
    with pytest.raises(xmask.BitmaskError):
        apply_token_bitmask_inplace([[0.0] * 64], np.zeros((1, 2), np.int32))
    with pytest.raises(xmask.BitmaskError):
        apply_token_bitmask_inplace(np.zeros((1, 1, 64), np.float32), np.zeros((1, 2), np.int32))


def test_apply_non_contiguous_logits():
    rng = np.random.default_rng(7)
    base = rng.standard_normal((100, 2)).astype(np.float32)
    logits = base.T  # (2, 100), Fortran order
    bm = random_bitmask(rng, 2, 100)
    expected = ref_apply(np.ascontiguousarray(logits), bm)
    apply_token_bitmask_inplace(logits, bm)
    np.testing.assert_array_equal(logits, expected)
    np.testing.assert_array_equal(base.T, expected)  # written through to the base array
    base1 = rng.standard_normal(200).astype(np.float32)
    strided = base1[::2]
    bm1 = random_bitmask(rng, 1, 100)
    expected1 = ref_apply(strided.copy(), bm1)
    apply_token_bitmask_inplace(strided, bm1)
    np.testing.assert_array_equal(base1[::2], expected1)


def test_apply_with_a_real_matcher_mask():
    info = xmask.default_tokenizer_info()
    compiled = xmask.GrammarCompiler(info).compile_grammar('root ::= "yes" | "no"')
    m = xmask.GrammarMatcher(compiled)
    bm = allocate_token_bitmask(2, info.vocab_size)
    m.fill_next_token_bitmask(bm, 1)
    logits = np.zeros((2, info.vocab_size), dtype=np.float32)
    apply_token_bitmask_inplace(logits, bm)
    assert np.isfinite(logits[0]).all()  # row 0 stays all-allowed
    allowed = set(np.nonzero(np.isfinite(logits[1]))[0].tolist())
    prefixes = (b"y", b"ye", b"yes", b"n", b"no")
    expected = {t for t in range(info.vocab_size) if info.decoded_vocab[t] in prefixes}
    assert len(expected) >= 2
    assert allowed == expected
    np.testing.assert_array_equal(logits, ref_apply(np.zeros_like(logits), bm))


# ---------------------------------------------------------------------------- torch


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def test_torch_apply_matches_reference(torch):
    rng = np.random.default_rng(8)
    for batch, vocab in [(1, 33), (3, 100), (2, 1000)]:
        np_logits = rng.standard_normal((batch, vocab)).astype(np.float32)
        np_bm = random_bitmask(rng, batch, vocab)
        logits = torch.from_numpy(np_logits.copy())
        apply_token_bitmask_inplace(logits, torch.from_numpy(np_bm))
        np.testing.assert_array_equal(logits.numpy(), ref_apply(np_logits, np_bm))
    # 1-D
    np_logits = rng.standard_normal(50).astype(np.float32)
    np_bm = random_bitmask(rng, 1, 50)[0]
    logits = torch.from_numpy(np_logits.copy())
    apply_token_bitmask_inplace(logits, torch.from_numpy(np_bm))
    np.testing.assert_array_equal(logits.numpy(), ref_apply(np_logits, np_bm))


def test_torch_apply_options(torch):
    rng = np.random.default_rng(9)
    np_logits = rng.standard_normal((2, 200)).astype(np.float32)
    np_bm = random_bitmask(rng, 2, 128)
    logits = torch.from_numpy(np_logits.copy())
    apply_token_bitmask_inplace(logits, torch.from_numpy(np_bm))  # wider logits: padding masked
    np.testing.assert_array_equal(logits.numpy(), ref_apply(np_logits, np_bm))
    assert np.isneginf(logits.numpy()[:, 128:]).all()
    for backend in ("cpu", "torch_native"):  # both paths, selected rows only
        logits = torch.from_numpy(np_logits.copy())
        apply_token_bitmask_inplace(logits, torch.from_numpy(np_bm), indices=[1], backend=backend)
        np.testing.assert_array_equal(logits.numpy(), ref_apply(np_logits, np_bm, indices=[1]))
    logits = torch.from_numpy(np_logits.copy())
    apply_token_bitmask_inplace(logits, torch.from_numpy(np_bm), vocab_size=10)
    np.testing.assert_array_equal(logits.numpy(), ref_apply(np_logits, np_bm, vocab_size=10))
    logits = torch.from_numpy(np_logits.copy())
    apply_token_bitmask_inplace(logits, torch.from_numpy(np_bm), indices=[0, 1], vocab_size=128)
    np.testing.assert_array_equal(logits.numpy(), ref_apply(np_logits, np_bm, vocab_size=128))
    with pytest.raises(xmask.BitmaskError):
        apply_token_bitmask_inplace(
            logits, torch.from_numpy(np_bm.astype(np.int64)), vocab_size=128
        )
    with pytest.raises(xmask.BitmaskError):  # batch 1 vs 2
        apply_token_bitmask_inplace(torch.zeros(1, 200), torch.from_numpy(np_bm), vocab_size=128)


def test_torch_apply_half_and_non_contiguous(torch):
    rng = np.random.default_rng(10)
    np_bm = random_bitmask(rng, 2, 100)
    logits = torch.zeros(2, 100, dtype=torch.float16)
    apply_token_bitmask_inplace(logits, torch.from_numpy(np_bm))
    np.testing.assert_array_equal(logits.float().numpy(), ref_apply(np.zeros((2, 100), np.float32), np_bm))
    base = torch.zeros(100, 2)
    logits = base.T  # non-contiguous; XGrammar 0.2.8's CPU path gets this wrong
    apply_token_bitmask_inplace(logits, torch.from_numpy(np_bm))
    np.testing.assert_array_equal(base.T.numpy(), ref_apply(np.zeros((2, 100), np.float32), np_bm))


def test_torch_apply_indices_xgrammar_semantics(torch):
    rng = np.random.default_rng(11)
    np_logits = rng.standard_normal((4, 70)).astype(np.float32)
    np_bm = random_bitmask(rng, 4, 70)
    logits = torch.from_numpy(np_logits.copy())
    apply_token_bitmask_inplace(logits, torch.from_numpy(np_bm), indices=[1, 3])
    np.testing.assert_array_equal(logits.numpy(), ref_apply(np_logits, np_bm, indices=[1, 3]))


def test_fill_into_torch_int32_tensor(torch):
    info = xmask.default_tokenizer_info()
    compiled = xmask.GrammarCompiler(info).compile_builtin_json_grammar()
    m = xmask.GrammarMatcher(compiled)
    assert m.accept_string('{"a": ')
    t = torch.full(get_bitmask_shape(2, info.vocab_size), -1, dtype=torch.int32)
    assert m.fill_next_token_bitmask(t, 1) is True
    ref = np.zeros(get_bitmask_shape(1, info.vocab_size), dtype=np.int32)
    m._reference_fill_next_token_bitmask(ref)
    np.testing.assert_array_equal(t[1].numpy(), ref[0])
    assert (t[0] == -1).all()
    one = torch.zeros(get_bitmask_shape(1, info.vocab_size)[1], dtype=torch.int32)  # 1-D
    m.fill_next_token_bitmask(one)
    np.testing.assert_array_equal(one.numpy(), ref[0])
    row = torch.zeros(t.shape, dtype=torch.int32)
    m.fill_next_token_bitmask(row[1])  # a row view: written through
    np.testing.assert_array_equal(row[1].numpy(), ref[0])
    assert (row[0] == 0).all()
    # and it applies to torch logits
    logits = torch.zeros(1, info.vocab_size)
    apply_token_bitmask_inplace(logits, t[1:])
    allowed = torch.isfinite(logits[0]).nonzero().flatten().tolist()
    assert allowed
    for tid in allowed:
        assert info.decoded_vocab[tid][:1] in b'{["-0123456789tfn \t\n\r'
    for bad in [torch.zeros(1, t.shape[1], dtype=torch.int64),
                torch.zeros(1, t.shape[1], dtype=torch.float32),
                torch.zeros(t.shape[1], 2, dtype=torch.int32).T]:
        with pytest.raises(xmask.BitmaskError):
            m.fill_next_token_bitmask(bad)


# ---------------------------------------------------------------------------- torch: both paths

FLOATS = ["float32", "float16", "bfloat16", "float64"]


def _cases(rng):
    """(logits shape, bitmask rows, vocab_size, indices) covering XGrammar's options."""
    return [
        ((1, 1), 1, None, None),
        ((3, 100), 3, None, None),
        ((2, 1000), 2, 999, None),
        ((4, 70), 4, None, [1, 3]),
        ((4, 70), 6, None, [3, 0]),  # more bitmask rows than logits rows: indices select
        ((6, 70), 2, 40, np.array([1, 0])),  # fewer bitmask rows
        ((77,), 1, None, None),  # 1-D logits
        ((5, 4000), 5, 3999, rng.permutation(5)[:3].tolist()),
        ((2, 64), 2, 0, None),  # nothing masked
    ]


@pytest.mark.parametrize("dtype", FLOATS)
def test_torch_cpu_and_torch_ops_paths_match_the_reference(torch, dtype):
    rng = np.random.default_rng(12)
    for shape, mask_rows, vocab_size, indices in _cases(rng):
        width = shape[-1]
        np_bm = random_bitmask(rng, mask_rows, width)
        if len(shape) == 1:
            np_bm = np_bm[0]
        base = torch.from_numpy(rng.standard_normal(shape).astype(np.float32))
        base = base.to(getattr(torch, dtype))
        # the reference runs in float64 on the values the tensor really holds
        expected = ref_apply(base.double().numpy(), np_bm, indices=indices, vocab_size=vocab_size)
        results = []
        for backend in ("auto", "cpu", "torch_native", "cuda"):  # cuda -> torch ops here
            logits = base.clone()
            apply_token_bitmask_inplace(logits, torch.from_numpy(np_bm), vocab_size=vocab_size,
                                        indices=indices, backend=backend)
            assert logits.dtype == base.dtype
            np.testing.assert_array_equal(logits.double().numpy(), expected)
            results.append(logits)
        assert all(torch.equal(results[0], r) for r in results[1:])


def test_torch_ops_path_directly(torch):
    # the device-generic function itself (what runs for CUDA logits), on CPU
    from xmask._bitmask_torch import apply_cpu, apply_torch_ops

    rng = np.random.default_rng(13)
    np_bm = random_bitmask(rng, 8, 128256)
    base = torch.randn(8, 128256)
    for rows in (None, np.array([7, 2, 5])):
        a, b = base.clone(), base.clone()
        apply_cpu(a, torch.from_numpy(np_bm), 128256, rows)
        apply_torch_ops(b, torch.from_numpy(np_bm), 128256, rows)
        assert torch.equal(a, b)
        assert torch.equal(torch.isinf(a), torch.from_numpy(ref_apply(base.numpy(), np_bm, rows)) == -np.inf)


def test_torch_apply_matches_xgrammar(torch):
    xgr = pytest.importorskip("xgrammar")
    rng = np.random.default_rng(14)
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        for vocab_size, indices in [(None, None), (1000, None), (None, [0, 2])]:
            np_bm = random_bitmask(rng, 3, 1024)
            base = torch.randn(3, 1024).to(dtype)
            ours, theirs = base.clone(), base.clone()
            apply_token_bitmask_inplace(ours, torch.from_numpy(np_bm), vocab_size=vocab_size,
                                        indices=indices)
            xgr.apply_token_bitmask_inplace(theirs, torch.from_numpy(np_bm.copy()),
                                            vocab_size=vocab_size, indices=indices)
            assert torch.equal(ours, theirs)


def test_torch_logits_with_numpy_bitmask_and_numpy_logits_with_torch_bitmask(torch):
    rng = np.random.default_rng(15)
    np_bm = random_bitmask(rng, 2, 100)
    np_logits = rng.standard_normal((2, 100)).astype(np.float32)
    t = torch.from_numpy(np_logits.copy())
    apply_token_bitmask_inplace(t, np_bm)
    np.testing.assert_array_equal(t.numpy(), ref_apply(np_logits, np_bm))
    arr = np_logits.copy()
    apply_token_bitmask_inplace(arr, torch.from_numpy(np_bm))
    np.testing.assert_array_equal(arr, ref_apply(np_logits, np_bm))


def test_torch_apply_writes_through_views(torch):
    # a 2-D view of 3-D logits (speculative decoding rows) and a column slice of wider logits
    rng = np.random.default_rng(16)
    np_bm = random_bitmask(rng, 3, 96)
    big = torch.randn(2, 3, 100)
    expected = ref_apply(big[1, :, :96].numpy(), np_bm)
    apply_token_bitmask_inplace(big[1, :, :96], torch.from_numpy(np_bm))
    np.testing.assert_array_equal(big[1, :, :96].numpy(), expected)
    assert torch.isfinite(big[0]).all() and torch.isfinite(big[1, :, 96:]).all()


def test_torch_apply_errors(torch):
    bm = torch.full((2, 4), -1, dtype=torch.int32)
    cases = [
        (torch.zeros(2, 128, dtype=torch.int64), bm, {}, "float32"),
        (torch.zeros(2, 128), bm.to(torch.int64), {}, "int32"),
        (torch.zeros(2, 128), bm.float(), {}, "int32"),
        (torch.zeros(2, 128), [[-1] * 4] * 2, {}, "list"),
        (torch.zeros(1, 2, 128), bm, {}, "1-D or 2-D"),
        (torch.zeros(2, 128), bm.view(2, 1, 4), {}, "1-D or 2-D"),
        (torch.zeros(3, 128), bm, {}, "pass indices"),
        (torch.zeros(2, 128), bm, {"indices": [2]}, "out of range"),
        (torch.zeros(2, 128), bm, {"indices": [-1]}, "out of range"),
        (torch.zeros(2, 128), bm, {"indices": [[0]]}, "1-D"),
        (torch.zeros(2, 128), bm, {"indices": [0.5]}, "ints"),
        (torch.zeros(2, 128), bm, {"vocab_size": 129}, "exceeds"),
        (torch.zeros(2, 100), bm, {"vocab_size": 101}, "exceeds"),
        (torch.zeros(2, 128), bm, {"vocab_size": -1}, "non-negative"),
        (torch.zeros(2, 128), bm, {"vocab_size": 1.5}, "int"),
        (torch.zeros(2, 128), bm, {"backend": "mlx"}, "backend"),
    ]
    for logits, mask, kwargs, match in cases:
        with pytest.raises(xmask.BitmaskError, match=match):
            apply_token_bitmask_inplace(logits, mask, **kwargs)
    meta = torch.zeros(2, 128, device="meta")
    with pytest.raises(xmask.BitmaskError, match="CPU logits"):
        apply_token_bitmask_inplace(meta, bm, backend="cpu")
    # the errors are RuntimeErrors and ValueErrors too (what servers catch from XGrammar)
    assert issubclass(xmask.BitmaskError, RuntimeError) and issubclass(xmask.BitmaskError, ValueError)


def test_apply_on_a_real_llama3_mask_with_padded_logits(torch):
    from conftest import tokenizer_json

    info = xmask.TokenizerInfo.from_huggingface(str(tokenizer_json("llama3")), vocab_size=128256)
    compiled = xmask.GrammarCompiler(info).compile_json_schema(
        {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
        any_whitespace=False,
    )
    m = xmask.GrammarMatcher(compiled)
    assert m.accept_string('{"n": ')
    bm = allocate_token_bitmask(1, info.vocab_size)
    m.fill_next_token_bitmask(bm)
    ref = np.zeros(get_bitmask_shape(1, info.vocab_size), np.int32)
    m._reference_fill_next_token_bitmask(ref)
    np.testing.assert_array_equal(bm.numpy(), ref)
    logits = torch.zeros(1, 128256 + 256)  # a model with extra padded rows
    apply_token_bitmask_inplace(logits, bm, vocab_size=128256)
    allowed = torch.isfinite(logits[0, :128256]).nonzero().flatten().tolist()
    assert allowed and all(info.decoded_vocab[t][:1] in b"-0123456789" for t in allowed)
    assert torch.isfinite(logits[0, 128256:]).all()  # past vocab_size: untouched (XGrammar)


# ---------------------------------------------------------------------- compiled apply kernel


def _mixed_bitmask(rng, batch, vocab):
    # Words of every kind the kernel treats differently: all allowed (-1, skipped), none
    # allowed (0, one run of 32 stores) and mixed (only the clear bits visited).
    bm = random_bitmask(rng, batch, vocab)
    kind = rng.integers(0, 3, size=bm.shape)
    bm[kind == 0] = -1
    bm[kind == 1] = 0
    return bm


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("vocab, vocab_size", [(97, None), (97, 70), (128, 128), (1000, 999)])
def test_kernel_on_every_word_kind_matches_the_reference(dtype, vocab, vocab_size):
    rng = np.random.default_rng(vocab * 7 + (vocab_size or 0))
    wide = rng.standard_normal((5, vocab + 9)).astype(dtype)
    logits = wide[::2, :vocab]  # strided rows, contiguous columns: the kernel's layout
    bm = _mixed_bitmask(rng, 3, vocab)
    for indices in (None, [2, 0]):
        got = logits.copy()
        view = wide.copy()[::2, :vocab]
        apply_token_bitmask_inplace(view, bm, vocab_size=vocab_size, indices=indices)
        expected = ref_apply(got, bm, indices=indices, vocab_size=vocab_size)
        np.testing.assert_array_equal(view, expected)


def test_kernel_writes_bfloat16_minus_inf_through_torch(torch):
    rng = np.random.default_rng(5)
    bm = _mixed_bitmask(rng, 4, 300)
    base = torch.from_numpy(rng.standard_normal((4, 300)).astype(np.float32)).bfloat16()
    logits = base.clone()
    apply_token_bitmask_inplace(logits, torch.from_numpy(bm), indices=[3, 1])
    expected = ref_apply(base.double().numpy(), bm, indices=[3, 1])
    np.testing.assert_array_equal(logits.double().numpy(), expected)


def test_kernel_refuses_layouts_it_cannot_take_and_the_fallback_handles_them():
    from xmask.runtime._apply import can_fill, fill_rows

    rng = np.random.default_rng(9)
    bm = _mixed_bitmask(rng, 2, 64)
    strided_columns = np.zeros((2, 128), np.float32)[:, ::2]
    swapped = np.zeros((2, 64), ">f4")
    assert not can_fill(strided_columns, bm) and not can_fill(swapped, bm)
    with pytest.raises(ValueError):
        fill_rows(strided_columns, bm, 64, None, np.float32(-np.inf))
    for logits in (strided_columns, swapped):
        expected = ref_apply(logits, bm)
        apply_token_bitmask_inplace(logits, bm)
        np.testing.assert_array_equal(logits, expected)
