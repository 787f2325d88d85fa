"""Sharded jit programs that Kiln's SPMD partitioner (compiler/spmd_partitioner.h) runs per device,
each compared with JAX's CPU backend on the same mesh.

Run by test_spmd_partitioner.py in a fresh process with KILN_DEVICE_COUNT=N (4 or 8),
JAX_PLATFORMS=kiln,cpu and N CPU devices. Each case checks the values (rtol 1e-5 / atol 1e-6: the
devices' partial sums add in another order than one global dot), the results' `.sharding.spec`
and shard shapes against the CPU backend's, and that Kiln's compiled program is the per-device
one (its optimized text holds the manual computation, and the collectives the case needs).
Prints one JSON object: {case name: {"ok": bool, "detail": str}}.
"""

from __future__ import annotations

import os

import numpy as np

import jax
import jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from case_runner import run_cases

N = int(os.environ["KILN_DEVICE_COUNT"])
EXPLICIT = jax.sharding.AxisType.Explicit
AUTO = jax.sharding.AxisType.Auto
RTOL, ATOL = 1e-5, 1e-6
CASES = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


def mesh(platform, axis_type=AUTO, reverse=False):
    devices = jax.devices(platform)[:N]
    devices = np.array(devices[::-1] if reverse else devices).reshape(2, N // 2)
    return Mesh(devices, ("x", "y"), axis_types=(axis_type, axis_type))


def close(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.dtype, got.shape, want.dtype)
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


def run(fn, args, specs, axis_type=AUTO, collectives=(), reverse=False):
    """Runs jit(fn) on Kiln and on CPU, args placed by `specs`; compares values and shardings."""
    outs = {}
    for platform in ("kiln", "cpu"):
        m = mesh(platform, axis_type, reverse)
        with jax.set_mesh(m):
            placed = [jax.device_put(a, NamedSharding(m, s)) for a, s in zip(args, specs)]
            jitted = jax.jit(fn)
            outs[platform] = jitted(*placed)
            if platform == "kiln":
                text = jitted.lower(*placed).compile().as_text() or ""
                # The per-device program: the body of one manual computation over all axes.
                assert "SPMDFullToShardShape" in text, "not partitioned:\n" + text[-2000:]
                for name in collectives:
                    assert name in text, f"no {name} in:\n" + text[-2000:]
    for k, c in zip(jax.tree.leaves(outs["kiln"]), jax.tree.leaves(outs["cpu"])):
        close(k, c)
        assert k.sharding.spec == c.sharding.spec, (k.sharding.spec, c.sharding.spec)
        assert [s.data.shape for s in k.addressable_shards] == \
            [s.data.shape for s in c.addressable_shards]
        assert all(d.platform == "kiln" for d in k.sharding.device_set)
    return outs["kiln"]


# The five sharding combinations of JAX's export_test.py test_explicit_sharding_dot_general
# (mesh ('x', 'y')); fsdp and half_tp gather one operand's contracting dim, as XLA does.
DOT_COMBOS = {
    "x_y": (P("x", None), P(None, "y"), ()),
    "x_None": (P("x", None), P(None, None), ()),
    "contracting2": (P("x", "y"), P(None, None), ("all-gather",)),
    "fsdp": (P("x", None), P("x", None), ("all-gather",)),
    "half_tp": (P(None, "y"), P(None, "y"), ("all-gather",)),
}


def dot_case(name):
    spec1, spec2, collectives = DOT_COMBOS[name]

    def body():
        a = np.arange(2. * N * N).reshape(2 * N, N).astype(np.float32)
        run(lambda x, y: x @ y, [a, a.T], [spec1, spec2], EXPLICIT, collectives)
        rng = np.random.default_rng(1)
        b = rng.normal(size=(2 * N, 2 * N)).astype(np.float32)
        c = rng.normal(size=(2 * N, 2 * N)).astype(np.float32)
        grad = jax.grad(lambda x, y: jnp.sum(x @ y), argnums=(0, 1))
        run(grad, [b, c], [spec1, spec2], EXPLICIT)

    body.__name__ = f"dot_{name}"
    return case(body)


for _name in DOT_COMBOS:
    dot_case(_name)


@case
def fsdp_on_a_reversed_mesh():
    # The mesh lists the devices in reverse (its sdy.mesh has device_ids): groups follow them.
    rng = np.random.default_rng(7)
    a = rng.normal(size=(2 * N, N)).astype(np.float32)
    run(lambda x, y: jnp.sin(x @ y), [a, a.T], [P("x", None), P("x", None)], EXPLICIT,
        ("all-gather",), reverse=True)


@case
def elementwise_chain():
    rng = np.random.default_rng(2)
    a = rng.normal(size=(4 * N, 8)).astype(np.float32)
    b = rng.normal(size=(4 * N, 8)).astype(np.float32)
    # b comes split along x only: each device slices its y block of it.
    run(lambda x, y: jnp.tanh(x * 2.0 + y) - jnp.exp(-jnp.abs(y)), [a, b], [P("x", "y"), P("x")])


@case
def reductions_over_split_dims():
    rng = np.random.default_rng(3)
    a = rng.normal(size=(4 * N, 2 * N)).astype(np.float32)
    f = lambda x: (jnp.sum(x, axis=0), jnp.max(x, axis=1), jnp.sum(x * x), jnp.min(x))
    run(f, [a], [P("x", "y")], collectives=("all-reduce",))


@case
def reshard_by_constraint():
    rng = np.random.default_rng(4)
    a = rng.normal(size=(4 * N, 4 * N)).astype(np.float32)

    def f(x):
        y = jax.lax.with_sharding_constraint(jnp.sin(x), P(None, ("x", "y")))
        return jnp.transpose(y) * 3.0

    run(f, [a], [P("x", "y")], collectives=("all-gather",))


@case
def reshape_slice_concatenate():
    rng = np.random.default_rng(6)
    a = rng.normal(size=(4 * N, 8)).astype(np.float32)

    def f(x):
        y = x.reshape(4 * N, 2, 4)            # the split dim kept
        z = jnp.concatenate([y[:, :, 1:3], y[:, :, :1]], axis=2)  # unsplit dims sliced, joined
        return z.reshape(4 * N, 6) * 2.0, x.reshape(32 * N)      # merged: the split dim first

    run(f, [a], [P("x")])


@case
def data_parallel_mlp_and_grad():
    rng = np.random.default_rng(5)
    w1 = rng.normal(size=(6, 16)).astype(np.float32) * 0.3
    b1 = rng.normal(size=(16,)).astype(np.float32) * 0.1
    w2 = rng.normal(size=(16, 3)).astype(np.float32) * 0.3
    x = rng.normal(size=(4 * N, 6)).astype(np.float32)
    y = rng.normal(size=(4 * N, 3)).astype(np.float32)

    def loss(w1, b1, w2, x, y):
        h = jnp.tanh(x @ w1 + b1)
        return jnp.mean((h @ w2 - y) ** 2)

    batch = P(("x", "y"))
    specs = [P(), P(), P(), batch, batch]
    run(lambda *a: jnp.tanh(a[3] @ a[0] + a[1]) @ a[2], [w1, b1, w2, x, y], specs)
    run(jax.value_and_grad(loss, argnums=(0, 1, 2)), [w1, b1, w2, x, y], specs,
        collectives=("all-reduce",))


if __name__ == "__main__":
    run_cases(CASES)
