"""jax.random on Kiln vs JAX's CPU backend, bit for bit, at sizes around the counter's narrowing
(compiler/narrow_counters.h rewrites threefry's uint64 counters into uint32 when they provably
fit): 3 values, just below and above 2^16, and past 2^20, in 1-D and 2-D shapes, with the threefry
(default), rbg and unsafe_rbg key types, and with x64 on (64-bit bits). Bits, randint and uniform
must be identical (uniform's bits-to-float step is exact IEEE arithmetic); normal goes through
erf_inv and allows Kiln's transcendental tolerance.
"""

from __future__ import annotations

import numpy as np
import pytest

import jax

from conftest import assert_array_close, run_both

SHAPES = [(3,), (65535,), (65537,), ((1 << 20) + 3,), (257, 300)]
IMPLS = ["threefry2x32", "rbg", "unsafe_rbg"]


def key_data(impl, seed):
    return np.asarray(jax.random.key_data(jax.random.key(seed, impl=impl)))


def sample(impl, kind, shape):
    def f(data):
        key = jax.random.wrap_key_data(data, impl=impl)
        if kind == "bits":
            return jax.random.bits(key, shape)
        if kind == "randint":
            return jax.random.randint(key, shape, -7, 1000)
        if kind == "uniform":
            return jax.random.uniform(key, shape)
        return jax.random.normal(key, shape)

    return f


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("kind", ["bits", "randint", "uniform", "normal"])
@pytest.mark.parametrize("impl", IMPLS)
def test_random_matches_cpu(impl, kind, shape):
    kiln, cpu = run_both(sample(impl, kind, shape), key_data(impl, 42))
    assert kiln.dtype == cpu.dtype and kiln.shape == cpu.shape
    if kind == "normal":
        assert_array_close(kiln, cpu, kind="transcendental")
    else:
        np.testing.assert_array_equal(kiln.view(np.uint32) if kind == "uniform" else kiln,
                                      cpu.view(np.uint32) if kind == "uniform" else cpu)


@pytest.mark.parametrize("shape", [(5,), (65537,), ((1 << 20) + 1,)], ids=str)
def test_random_64_bit_bits_and_split(shape):
    with jax.enable_x64(True):
        def f(data):
            key = jax.random.wrap_key_data(data)
            k1, k2 = jax.random.split(key)
            return (jax.random.bits(k1, shape, np.uint64), jax.random.uniform(k2, shape, np.float64),
                    jax.random.key_data(jax.random.fold_in(key, 7)))

        kiln, cpu = run_both(f, key_data("threefry2x32", 3))
        for k, c in zip(kiln, cpu):
            assert k.dtype == c.dtype
            np.testing.assert_array_equal(k, c)
