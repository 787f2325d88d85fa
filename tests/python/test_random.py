"""stablehlo.rng_bit_generator on Kiln vs JAX's CPU backend: every algorithm (DEFAULT, PHILOX,
THREE_FRY), output widths 8-64 bits, scalar / odd / even / empty / rank-3 shapes, keys near the
counter's wrap-around, and JAX's `rbg` and `unsafe_rbg` PRNGs built on it (uniform, normal,
split, fold_in, randint, permutation, under vmap). Tolerance: none for bits, which must be
identical because programs and tests seed on them; floats made from them allow Kiln's math error.
"""

from __future__ import annotations

import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax import lax

from conftest import assert_array_close, run_both

ALGORITHMS = {
    "default": lax.RandomAlgorithm.RNG_DEFAULT,
    "philox": lax.RandomAlgorithm.RNG_PHILOX,
    "three_fry": lax.RandomAlgorithm.RNG_THREE_FRY,
}
SHAPES = [(), (1,), (5,), (8,), (3, 5), (2, 3), (5, 3, 7), (4, 1, 3), (0,), (3, 0), (1001,)]
DTYPES = [np.uint8, np.uint16, np.uint32, np.uint64]
KEYS = {
    "plain": [0x123456789, 0xABCDEF],
    "wrapping": [0xFFFFFFFFFFFFFFFF, 0xFFFFFFFFFFFFFFFE],  # the counter carries during the call
}


def assert_identical(kiln, cpu):
    """Integer results bit for bit; floats derived from the bits (uniform's scaling, normal's
    erf_inv) with the "transcendental" tolerance, since Kiln's vector math is not XLA's."""
    for k, c in zip(jax.tree_util.tree_leaves(kiln), jax.tree_util.tree_leaves(cpu)):
        assert k.dtype == c.dtype and k.shape == c.shape
        if np.issubdtype(k.dtype, np.floating):
            assert_array_close(k, c, kind="transcendental")
        else:
            np.testing.assert_array_equal(k, c)


@pytest.mark.parametrize("key", KEYS, ids=list(KEYS))
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("algorithm", ALGORITHMS, ids=list(ALGORITHMS))
def test_rng_bit_generator_bits_and_state(algorithm, shape, dtype, key):
    with jax.enable_x64(True):
        state = np.array(KEYS[key], np.uint64)
        f = lambda s: lax.rng_bit_generator(s, shape, dtype, algorithm=ALGORITHMS[algorithm])
        kiln, cpu = run_both(f, state)
        assert_identical(kiln, cpu)


@pytest.mark.parametrize("algorithm", ALGORITHMS, ids=list(ALGORITHMS))
def test_rng_bit_generator_u32x4_key_without_x64(algorithm):
    # JAX's usual key form: u32[4], bitcast to u64[2] inside the program (x64 mode off).
    state = np.array([1, 2, 3, 0xFFFFFFFF], np.uint32)
    f = lambda s: lax.rng_bit_generator(s, (4, 6), np.uint32, algorithm=ALGORITHMS[algorithm])
    kiln, cpu = run_both(f, state)
    assert_identical(kiln, cpu)


def test_rng_bit_generator_chained_states():
    # Feeding the new state back in walks the stream exactly as XLA does.
    def f(s):
        outs = []
        for _ in range(4):
            s, bits = lax.rng_bit_generator(s, (3, 3), np.uint32)
            outs.append(bits)
        return s, jnp.stack(outs)

    kiln, cpu = run_both(f, np.array([7, 8, 9, 10], np.uint32))
    assert_identical(kiln, cpu)


@pytest.mark.parametrize("impl", ["rbg", "unsafe_rbg"])
def test_jax_random_on_rbg(impl):
    def f(seed):
        key = jax.random.key(seed, impl=impl)
        k1, k2 = jax.random.split(key)
        return (jax.random.uniform(k1, (5, 7)),
                jax.random.normal(k2, (3, 4), dtype=jnp.float32),
                jax.random.randint(jax.random.fold_in(key, 3), (9,), 0, 100),
                jax.random.bits(k1, (2, 2), dtype=jnp.uint8),
                jax.random.permutation(k2, 10),
                jax.vmap(lambda k: jax.random.uniform(k, (2,)))(jax.random.split(key, 4)))

    kiln, cpu = run_both(f, np.int32(42))
    assert_identical(kiln, cpu)


def test_rng_bit_generator_in_scan():
    def f(s):
        def body(state, _):
            state, bits = lax.rng_bit_generator(state, (2,), np.uint32)
            return state, bits

        return lax.scan(body, s, None, length=5)

    kiln, cpu = run_both(f, np.array([5, 6, 7, 8], np.uint32))
    assert_identical(kiln, cpu)
