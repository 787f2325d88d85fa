"""lax.platform_dependent on Kiln: a CPU backend, it takes the `cpu` branch unless a branch names
`kiln` itself (python/kiln/_lowering.py: enable_platform_dependent), under jit, grad and vmap."""

from __future__ import annotations

import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax import lax

from conftest import get_kiln_device

pytestmark = pytest.mark.requires_kiln


def _on_kiln(f, *args):
    return jax.jit(f)(*[jax.device_put(a, get_kiln_device()) for a in args])


def test_cpu_branch_is_taken():
    x = np.arange(3, dtype=np.float32)
    f = lambda x: lax.platform_dependent(x, cpu=jnp.sin, default=jnp.cos)
    np.testing.assert_allclose(_on_kiln(f, x), np.sin(x), rtol=1e-6)
    text = jax.jit(f).lower(jax.device_put(x, get_kiln_device())).as_text()
    assert "stablehlo.sine" in text and "stablehlo.cosine" not in text
    np.testing.assert_allclose(_on_kiln(jax.grad(lambda x: f(x).sum()), x), np.cos(x), rtol=1e-6)
    np.testing.assert_allclose(_on_kiln(jax.vmap(f), x), np.sin(x), rtol=1e-6)


def test_a_kiln_branch_wins_and_default_applies_without_cpu():
    x = np.arange(3, dtype=np.float32)
    both = lambda x: lax.platform_dependent(x, cpu=jnp.sin, kiln=jnp.tanh, default=jnp.cos)
    np.testing.assert_allclose(_on_kiln(both, x), np.tanh(x), rtol=1e-6)
    other = lambda x: lax.platform_dependent(x, tpu=jnp.sin, default=jnp.cos)
    np.testing.assert_allclose(_on_kiln(other, x), np.cos(x), rtol=1e-6)
