"""Max / min pooling gradients (stablehlo.select_and_scatter) against the CPU backend. Pools over
NHWC's spatial axes leave trailing axes untouched, which Kiln runs a block of channels at a time
(SelectScatterBlockKernel, kernels/select_and_scatter.cc): flax's max_pool (2x2 stride 2, and 3x3
stride 2 SAME, whose windows overlap), equinox's MaxPool2d under vmap, min pooling, f64, inputs with
many ties (GE keeps the first maximum) and NaNs. Non-overlapping windows scatter one addition per
element, so those results must equal the CPU's bit for bit; overlapping windows add several, within
1e-6 relative."""

from __future__ import annotations

import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax import lax

from conftest import run_both

RNG = np.random.default_rng(35)


def compare(f, *args, exact):
    kiln, cpu = run_both(f, *args)
    for k, c in zip(jax.tree_util.tree_leaves(kiln), jax.tree_util.tree_leaves(cpu)):
        assert k.dtype == c.dtype and k.shape == c.shape
        if exact:
            np.testing.assert_array_equal(k, c)
        else:
            np.testing.assert_allclose(k, c, rtol=1e-6, atol=1e-6)


def flax_max_pool_grad(window, strides, padding):
    import flax.linen as nn

    def loss(x, w):
        return jnp.sum(nn.max_pool(x, window, strides=strides, padding=padding) * w)
    return jax.grad(loss)


@pytest.mark.parametrize("shape,window,strides,padding,exact", [
    ((4, 20, 20, 8), (2, 2), (2, 2), "VALID", True),
    ((3, 17, 15, 16), (2, 2), (2, 2), "SAME", True),
    ((2, 9, 11, 6), (3, 3), (2, 2), "SAME", False),
    ((5, 12, 12, 4), (3, 3), (1, 1), "VALID", False),
])
def test_flax_max_pool_gradients(shape, window, strides, padding, exact):
    x = RNG.standard_normal(shape).astype(np.float32)
    out = jax.eval_shape(lambda x: lax.reduce_window(
        x, -jnp.inf, lax.max, (1, *window, 1), (1, *strides, 1), padding), x).shape
    w = RNG.standard_normal(out).astype(np.float32)
    compare(flax_max_pool_grad(window, strides, padding), x, w, exact=exact)


def test_equinox_max_pool_under_vmap():
    import equinox as eqx
    pool = eqx.nn.MaxPool2d(kernel_size=2, stride=2)

    def loss(x):
        return jnp.sum(jax.vmap(pool)(x) ** 2)
    compare(jax.grad(loss), RNG.standard_normal((32, 8, 26, 26)).astype(np.float32), exact=True)


def test_min_pool_f64_and_ties():
    def loss(x):
        y = lax.reduce_window(x, jnp.inf, lax.min, (1, 3, 3, 1), (1, 3, 3, 1), "VALID")
        return jnp.sum(y * jnp.arange(y.size, dtype=x.dtype).reshape(y.shape))
    with jax.enable_x64(True):
        compare(jax.grad(loss), RNG.standard_normal((2, 9, 12, 5)), exact=True)
    # Few distinct values: most windows hold several equal minima; the first one is picked.
    ties = RNG.integers(0, 3, (3, 12, 9, 7)).astype(np.float32)
    compare(jax.grad(loss), ties, exact=True)


def test_max_pool_ties_and_nans():
    x = RNG.integers(0, 2, (4, 10, 10, 8)).astype(np.float32)
    x[0, 0, 0, :4] = np.nan
    x[1, 3, 2, 2] = np.nan

    def loss(x):
        y = lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        return jnp.sum(y * jnp.arange(1, y.size + 1, dtype=x.dtype).reshape(y.shape))
    compare(jax.grad(loss), x, exact=True)
