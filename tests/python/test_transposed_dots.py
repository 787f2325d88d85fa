"""Transposes of dot_general results folded into the dot (compiler/transposed_dots.h): the
transposed result is the dot with its operands swapped, written directly in the transposed layout.
Against the CPU backend: the forms JAX's gradients emit (an MLP layer's weight gradient), batched
dots with several free axes, every dtype the dot takes, a dot inside a scan body; pairs that must
not fold (another use of the dot, a permutation within a free group or of a batch axis) give the
same values too; the trace shows the fold happened."""

from __future__ import annotations

import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax import lax

from conftest import assert_array_close, run_both
from native_code import traced_step_names

RNG = np.random.default_rng(35)


def sample(dtype, shape):
    x = RNG.standard_normal(shape)
    if np.issubdtype(dtype, np.complexfloating):
        x = x + 1j * RNG.standard_normal(shape)
    if np.issubdtype(dtype, np.integer):
        return RNG.integers(-50, 50, shape).astype(dtype)
    return x.astype(dtype)


def check(f, *args, rtol=2e-5, atol=2e-5):
    kiln, cpu = run_both(f, *args)
    for k, c in zip(jax.tree_util.tree_leaves(kiln), jax.tree_util.tree_leaves(cpu)):
        assert_array_close(k, c, rtol=rtol, atol=atol)


def swapped_2d(a, b):  # dot_general(a, b) contracting the batch, transposed: a gradient's form
    return lax.transpose(lax.dot_general(a, b, (((0,), (0,)), ((), ()))), (1, 0))


def test_mlp_weight_gradient():
    def loss(w1, w2, x, y):
        h = jax.nn.relu(x @ w1)
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(h @ w2) * y, axis=-1))
    y = np.eye(10, dtype=np.float32)[RNG.integers(0, 10, 64)]
    check(jax.value_and_grad(loss, argnums=(0, 1)), sample(np.float32, (784, 128)) * 0.03,
          sample(np.float32, (128, 10)) * 0.1, sample(np.float32, (64, 784)), y)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.int32])
@pytest.mark.parametrize("shape", [(64, 128, 784), (7, 5, 3), (1, 9, 1)])
def test_two_dimensional(dtype, shape):
    k, m, n = shape
    with jax.enable_x64(dtype == np.float64):
        tol = 1e-12 if dtype == np.float64 else 2e-5
        check(swapped_2d, sample(dtype, (k, m)), sample(dtype, (k, n)), rtol=tol, atol=tol)


def test_bfloat16():
    import ml_dtypes
    a = sample(np.float32, (33, 17)).astype(ml_dtypes.bfloat16)
    b = sample(np.float32, (33, 20)).astype(ml_dtypes.bfloat16)
    check(swapped_2d, a, b, rtol=1e-2, atol=1e-2)


def test_batched_with_several_free_axes():
    def f(a, b):  # [3, 5, 7, 4] x [3, 4, 6] -> [3, 5, 7, 6] -> [3, 6, 5, 7]
        d = lax.dot_general(a, b, (((3,), (1,)), ((0,), (0,))))
        return lax.transpose(d, (0, 3, 1, 2))
    check(f, sample(np.float32, (3, 5, 7, 4)), sample(np.float32, (3, 4, 6)))


def test_einsum_output_order():
    check(lambda a, b: jnp.einsum("bij,bjk->bki", a, b), sample(np.float32, (4, 9, 11)),
          sample(np.float32, (4, 11, 13)))


def test_inside_a_scan_body():
    def f(a, xs):
        def step(c, x):
            g = swapped_2d(x, c)  # [8, 6] x [8, 6] -> [6, 6]
            return c + 0.01 * c @ g, g
        return lax.scan(step, a, xs)
    check(f, sample(np.float32, (8, 6)), sample(np.float32, (5, 8, 6)), rtol=1e-4, atol=1e-4)


def test_pairs_that_do_not_fold():
    def other_use(a, b):
        d = a @ b
        return d.T, d
    def within_a_free_group(a, b):  # [5, 7, 4] x [4, 6] -> [5, 7, 6] -> [7, 5, 6]
        return lax.transpose(lax.dot_general(a, b, (((2,), (0,)), ((), ()))), (1, 0, 2))
    def batch_axis_moved(a, b):  # [3, 5, 4] x [3, 4, 6] -> [3, 5, 6] -> [5, 3, 6]
        return lax.transpose(lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))), (1, 0, 2))
    check(other_use, sample(np.float32, (4, 8)), sample(np.float32, (8, 6)))
    check(within_a_free_group, sample(np.float32, (5, 7, 4)), sample(np.float32, (4, 6)))
    check(batch_axis_moved, sample(np.float32, (3, 5, 4)), sample(np.float32, (3, 4, 6)))


def test_the_transpose_is_gone(tmp_path):
    code = """
import jax, numpy as np
from jax import lax
f = jax.jit(lambda a, b: lax.transpose(lax.dot_general(a, b, (((0,), (0,)), ((), ()))), (1, 0)),
            device=jax.devices("kiln")[0])
jax.block_until_ready(f(np.ones((64, 128), np.float32), np.ones((64, 784), np.float32)))
"""
    names = traced_step_names(code, tmp_path)
    assert any("dot_general" in n for n in names), names
    assert not any("transpose" in n for n in names), names
