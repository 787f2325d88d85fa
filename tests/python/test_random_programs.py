"""jax.random programs as users write them, on Kiln vs JAX's CPU backend, over the paths issue 35
changed: the call chain @_normal -> @_uniform -> @threefry2x32 flattened into one block
(compiler/flatten_calls.h), a run of 16 or more members given native code below 256 elements
(codegen/fused_tile_emitter.h), a run never ending in a broadcast that its reader follows
(compiler/fusion.cc), and scatter-add of whole window rows (kernels/scatter.cc).

Random bits, and everything made from them by exact steps (uniform's bits-to-float, bernoulli's
compare, randint, categorical's argmax of Gumbel noise, permutation's sort), must be identical to
XLA:CPU's; `normal` goes through erf_inv and is compared with Kiln's transcendental tolerance, its
uniform input bit for bit. Sizes: 1, 3 and 17 values (interpreted and small native runs), 255 and
257 (both sides of the native threshold), 2^16 + 1 and 2^20 + 3 (many tiles, both threads).
"""

from __future__ import annotations

import numpy as np
import pytest

import jax
import jax.numpy as jnp

from conftest import assert_array_close, run_both

SIZES = [1, 3, 17, 255, 257, 65537, (1 << 20) + 3]


def key(seed):
    return np.asarray(jax.random.key_data(jax.random.key(seed)))


def exact(kiln, cpu):
    assert kiln.dtype == cpu.dtype and kiln.shape == cpu.shape
    if kiln.dtype.kind == "f":
        kiln, cpu = kiln.view(np.uint32 if kiln.itemsize == 4 else np.uint64), \
            cpu.view(np.uint32 if cpu.itemsize == 4 else np.uint64)
    np.testing.assert_array_equal(kiln, cpu)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("kind", ["bits", "uniform", "bernoulli", "randint"])
def test_exact_draws(kind, n):
    def f(data):
        k = jax.random.wrap_key_data(data)
        if kind == "bits":
            return jax.random.bits(k, (n,))
        if kind == "uniform":
            return jax.random.uniform(k, (n,), minval=-0.99999994, maxval=1.0)
        if kind == "bernoulli":
            return jax.random.bernoulli(k, 0.25, (n,))
        return jax.random.randint(k, (n,), -5, 1000)

    exact(*run_both(f, key(n)))


@pytest.mark.parametrize("n", SIZES)
def test_normal(n):
    kiln, cpu = run_both(lambda d: jax.random.normal(jax.random.wrap_key_data(d), (n,)), key(7))
    assert_array_close(kiln, cpu, kind="transcendental")


@pytest.mark.parametrize("shape", [(64, 10), (3, 5), (256, 1000)], ids=str)
def test_categorical(shape):
    logits = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    kiln, cpu = run_both(
        lambda d, l: jax.random.categorical(jax.random.wrap_key_data(d), l, axis=-1),
        key(19), logits)
    exact(kiln, cpu)


@pytest.mark.parametrize("count,n", [(8, 16), (2, 3), (64, 1000)])
def test_split_then_vmap(count, n):
    def f(d):
        keys = jax.random.split(jax.random.wrap_key_data(d), count)
        return (jax.vmap(lambda k: jax.random.uniform(k, (n,)))(keys),
                jax.vmap(lambda k: jax.random.normal(k, (n,)))(keys),
                jax.random.key_data(keys))

    (u_k, z_k, keys_k), (u_c, z_c, keys_c) = run_both(f, key(23))
    exact(u_k, u_c)
    exact(keys_k, keys_c)
    assert_array_close(z_k, z_c, kind="transcendental")


def test_permutation_and_fold_in():
    def f(d, x):
        k = jax.random.wrap_key_data(d)
        k1, k2 = jax.random.split(jax.random.fold_in(k, 3))
        return jax.random.permutation(k1, x), jax.random.choice(k2, 100, (20,), replace=False)

    x = np.arange(10000, dtype=np.float32)
    for k, c in zip(*run_both(f, key(9), x)):
        exact(k, c)


# Long integer chains (32-bit hash rounds) at sizes below the native threshold: the small native
# runs against XLA:CPU, bit for bit.
@pytest.mark.parametrize("n", [1, 2, 7, 8, 9, 16, 33, 255])
def test_small_integer_chains(n):
    def f(x, y):
        for r in (13, 15, 26, 6, 17, 29, 16, 24):
            x = x + y
            y = (y << r) | (y >> (32 - r))
            y = y ^ x
        return x, y ^ (x >> 9)

    rng = np.random.default_rng(n)
    a = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    b = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    for k, c in zip(*run_both(f, a, b)):
        exact(k, c)


# Embedding gradients: scatter-add of whole rows, with repeated ids (rows updated several times,
# in order).
@pytest.mark.parametrize("rows,width,ids", [(5000, 64, (32, 40)), (10, 3, (7,)), (100, 33, (50, 2))])
def test_embedding_grad_scatter_add(rows, width, ids):
    rng = np.random.default_rng(rows)
    table = rng.standard_normal((rows, width)).astype(np.float32)
    idx = rng.integers(0, rows, ids).astype(np.int32)
    idx.flat[-1] = idx.flat[0]  # a repeated id

    def loss(t, i):
        return jnp.mean(jnp.tanh(t[i]).sum(-1) ** 2)

    kiln, cpu = run_both(jax.value_and_grad(loss), table, idx)
    for k, c in zip(kiln, cpu):
        assert_array_close(k, c, kind="transcendental")
    # Row scatter-add alone (mode="drop" skips the out-of-range id), exact on integers.
    upd = rng.integers(-100, 100, ids + (width,)).astype(np.int32)
    bad = idx.copy()
    bad.flat[1] = rows + 5
    kiln, cpu = run_both(lambda u, i: jnp.zeros((rows, width), jnp.int32).at[i].add(u, mode="drop"),
                         upd, bad)
    np.testing.assert_array_equal(kiln, cpu)
