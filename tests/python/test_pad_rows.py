"""`lax.pad` against XLA:CPU bit for bit, on the geometries its two paths take
(kernels/shape_pad_slice.cc): where the operand's rows are contiguous in the result and in order
(edge and interior padding of the leading axes: an associative scan's interleave), the result is
written once in order, the padding value between the rows; otherwise (interior padding of the last
axis, crops that reorder nothing but leave no whole rows) the padding value goes everywhere first.
Sizes on both sides of the 64 KiB per task that splits the ordered pass over threads.
"""

from __future__ import annotations

import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax import lax

from conftest import check_both

# (operand shape, (low, high, interior) per axis)
CASES = [
    ((2048, 16), ((0, 1, 1), (0, 0, 0))),        # the interleave: rows into every other row
    ((2048, 16), ((1, 0, 1), (0, 0, 0))),
    ((5, 7), ((2, 3, 0), (1, 2, 0))),            # edges on both axes
    ((5, 7), ((-1, 2, 1), (0, -2, 0))),          # crops and interior rows
    ((3, 4, 5), ((1, 1, 2), (0, 3, 1), (2, 0, 0))),
    ((3, 4, 5), ((0, 0, 0), (2, 2, 0), (0, 0, 0))),
    ((9, 6), ((0, 0, 0), (1, 1, 2))),             # interior padding of the last axis
    ((300, 300), ((3, 4, 1), (5, 0, 0))),         # large: split over tasks
    ((64, 33, 8), ((1, 2, 1), (0, 0, 1), (0, 1, 0))),
    ((1000,), ((3, 5, 0),)),                       # one axis: one row
    ((1000,), ((-3, 5, 2),)),
    ((0, 4), ((2, 1, 1), (0, 0, 0))),            # an empty operand: all padding
    ((4, 1), ((0, 0, 3), (2, 2, 0))),
]
DTYPES = [np.float32, np.float64, np.int8, np.int32, jnp.bfloat16, np.complex64, np.bool_]


def operand(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if np.issubdtype(np.dtype(dtype), np.complexfloating):
        return (rng.normal(size=shape) + 1j * rng.normal(size=shape)).astype(dtype)
    if np.issubdtype(np.dtype(dtype), np.integer):
        return rng.integers(-100, 100, shape).astype(dtype)
    return rng.normal(size=shape).astype(dtype)


def pad_value(dtype):
    if dtype == np.bool_:
        return np.bool_(True)
    if np.issubdtype(np.dtype(dtype), np.complexfloating):
        return np.asarray(7 - 2j, dtype)
    return np.asarray(7, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape,config", CASES, ids=[f"{s}-{c}" for s, c in CASES])
def test_pad(shape, config, dtype):
    with jax.enable_x64(dtype == np.float64):
        x = operand(shape, dtype, 0)
        check_both(lambda x, v: lax.pad(x, v, config), x, pad_value(dtype), exact=True)


def test_interleave_as_associative_scan_writes_it():
    # The two pads and the add of one level of lax.associative_scan.
    def f(even, odd):
        zero = jnp.zeros((), even.dtype)
        return (lax.pad(even, zero, ((0, 1, 1), (0, 0, 0)))
                + lax.pad(odd, zero, ((1, 0, 1), (0, 0, 0))))

    check_both(f, operand((2048, 16), np.float32, 1), operand((2048, 16), np.float32, 2),
               exact=True)
