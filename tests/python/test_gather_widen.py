"""Element gathers and reductions of widened bf16/f16 codes (issue 35).

Element gathers (kernels/gather_element.cc): a gather of one element per index, as
`jnp.take_along_axis` on any axis and `x[i]` of a vector emit, reads each element straight from
its clamped index (eight at a time with vpgatherdd for 4-byte elements and int32 indices) and is an
index map the fusion pass runs ahead of the select of the fill value. Checked bit for bit against
the CPU backend: every axis, element types of 1 to 8 bytes, index types int32 / int16 / uint8 /
int64, out-of-range indices both ways (JAX's default `fill` mode gives NaN or the type's fill
value; `clip` clamps; negative indices count from the end), rows shorter and longer than a vector,
and the gathered values also returned (then the fused run stores them).

Widened reductions (kernels/reduce_widen.cc, compiler/narrow_inputs.cc): JAX reduces bf16 and f16
in f32 (`convert` then `reduce`); a reduction over leading or middle axes then reads the 16-bit
codes and widens each row as it reads it, and the f32 array is never made. The same bits as the
two steps run apart (the convert in one jit, the reduction in another), and against the CPU
backend within the reduction tolerance; infinities and NaNs included; the trace names the step.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import jax
import jax.numpy as jnp

from conftest import check_both, get_kiln_device, run_on
from native_code import traced_step_names
from opdata import x64_if

RNG = np.random.default_rng(35)


def _values(shape, dtype):
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return RNG.integers(info.min, info.max, shape, endpoint=True).astype(dtype)
    x = RNG.standard_normal(shape).astype(dtype)
    flat = x.reshape(-1)
    flat[:: max(1, flat.size // 5)] = np.nan  # NaNs move as bits
    return x


def _indices(shape, size, dtype):
    info = np.iinfo(dtype)
    lo, hi = max(int(info.min), -size - 3), min(int(info.max), size + 3)
    idx = RNG.integers(lo, hi, shape, endpoint=True)
    flat = idx.reshape(-1)
    flat[::7] = info.min
    flat[3::11] = info.max
    return idx.astype(dtype)


GATHER_SHAPES = [((512, 300), 1), ((300, 64), 0), ((7, 37, 5), 1), ((4, 3), 1), ((9,), 0),
                 ((2, 13, 11), 2), ((33, 17), -1)]


@pytest.mark.parametrize("mode", [None, "clip"])
@pytest.mark.parametrize("shape,axis", GATHER_SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.int32, ml_dtypes.bfloat16, np.int8])
def test_take_along_axis(shape, axis, dtype, mode):
    x = _values(shape, dtype)
    ishape = list(shape)
    ishape[axis] = ishape[axis] + 3 if len(shape) > 1 else 20
    idx = _indices(tuple(ishape), shape[axis], np.int32)
    check_both(lambda x, i: jnp.take_along_axis(x, i, axis=axis, mode=mode), x, idx, exact=True)


@pytest.mark.parametrize("index_dtype", [np.int16, np.uint8, np.int64])
def test_take_along_axis_index_types(index_dtype):
    with x64_if(index_dtype):
        x = _values((40, 21), np.float32)
        idx = _indices((40, 25), 21, index_dtype)
        check_both(lambda x, i: jnp.take_along_axis(x, i, axis=1), x, idx, exact=True)


def test_take_along_axis_f64_and_gathered_values_returned():
    with x64_if(np.float64):
        x = _values((30, 19), np.float64)
        idx = _indices((30, 19), 19, np.int32)
        check_both(lambda x, i: (jnp.take_along_axis(x, i, axis=1),
                                 jnp.take_along_axis(x, i, axis=1, mode="clip") * 2.0), x, idx,
                   exact=True)


def test_vector_indexing_and_grad():
    x = _values((1000,), np.float32)
    x[np.isnan(x)] = 0.5
    idx = _indices((257,), 1000, np.int32)
    check_both(lambda x, i: x[i], x, idx, exact=True)
    check_both(jax.grad(lambda x, i: jnp.sum(jnp.take_along_axis(x, i, axis=0, mode="clip") ** 2)),
               x, idx, kind="reduction")


REDUCTIONS = {
    "sum": jnp.sum,
    "mean": jnp.mean,
    "prod": jnp.prod,
    "max_of_f32": lambda x, axis: jnp.max(x.astype(jnp.float32), axis=axis),
}
REDUCE_SHAPES = [((2048, 512), (0,)), ((37, 19, 23), (0, 2)), ((37, 19, 23), (0,)),
                 ((37, 19, 23), (1,)), ((300, 5, 7), (0, 1)), ((5, 129), (0,))]


def _codes(shape, dtype, specials, near_one):
    x = RNG.standard_normal(shape).astype(np.float32)
    if near_one:  # products of a few hundred factors stay finite
        x = 1.0 + 0.01 * x
    if specials:
        flat = x.reshape(-1)
        flat[::97] = np.inf
        flat[5::101] = -np.inf
        flat[7::211] = np.nan
        flat[11::13] = -0.0
    return x.astype(dtype)


def _bits(a):
    """The bits, every NaN as one canonical NaN: which of two NaN operands an add or multiply
    returns (their signs and payloads) may differ between two correct orders of the operands
    (docs/engine.md)."""
    a = np.asarray(a).astype(np.float32)
    a = np.where(np.isnan(a), np.float32(np.nan), a)
    return a.view(np.uint32)


@pytest.mark.parametrize("specials", [False, True])
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@pytest.mark.parametrize("shape,axes", REDUCE_SHAPES)
@pytest.mark.parametrize("dtype", [ml_dtypes.bfloat16, np.float16])
def test_widened_reductions(dtype, shape, axes, name, specials):
    f = REDUCTIONS[name]
    x = _codes(shape, dtype, specials, name == "prod")
    if name == "max_of_f32" and specials:
        # XLA:CPU's column maximum drops NaNs (it returns the largest other value); JAX's
        # documented maximum propagates them, as numpy's does: compare with numpy exactly.
        k = np.asarray(run_on(lambda x: f(x, axis=axes), (x,), get_kiln_device(), None))
        np.testing.assert_array_equal(k, np.max(x.astype(np.float32), axis=axes))
    else:
        k, _ = check_both(lambda x: f(x, axis=axes), x, kind="reduction")
    # The convert and the reduction in separate jits (nothing to fuse): the same bits.
    kiln = get_kiln_device()
    wide = run_on(lambda x: x.astype(jnp.float32), (x,), kiln, None)
    apart = run_on(lambda w: f(w, axis=axes).astype(k.dtype), (wide,), kiln, None)
    np.testing.assert_array_equal(_bits(k), _bits(apart))


def test_widened_reduction_is_one_step(tmp_path):
    code = ("import jax, jax.numpy as jnp, numpy as np, ml_dtypes\n"
            "x = np.ones((64, 48), ml_dtypes.bfloat16)\n"
            "jax.jit(lambda x: jnp.mean(x, axis=0))(jax.device_put(x, jax.devices('kiln')[0]))"
            ".block_until_ready()\n")
    names = traced_step_names(code, tmp_path)
    assert any("reading the bf16 codes" in n for n in names), names
    assert not any(n.startswith("stablehlo.convert") for n in names), names
