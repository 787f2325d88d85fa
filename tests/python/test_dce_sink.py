"""lax.dce_sink (custom call @dce_sink, kernels/custom_call.cc): compiles and runs on Kiln, computes
nothing itself, and the program's results equal the CPU backend's, under jit, grad and scan."""

from __future__ import annotations

import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax import lax

from conftest import get_cpu_device, get_kiln_device

pytestmark = pytest.mark.requires_kiln


def f(x):
    y = jnp.sin(x) + 1
    lax.dce_sink(y, prevent_mlir_dce=True)
    lax.dce_sink(x * 3)
    return x * 2 + lax.scan(lambda c, v: (c + v, None), 0.0, x)[0]


def test_dce_sink_runs_like_cpu():
    x = np.arange(5, dtype=np.float32)
    for fn in (f, jax.grad(lambda x: f(x).sum())):
        want = jax.jit(fn)(jax.device_put(x, get_cpu_device()))
        got = jax.jit(fn)(jax.device_put(x, get_kiln_device()))
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
