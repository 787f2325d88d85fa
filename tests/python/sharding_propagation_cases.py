"""Result shardings Kiln propagates (compiler/sharding_propagation.h) against JAX's CPU backend.

Run by test_sharding_propagation.py in a fresh process with KILN_DEVICE_COUNT=4,
JAX_PLATFORMS=kiln,cpu and four CPU devices. Each case jits one function over a 2x2 mesh
('x', 'y', Auto axes) of each backend, with the same inputs placed alike, and requires of Kiln's
result what XLA:CPU gives: the same values, the same `out.sharding.spec` and the same shard on
every device (index and data; exact, since these programs move data or add integers and
small floats in the same order). The unreduced cases (explicit axes) require each device's own
partial sum of an einsum, as XLA:CPU gives it. Prints one JSON object {case: {"ok": bool, "detail": str}}.
"""

from __future__ import annotations


import numpy as np

import jax
import jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from case_runner import run_cases

AUTO = jax.sharding.AxisType.Auto


def mesh(platform):
    return Mesh(np.array(jax.devices(platform)[:4]).reshape(2, 2), ("x", "y"),
                axis_types=(AUTO, AUTO))


def spec_of(sharding, ndim):
    spec = tuple(sharding.spec) + (None,) * (ndim - len(sharding.spec))
    return tuple(tuple(s) if isinstance(s, (tuple, list)) else s for s in spec)


def shards(out):
    """(device id, index, data) of every shard; an unreduced value's shards have no index."""
    def index(s):
        try:
            return str(s.index)
        except NotImplementedError:
            return None
    return sorted(((s.device.id, index(s), np.asarray(s.data)) for s in out.addressable_shards),
                  key=lambda t: t[0])


def compare(f, args, specs, want_spec=None):
    """Runs jit(f) on both backends with args placed by specs; returns Kiln's result spec."""
    outs = {}
    for platform in ("kiln", "cpu"):
        m = mesh(platform)
        placed = [jax.device_put(a, NamedSharding(m, s)) for a, s in zip(args, specs)]
        outs[platform] = jax.jit(f)(*placed)
    k, c = outs["kiln"], outs["cpu"]
    np.testing.assert_array_equal(np.asarray(k), np.asarray(c))
    assert k.dtype == c.dtype, (k.dtype, c.dtype)
    ks, cs = spec_of(k.sharding, k.ndim), spec_of(c.sharding, c.ndim)
    assert ks == cs, f"Kiln {k.sharding.spec}, CPU {c.sharding.spec}"
    if want_spec is not None:
        assert cs == spec_of(NamedSharding(mesh("cpu"), want_spec), c.ndim), c.sharding.spec
    for (kd, ki, kv), (cd, ci, cv) in zip(shards(k), shards(c)):
        assert (kd, ki) == (cd, ci), f"device {kd} holds {ki}, CPU device {cd} holds {ci}"
        np.testing.assert_array_equal(kv, cv)
    return ks


def arange(*shape, dtype=np.float32):
    return (np.arange(int(np.prod(shape))) % 7 - 3).astype(dtype).reshape(shape)


CASES = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


@case
def elementwise_and_convert():
    compare(lambda v: (v * 2 + 1).astype(jnp.float16), [arange(8, 4)], [P("x", "y")], P("x", "y"))


@case
def transpose_permutes_axes():
    compare(lambda v: v.T, [arange(4, 4, 2, dtype=np.int32)], [P("x", "y")], P(None, "y", "x"))


@case
def broadcast_in_dim_maps_dims():
    compare(lambda v: jnp.broadcast_to(v[:, None, :], (8, 3, 4)) + 1, [arange(8, 4)],
            [P("x", "y")], P("x", None, "y"))


@case
def reshape_split():
    compare(lambda v: v.reshape(2, 4, 6) * 3, [arange(8, 6)], [P("x", None)], P("x", None, None))


@case
def reshape_merge():
    compare(lambda v: v.reshape(48), [arange(8, 6)], [P("x", None)], P("x"))


@case
def reduce_drops_reduced_dims():
    compare(lambda v: v.sum(axis=1, dtype=jnp.int32), [arange(8, 4, dtype=np.int32)],
            [P("x", "y")], P("x"))


@case
def slice_and_pad_of_unsharded_dims():
    compare(lambda v: jnp.pad(v[:, 1:4], ((0, 0), (1, 2))), [arange(8, 6)], [P("x", None)],
            P("x", None))


@case
def concatenate_keeps_other_dims():
    compare(lambda v: jnp.concatenate([v, v * 2], axis=1), [arange(8, 4)], [P("x", None)],
            P("x", None))


@case
def dot_general_free_dims():
    compare(lambda a, b: a @ b, [arange(8, 4, dtype=np.int32), arange(4, 6, dtype=np.int32)],
            [P("x", None), P(None, "y")], P("x", "y"))


@case
def dot_general_batch_dims():
    compare(lambda a, b: jnp.einsum("bij,bjk->bik", a, b),
            [arange(4, 2, 3, dtype=np.int32), arange(4, 3, 2, dtype=np.int32)],
            [P("x", None, None), P("x", None, None)], P("x", None, None))


@case
def select_and_clamp():
    compare(lambda v: jnp.clip(jnp.where(v > 0, v, -v), 0.5, 2.5), [arange(8, 4)],
            [P(None, "y")], P(None, "y"))


@case
def while_loop_keeps_sharding():
    compare(lambda v: jax.lax.fori_loop(0, 3, lambda i, c: c * 2 + 1, v), [arange(8, 4)],
            [P("x", None)], P("x", None))


@case
def cond_branches_agree():
    compare(lambda v: jax.lax.cond(v[0, 0] > 0, lambda u: u + 1, lambda u: u - 1, v),
            [arange(8, 4)], [P("x", "y")], P("x", "y"))


@case
def uneven_split_is_replicated():
    # 3 rows over x = 2 devices: no even split, the result is whole on every device.
    compare(lambda v: v[:3] * 2, [arange(8, 4)], [P("x", None)])


@case
def sharding_constraint_then_transpose():
    def f(v):
        w = jax.lax.with_sharding_constraint(v * 2, NamedSharding(mesh(v_platform[0]), P("y", "x")))
        return w.T
    # Each backend's constraint names its own mesh: run them apart, then compare.
    outs = {}
    for platform in ("kiln", "cpu"):
        v_platform[:] = [platform]
        m = mesh(platform)
        outs[platform] = jax.jit(f)(jax.device_put(arange(8, 4), NamedSharding(m, P())))
    k, c = outs["kiln"], outs["cpu"]
    np.testing.assert_array_equal(np.asarray(k), np.asarray(c))
    assert spec_of(k.sharding, 2) == spec_of(c.sharding, 2) == ("x", "y"), (k.sharding, c.sharding)
    for (kd, ki, kv), (cd, ci, cv) in zip(shards(k), shards(c)):
        assert (kd, ki) == (cd, ci)
        np.testing.assert_array_equal(kv, cv)


v_platform = ["kiln"]


def explicit_mesh(platform):
    explicit = jax.sharding.AxisType.Explicit
    return Mesh(np.array(jax.devices(platform)[:4]).reshape(2, 2), ("x", "y"),
                axis_types=(explicit, explicit))


def compare_unreduced(a_spec, b_spec, out_spec, exported=False):
    """einsum with an unreduced out_sharding: each device's own partial sum, as on XLA:CPU."""
    a = np.arange(16, dtype=np.int32).reshape(4, 4)
    b = (np.arange(16, dtype=np.int32).reshape(4, 4) % 5) - 2
    outs = {}
    for platform in ("kiln", "cpu"):
        m = explicit_mesh(platform)
        with jax.set_mesh(m):
            x = jax.device_put(a, NamedSharding(m, a_spec))
            y = jax.device_put(b, NamedSharding(m, b_spec))
            f = jax.jit(lambda u, v: jnp.einsum("ab,bc->ac", u, v, out_sharding=out_spec))
            if exported:
                exp = jax.export.deserialize(jax.export.export(f)(x, y).serialize())
                outs[platform] = exp.call(x, y)
            else:
                outs[platform] = f(x, y)
            total = jax.sharding.reshard(outs[platform], P())
            np.testing.assert_array_equal(np.asarray(total), a @ b)
    k, c = outs["kiln"], outs["cpu"]
    assert k.sharding.spec == c.sharding.spec == out_spec, (k.sharding, c.sharding)
    for (kd, ki, kv), (cd, ci, cv) in zip(shards(k), shards(c)):
        assert (kd, ki) == (cd, ci), f"device {kd} holds {ki}, CPU device {cd} holds {ci}"
        np.testing.assert_array_equal(kv, cv, err_msg=f"device {kd}")


@case
def unreduced_dot_partial_sums():
    compare_unreduced(P(None, "x"), P("x", None), P(None, None, unreduced={"x"}))


@case
def unreduced_dot_partial_sums_split_rows():
    compare_unreduced(P("y", "x"), P("x", None), P("y", None, unreduced={"x"}))


@case
def unreduced_dot_partial_sums_exported():
    compare_unreduced(P(None, "x"), P("x", None), P(None, None, unreduced={"x"}), exported=True)


def main():
    run_cases(CASES)


if __name__ == "__main__":
    main()
