"""lax.approx_max_k / approx_min_k (custom call @ApproxTopK, kernels/approx_top_k.cc) on Kiln
against JAX's CPU backend, which computes them exactly: identical values and indices."""

from __future__ import annotations

import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax import lax

from conftest import get_cpu_device, get_kiln_device

pytestmark = pytest.mark.requires_kiln


def _same(f, *args):
    want = jax.jit(f)(*[jax.device_put(a, get_cpu_device()) for a in args])
    got = jax.jit(f)(*[jax.device_put(a, get_kiln_device()) for a in args])
    for w, g in zip(jax.tree.leaves(want), jax.tree.leaves(got)):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
@pytest.mark.parametrize("shape,axis", [((64,), 0), ((8, 200), 1), ((200, 6), 0), ((2, 50, 3), 1)])
@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("aggregate", [True, False])
def test_approx_top_k(dtype, shape, axis, op, aggregate):
    # Distinct values along the axis (exact in every dtype here): ties may be ordered either way.
    rng = np.random.default_rng(0)
    x = np.moveaxis(rng.permuted(np.broadcast_to(np.arange(shape[axis]), (
        *np.delete(shape, axis), shape[axis])), axis=-1), -1, axis).astype(dtype)
    fn = lax.approx_max_k if op == "max" else lax.approx_min_k
    _same(lambda a: fn(a, 5, reduction_dimension=axis, aggregate_to_topk=aggregate), x)


def test_approx_top_k_grad_and_vmap():
    x = np.array([[3.0, 0.5, 1.0, 7.0, 6.0, -2.0], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]], np.float32)
    _same(jax.grad(lambda a: lax.approx_max_k(a, 2)[0].sum()), x)
    _same(jax.vmap(lambda a: lax.approx_min_k(a, 3)), x)
