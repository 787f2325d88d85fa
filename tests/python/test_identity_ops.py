"""maximum(x, -inf) and minimum(x, +inf) are x (compiler/program_builder.cc: SimplifyIdentityStep
makes such a step a view of x; JAX emits them for max and min with `initial`, softmax's row
maximum among them). Each must give x bit for bit, NaNs, infinities, signed zeros and subnormals
included, as XLA:CPU does; a constant that is not the identity must leave the op as it was; and a
result that is a view of a parameter is still a buffer of its own.
"""

from __future__ import annotations

import numpy as np
import pytest

import jax
import jax.numpy as jnp

from conftest import get_cpu_device, get_kiln_device
from opdata import F32, F64, x64_if

INF = float("inf")
PROGRAMS = {
    "max(x, -inf)": lambda x: jnp.maximum(x, -INF),
    "max(-inf, x)": lambda x: jnp.maximum(-INF, x),
    "min(x, inf)": lambda x: jnp.minimum(x, INF),
    "min(inf, x)": lambda x: jnp.minimum(INF, x),
    "max(x, full -inf)": lambda x: jnp.maximum(x, jnp.full(x.shape, -INF, x.dtype)),
    "max of rows with initial": lambda x: jnp.max(x.reshape(3, -1), axis=1, initial=-INF),
    # Not identities: the op stays.
    "max(x, -1e30)": lambda x: jnp.maximum(x, -1e30),
    "min(x, -inf)": lambda x: jnp.minimum(x, -INF),
    "max(x, mixed)": lambda x: jnp.maximum(x, jnp.where(jnp.arange(x.size) % 2 == 0, -INF, 0.0)
                                          .astype(x.dtype)),
}

IDENTITIES = ("max(x, -inf)", "max(-inf, x)", "min(x, inf)", "min(inf, x)", "max(x, full -inf)")


def _values(dtype):
    tiny = np.finfo(dtype).tiny
    v = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, tiny / 4, -tiny / 4, 1.5, -2.25,
                  np.finfo(dtype).max, -np.finfo(dtype).max], dtype)
    return v


@pytest.mark.requires_kiln
@pytest.mark.parametrize("dtype", [F32, F64], ids=str)
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_identity_steps_match_the_cpu_backend(name, dtype):
    fn = PROGRAMS[name]
    with x64_if(dtype):
        x = _values(dtype)
        kx = jax.device_put(x, get_kiln_device())
        got = np.asarray(jax.jit(fn)(kx))
        want = np.asarray(jax.jit(fn)(jax.device_put(x, get_cpu_device())))
    assert got.dtype == want.dtype and got.shape == want.shape
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan, err_msg=name)
    # Bit for bit, but for subnormal results, which XLA:CPU may flush to zero (Kiln does not).
    tiny = np.finfo(dtype).tiny
    sub = ~nan & (np.abs(got) < tiny) & (got != 0)
    np.testing.assert_array_equal(got[~nan & ~sub].view(np.uint8), want[~nan & ~sub].view(np.uint8),
                                  err_msg=name)
    same = got[sub].tobytes() == want[sub].tobytes()
    assert same or np.all(want[sub] == 0), name
    if name in IDENTITIES:  # and x itself, bit for bit (subnormals too)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(x), err_msg=name)
        np.testing.assert_array_equal(got[~nan].view(np.uint8), x[~nan].view(np.uint8),
                                      err_msg=name)


@pytest.mark.requires_kiln
def test_an_identity_of_a_parameter_is_a_buffer_of_its_own():
    x = np.arange(12, dtype=np.float32) - 5.5
    kx = jax.device_put(x, get_kiln_device())
    y = jax.jit(lambda v: jnp.maximum(v, -INF))(kx)
    kx.delete()
    np.testing.assert_array_equal(np.asarray(y), x)
