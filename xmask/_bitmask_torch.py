"""torch paths of ``apply_token_bitmask_inplace`` (imported only when the logits are tensors).

Two paths, same result:

* ``apply_cpu``: CPU logits.  The tensor's memory is shared with NumPy (bfloat16 / float16
  through an int16 view), the bits are unpacked once (``np.unpackbits`` of the complemented
  bytes) and -inf is written with one single-threaded ``np.putmask`` over the selected rows.
* ``apply_torch_ops``: any device (CUDA, MPS, ... and CPU, which is how the tests check it
  against ``apply_cpu``).  Only torch ops on the logits' device: shift each word by 0..31, test
  the low bit, ``masked_fill_``.  No custom kernel, no host round trip of the logits.
"""

from __future__ import annotations

from ._bitmask_rows import fill_disallowed, is_torch_bitmask, masked_rows, masked_widths
from .errors import BitmaskError

_FLOAT_DTYPES = ("torch.float32", "torch.float16", "torch.bfloat16", "torch.float64")
_NEG_INF_BITS = {"torch.bfloat16": -0x80, "torch.float16": -0x400}  # 0xFF80, 0xFC00 as int16


def as_2d(tensor, what: str):
    """A 1-D or 2-D tensor as a 2-D view (1-D -> one row), else BitmaskError."""
    if tensor.dim() == 1:
        return tensor.unsqueeze(0)
    if tensor.dim() != 2:
        raise BitmaskError(f"{what} must be 1-D or 2-D, got shape {tuple(tensor.shape)}")
    return tensor


def as_bitmask_tensor(bitmask):
    """The bitmask as a torch int32 tensor (a NumPy bitmask is shared, not copied)."""
    import torch

    return bitmask if is_torch_bitmask(bitmask) else torch.from_numpy(bitmask)


def apply_torch(logits, bitmask, vocab_size, indices, backend: str) -> None:
    """Check the inputs and dispatch to the CPU or the device-generic path (see module doc)."""
    if str(logits.dtype) not in _FLOAT_DTYPES:
        raise BitmaskError(
            f"logits must be float32, float16, bfloat16 or float64, got {logits.dtype}"
        )
    bm = as_2d(as_bitmask_tensor(bitmask), "bitmask")
    rows_l = as_2d(logits, "logits")
    width, padded = masked_widths(rows_l.shape[1], bm.shape[1], vocab_size)
    rows = masked_rows(indices, bm.shape[0], rows_l.shape[0])
    if padded > width:  # logits columns past the bitmask: never left open
        if rows is None:
            rows_l[:, width:padded] = float("-inf")
        else:
            import torch

            rows_l[torch.as_tensor(rows, device=rows_l.device), width:padded] = float("-inf")
    on_cpu = rows_l.device.type == "cpu"
    if backend == "cpu" and not on_cpu:
        raise BitmaskError(f"backend 'cpu' needs CPU logits, got {rows_l.device}")
    if on_cpu and backend in ("auto", "cpu"):
        apply_cpu(rows_l, bm, width, rows)
    else:
        apply_torch_ops(rows_l, bm, width, rows)


def apply_cpu(logits2d, bitmask2d, width: int, rows) -> None:
    """Mask 2-D CPU ``logits2d[rows, :width]`` with ``bitmask2d[rows]`` (rows None = all)."""
    import torch

    host = logits2d.detach()
    neg_inf_bits = _NEG_INF_BITS.get(str(host.dtype))
    if neg_inf_bits is None:
        host, value = host.numpy(), float("-inf")
    else:  # NumPy has no bfloat16: write -inf's bit pattern through a same-size int16 view
        host, value = host.view(torch.int16).numpy(), neg_inf_bits
    bm = bitmask2d if bitmask2d.device.type == "cpu" else bitmask2d.cpu()
    fill_disallowed(host, bm.numpy(), width, rows, value)


def apply_torch_ops(logits2d, bitmask2d, width: int, rows) -> None:
    """Same as ``apply_cpu`` with torch ops only, on the logits' device (bitmask moved there)."""
    import torch

    device = logits2d.device
    words = (width + 31) // 32
    bm = bitmask2d[:, :words].to(device, non_blocking=True)
    if rows is not None:
        bm = bm[torch.as_tensor(rows, device=device)]
    shifts = torch.arange(32, device=device, dtype=torch.int32)
    mask = (((bm.unsqueeze(-1) >> shifts) & 1) == 0).view(bm.shape[0], -1)[:, :width]
    _fill(logits2d, mask, width, rows)


def _fill(logits2d, mask, width: int, rows) -> None:
    # masked_fill_ on a column-sliced view writes through whatever the strides are; selected
    # rows go through one gather / fill / scatter instead of a Python loop per row.
    if rows is None:
        logits2d[:, :width].masked_fill_(mask, float("-inf"))
        return
    import torch

    index = torch.as_tensor(rows, device=logits2d.device)
    part = logits2d[index, :width]
    part.masked_fill_(mask, float("-inf"))
    logits2d[index, :width] = part
