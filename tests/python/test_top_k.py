"""lax.top_k (stablehlo.composite "chlo.top_k") on Kiln against JAX's CPU backend: the same values
bit for bit and the same indices. Kiln runs a selection kernel for k up to 64 (kernels/top_k.cc) and
the composite's decomposition (a stable sort) above; both must give the sort's order exactly: keys
in TOTALORDER for floats (NaNs of either sign at the ends, -0 below +0), equal keys by index."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import jax
from jax import lax

from conftest import get_cpu_device, get_kiln_device

pytestmark = pytest.mark.requires_kiln


def _same(f, *args):
    want = jax.jit(f)(*[jax.device_put(a, get_cpu_device()) for a in args])
    got = jax.jit(f)(*[jax.device_put(a, get_kiln_device()) for a in args])
    for w, g in zip(jax.tree.leaves(want), jax.tree.leaves(got)):
        assert g.dtype == w.dtype and g.shape == w.shape
        w, g = np.asarray(w), np.asarray(g)
        if w.dtype.kind == "f" or w.dtype == ml_dtypes.bfloat16:
            # Bit for bit: NaN payloads and signed zeros are values too.
            w, g = w.view(f"u{w.dtype.itemsize}"), g.view(f"u{g.dtype.itemsize}")
        np.testing.assert_array_equal(g, w)


def _special(dtype, shape, rng):
    """Random values with many ties, NaNs of both signs, infinities and signed zeros."""
    x = rng.integers(-4, 5, shape).astype(np.float64) * 0.5
    pick = rng.random(shape)
    x[pick < 0.05] = np.nan
    x[(pick >= 0.05) & (pick < 0.08)] = -np.nan
    x[(pick >= 0.08) & (pick < 0.10)] = np.inf
    x[(pick >= 0.10) & (pick < 0.12)] = -np.inf
    x[(pick >= 0.12) & (pick < 0.16)] = -0.0
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("shape", [(1,), (37,), (6, 256), (3, 5, 70)])
@pytest.mark.parametrize("k", [1, 3, 8, 64, 65])
def test_top_k_floats(dtype, shape, k):
    if k > shape[-1]:
        pytest.skip("k above the last dimension")
    dt = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
    rng = np.random.default_rng(k * 100 + shape[-1])
    x = _special(dt, shape, rng)
    with jax.enable_x64(dtype == "float64"):
        _same(lambda a: lax.top_k(a, k), x)


@pytest.mark.parametrize("dtype", ["int8", "int32", "uint8", "uint32", "int64", "uint64"])
@pytest.mark.parametrize("k", [1, 5, 64])
def test_top_k_integers(dtype, k):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(k)
    x = rng.integers(info.min, info.max, (9, 100), dtype=dtype, endpoint=True)
    x[:, ::7] = info.max  # ties at the top
    x[:, 1::11] = info.min
    with jax.enable_x64(np.dtype(dtype).itemsize == 8):
        _same(lambda a: lax.top_k(a, k), x)


def test_top_k_all_equal_keeps_index_order():
    x = np.zeros((4, 50), np.float32)
    _same(lambda a: lax.top_k(a, 10), x)


def test_top_k_grad_and_vmap():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 33)).astype(np.float32)
    _same(jax.grad(lambda a: lax.top_k(a, 4)[0].sum()), x)
    _same(jax.vmap(lambda a: lax.top_k(a, 3)), x)
