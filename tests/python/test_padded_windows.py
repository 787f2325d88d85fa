"""Pads folded into the reduce_window that sums them (compiler/padded_windows.h): JAX's gradient of
a sum / average pooling pads the cotangent with zeros between and around its elements and sums
stride-1 windows; Kiln reads the cotangent with a base dilation instead. Checked two ways: against
the CPU backend within 1e-6 (f32) / 1e-12 (f64) relative (XLA:CPU orders overlapping windows' sums
its own way, folded or not), and bit for bit against Kiln's own unfolded form (the same program
with the pad value computed at run time, which the pass cannot see is zero): adding +0.0 to a sum
folded from +0.0 changes no bit. Geometries: flax's avg_pool gradients (NHWC, odd sizes, SAME and
VALID, strides below and above the window, 1-D and 3-D), explicit pad + reduce_window in f32 / f64 /
int32 with -0.0 inputs; pairs that must not fold (a nonzero pad value, a max, cropping edges,
another use of the pad, an init that is not the pad value) give the same values too; the trace
shows the pad gone."""

from __future__ import annotations

import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax import lax

from conftest import run_both
from native_code import traced_step_names

RNG = np.random.default_rng(7)


def check(f, *args, tol=1e-6):
    """f(zero, *args) on Kiln with zero a literal 0 (folded) and a run-time 0 (not), bit for bit,
    and against the CPU backend within tol."""
    kiln_dev = jax.devices("kiln")[0]
    folded = jax.jit(lambda *a: f(0, *a), device=kiln_dev)(*args)
    unfolded = jax.jit(lambda z, *a: f(z, *a), device=kiln_dev)(np.zeros((), np.int32), *args)
    for a, b in zip(jax.tree_util.tree_leaves(folded), jax.tree_util.tree_leaves(unfolded)):
        np.testing.assert_array_equal(np.asarray(a).view(np.uint8), np.asarray(b).view(np.uint8))
    kiln, cpu = run_both(lambda *a: f(0, *a), *args)
    for k, c in zip(jax.tree_util.tree_leaves(kiln), jax.tree_util.tree_leaves(cpu)):
        assert k.dtype == c.dtype and k.shape == c.shape
        np.testing.assert_allclose(k, c, rtol=tol, atol=tol)


def pad_sum(x, zero, pads, window, strides, padding, **kw):
    """reduce_window(add) of x padded with `zero` (a literal 0 or a run-time one), as JAX's
    avg_pool transpose writes it."""
    z = jnp.asarray(zero).astype(x.dtype)
    return lax.reduce_window(lax.pad(x, z, pads), x.dtype.type(0), lax.add, window, strides,
                             padding, **kw)


def pool_grad(x, w, window, strides, padding, zero):
    """The input gradient of sum(avg_pool(x) * w) written out as JAX's transpose of a window sum
    writes it (pad the scaled cotangent with stride - 1 interior zeros, sum stride-1 windows),
    with `zero` as the pad value."""
    win, strd = (1, *window, 1), (1, *strides, 1)
    pads = lax.padtype_to_pads(x.shape, win, strd, padding)
    g = w / np.float32(np.prod(window))
    config = []
    for d in range(x.ndim):
        before = win[d] - 1 - pads[d][0]
        after = x.shape[d] + win[d] - 1 - ((g.shape[d] - 1) * strd[d] + 1) - before
        config.append((before, after, strd[d] - 1))
    return pad_sum(g, zero, config, win, (1,) * x.ndim, "VALID")


POOLS = [  # (input shape, window, strides, padding)
    ((16, 20, 20, 12), (2, 2), (2, 2), "VALID"),  # the flax CNN's
    ((3, 11, 9, 5), (3, 3), (2, 2), "SAME"),
    ((2, 7, 13, 3), (2, 3), (3, 1), "VALID"),
    ((2, 9, 4), (3,), (3,), "VALID"),  # 1-D
    ((1, 5, 6, 7, 2), (2, 2, 2), (2, 2, 2), "SAME"),  # 3-D
]


@pytest.mark.parametrize("shape,window,strides,padding", POOLS,
                         ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else v)
def test_avg_pool_gradients(shape, window, strides, padding):
    import flax.linen as nn
    y_shape = jax.eval_shape(lambda x: nn.avg_pool(x, window, strides=strides, padding=padding),
                             jax.ShapeDtypeStruct(shape, jnp.float32)).shape
    x = RNG.standard_normal(shape).astype(np.float32)
    w = RNG.standard_normal(y_shape).astype(np.float32)
    check(lambda zero, x, w: jax.grad(lambda x: jnp.sum(
        nn.avg_pool(x, window, strides=strides, padding=padding) * w))(x), x, w)
    # JAX's own transpose against the written-out one with a run-time zero: the same bits.
    kiln = jax.devices("kiln")[0]
    a = jax.jit(lambda x, w: pool_grad(x, w, window, strides, padding, 0), device=kiln)(x, w)
    b = jax.jit(lambda x, w, z: pool_grad(x, w, window, strides, padding, z), device=kiln)(
        x, w, np.zeros((), np.float32))
    c = jax.jit(jax.grad(lambda x: jnp.sum(
        nn.avg_pool(x, window, strides=strides, padding=padding) * w)), device=kiln)(x)
    np.testing.assert_array_equal(np.asarray(a).view(np.uint32), np.asarray(c).view(np.uint32))
    np.testing.assert_array_equal(np.asarray(a).view(np.uint32), np.asarray(b).view(np.uint32))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32], ids=lambda d: np.dtype(d).name)
def test_explicit_pad_then_window_sum(dtype):
    x = RNG.standard_normal((4, 6, 5))
    x = (x * 10).astype(dtype) if dtype == np.int32 else x.astype(dtype)
    if dtype != np.int32:
        x[0, :3] = -0.0  # windows of -0.0 and padding: +0.0 either way

    def f(zero, x):
        return (pad_sum(x, zero, [(0, 0, 0), (2, 1, 1), (1, 3, 2)], (1, 3, 2), (1, 1, 2), "VALID"),
                pad_sum(x, zero, [(1, 0, 0), (0, 0, 0), (0, 0, 1)], (2, 2, 3), (1, 2, 1),
                        [(0, 1), (1, 1), (2, 0)], window_dilation=(1, 2, 1)))
    with jax.enable_x64(dtype == np.float64):
        check(f, x, tol=1e-12 if dtype == np.float64 else 1e-6)


def test_pairs_that_do_not_fold():
    x = RNG.standard_normal((5, 7)).astype(np.float32)

    def f(zero, x):
        one = lax.pad(x, 1.0, [(1, 1, 1), (0, 2, 0)])  # nonzero pad value
        shared = lax.pad(x, 0.0, [(1, 1, 1), (1, 0, 0)])  # the pad has another use
        return (lax.reduce_window(one, 0.0, lax.add, (2, 2), (1, 1), "VALID"),
                lax.reduce_window(lax.pad(x, -jnp.inf, [(0, 0, 1), (1, 1, 0)]), -jnp.inf,
                                  lax.max, (2, 2), (1, 1), "VALID"),
                pad_sum(x, zero, [(-1, 1, 1), (0, -2, 0)], (2, 2), (1, 1), "VALID"),  # cropping
                lax.reduce_window(shared, 0.0, lax.add, (3, 1), (2, 1), "VALID"), shared * 2,
                lax.reduce_window(lax.pad(x, 0.0, [(1, 1, 1), (0, 0, 0)]), 1.0, lax.add,
                                  (2, 2), (1, 1), "VALID"))  # init 1: not the pad value
    check(f, x)


def test_trace_has_no_pad(tmp_path):
    code = """
import jax, jax.numpy as jnp, numpy as np
import flax.linen as nn
f = jax.jit(jax.grad(lambda x: jnp.sum(nn.avg_pool(x, (2, 2), strides=(2, 2)) ** 2)),
            device=jax.devices("kiln")[0])
jax.block_until_ready(f(np.ones((2, 8, 8, 3), np.float32)))
"""
    names = traced_step_names(code, tmp_path)
    assert any("reduce_window" in n for n in names), names
    assert not any("stablehlo.pad" in n for n in names), names
