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


def _primitive(name, cpu_rule_adds, default_rule_adds=None):
    """A primitive x -> x + k whose lowering rule is registered for "cpu" (adding cpu_rule_adds)
    and, when default_rule_adds is given, for every platform (adding that)."""
    from jax._src import core, dispatch
    from jax._src.interpreters import mlir

    p = core.Primitive(name)
    dispatch.simple_impl(p)
    p.def_abstract_eval(lambda x: core.ShapedArray(x.shape, x.dtype))
    adds = lambda k: mlir.lower_fun(lambda x: [x + np.float32(k)], multiple_results=True)
    mlir.register_lowering(p, lambda ctx, x: adds(cpu_rule_adds)(ctx, x), platform="cpu")
    if default_rule_adds is not None:
        mlir.register_lowering(p, lambda ctx, x: adds(default_rule_adds)(ctx, x))
    return p


def test_rules_registered_only_for_cpu_lower_for_kiln():
    # A library's primitive with a lowering only for "cpu" (e.g. the custom call of its own CPU
    # kernel): Kiln, a CPU, uses it instead of failing "rule ... not found for platform kiln".
    p = _primitive("kiln_test_cpu_only", cpu_rule_adds=2)
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(_on_kiln(p.bind, x), x + 2)
    # A rule registered after Kiln loaded counts too (the table is read when lowering).
    q = _primitive("kiln_test_cpu_only_late", cpu_rule_adds=5)
    np.testing.assert_array_equal(_on_kiln(q.bind, x), x + 5)


def test_default_rule_wins_over_a_cpu_only_rule():
    # Where JAX has a default rule, Kiln keeps lowering with it, as before.
    p = _primitive("kiln_test_cpu_and_default", cpu_rule_adds=2, default_rule_adds=1)
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(_on_kiln(p.bind, x), x + 1)
    cpu = jax.jit(p.bind)(jax.device_put(x, jax.devices("cpu")[0]))
    np.testing.assert_array_equal(cpu, x + 2)
