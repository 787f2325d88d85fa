"""GSPMD-partitioned programs (`mhlo.sharding`) on N Kiln devices, each compared with JAX's CPU
backend.

Run by test_gspmd.py in a fresh process (the device count is fixed when the backends start):
KILN_DEVICE_COUNT=N, JAX_PLATFORMS=kiln,cpu and --xla_force_host_platform_device_count=N. Each
case lowers with `jax_use_shardy_partitioner=False` (set around the case, restored after), so @main's
arguments and results carry GSPMD's HloSharding text, runs on N Kiln and N CPU devices and compares
the values (rtol 1e-5 / atol 1e-6 for floats: Kiln and XLA may reduce in different orders; integers
exactly) and where each device's piece lies (`out.sharding`'s device-to-index map, device i of one
backend against device i of the other). Prints one JSON object: {case: {"ok": bool, "detail": str}}.
"""

from __future__ import annotations

import contextlib
import os

import numpy as np

import jax
import jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from case_runner import run_cases

N = int(os.environ["KILN_DEVICE_COUNT"])
RTOL, ATOL = 1e-5, 1e-6


@contextlib.contextmanager
def gspmd():
    saved = jax.config.jax_use_shardy_partitioner
    jax.config.update("jax_use_shardy_partitioner", False)
    try:
        yield
    finally:
        jax.config.update("jax_use_shardy_partitioner", saved)


def devices(platform, order=None):
    ds = jax.devices(platform)[:N]
    return [ds[i] for i in order] if order is not None else ds


def mesh(platform, shape, names, order=None):
    return Mesh(np.array(devices(platform, order)).reshape(shape), names)


def close(got, want):
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or got.dtype != want.dtype:
        raise AssertionError(f"got {got.dtype}{got.shape}, want {want.dtype}{want.shape}")
    if np.issubdtype(want.dtype, np.inexact):
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
    else:
        np.testing.assert_array_equal(got, want)


def same_placement(k, c):
    """Kiln's array k is split over Kiln's devices as the CPU's c over the CPU's (device i with
    device i), and every device's piece holds the CPU's values."""
    kd, cd = jax.devices("kiln"), jax.devices("cpu")
    kmap = k.sharding.devices_indices_map(k.shape)
    cmap = c.sharding.devices_indices_map(c.shape)
    assert all(d.platform == "kiln" for d in kmap), k.sharding
    for i in range(N):
        want = cmap.get(cd[i])
        got = kmap.get(kd[i])
        norm = lambda idx: tuple((s.indices(n)[:2]) for s, n in zip(idx, c.shape)) if idx else None
        assert norm(got) == norm(want), f"device {i}: Kiln {got}, CPU {want} ({k.sharding} vs {c.sharding})"
    for shard in k.addressable_shards:
        close(shard.data, np.asarray(c)[shard.index])


def on_both(build, *args):
    """build(platform) -> (callable, args placed for it); compares outputs and placements."""
    outs = {}
    for platform in ("kiln", "cpu"):
        fn, placed = build(platform)
        with gspmd():
            outs[platform] = fn(*placed)
    for k, c in zip(jax.tree.leaves(outs["kiln"]), jax.tree.leaves(outs["cpu"])):
        close(k, c)
        same_placement(k, c)
    return outs["kiln"], outs["cpu"]


def hlo_of(fn, *args):
    with gspmd():
        return fn.lower(*args).as_text()


CASES = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


@case
def elementwise_sharded_argument():
    # {devices=[N]<=[N]} in; the result is unspecified and follows the argument.
    x = np.arange(4.0 * N * 3, dtype=np.float32).reshape(4 * N, 3)

    def build(platform):
        s = NamedSharding(mesh(platform, (N,), ("x",)), P("x"))
        return jax.jit(lambda v: jnp.sin(v) * 2 + 1, in_shardings=s), (jax.device_put(x, s),)

    on_both(build)
    fn, args = build("kiln")
    assert 'mhlo.sharding = "{devices=' in hlo_of(fn, *args)


@case
def matmul_2d_mesh_with_result_shardings():
    # Tiled, partially replicated (last_tile_dim_replicate) and transposed-iota result shardings.
    a = np.random.default_rng(0).standard_normal((8, 8)).astype(np.float32)
    b = np.random.default_rng(1).standard_normal((8, 4)).astype(np.float32)

    def build(platform):
        m = mesh(platform, (2, N // 2), ("x", "y"))
        ins = (NamedSharding(m, P("x", "y")), NamedSharding(m, P(None, "x")))
        outs = (NamedSharding(m, P("y")), NamedSharding(m, P()), NamedSharding(m, P("x", None)))
        f = jax.jit(lambda u, v: (u * 2, u @ v, jnp.tanh(u @ v)), in_shardings=ins,
                    out_shardings=outs)
        return f, (jax.device_put(a, ins[0]), jax.device_put(b, ins[1]))

    on_both(build)


@case
def transposed_device_order():
    # A mesh over devices in transposed order: `<=[a,b]T(1,0)` tile assignments.
    x = np.arange(8 * 8, dtype=np.int32).reshape(8, 8)
    order = list(np.arange(N).reshape(2, N // 2).T.reshape(-1))

    def build(platform):
        m = mesh(platform, (2, N // 2), ("x", "y"), order)
        s = NamedSharding(m, P("y", "x"))
        return jax.jit(lambda v: v * 3 - 1, in_shardings=s, out_shardings=s), (jax.device_put(x, s),)

    on_both(build)
    if N > 2:
        fn, args = build("kiln")
        assert "T(1,0)" in hlo_of(fn, *args), hlo_of(fn, *args)


@case
def explicit_device_list():
    # A mesh over a permutation of the devices no iota describes: `{devices=[N]1,0,3,2,...}`.
    x = np.arange(2.0 * N, dtype=np.float32)
    order = [i ^ 1 for i in range(N)]

    def build(platform):
        s = NamedSharding(mesh(platform, (N,), ("x",), order), P("x"))
        return jax.jit(lambda v: v + 10, in_shardings=s, out_shardings=s), (jax.device_put(x, s),)

    on_both(build)


@case
def sharding_constraint_inside():
    # with_sharding_constraint (GSPMD's @Sharding custom call) on the returned value.
    x = np.random.default_rng(2).standard_normal((2 * N, 4)).astype(np.float32)

    def build(platform):
        m = mesh(platform, (N,), ("x",))
        s = NamedSharding(m, P("x"))
        f = jax.jit(lambda v: jax.lax.with_sharding_constraint(v.sum(0, keepdims=True) * v, s))
        return f, (jax.device_put(x, NamedSharding(m, P())),)

    on_both(build)


@case
def exported_with_gspmd_called_with_shardy():
    # jax.export under GSPMD (as every artifact saved before Shardy), deserialized and called
    # from a Shardy program.
    from jax import export
    x = np.arange(4.0 * N, dtype=np.float32).reshape(N, 4)
    with gspmd():
        m = mesh("cpu", (N,), ("x",))
        s = NamedSharding(m, P("x"))
        exp = export.export(jax.jit(lambda v: jnp.cos(v) * v, in_shardings=s, out_shardings=s),
                            platforms=("cpu", "kiln"))(jax.ShapeDtypeStruct(x.shape, x.dtype))
        blob = exp.serialize()
    assert "mhlo.sharding" in exp.mlir_module()
    loaded = export.deserialize(blob)
    outs = {}
    for platform in ("kiln", "cpu"):
        s = NamedSharding(mesh(platform, (N,), ("x",)), P("x"))
        outs[platform] = jax.jit(loaded.call, in_shardings=s, out_shardings=s)(jax.device_put(x, s))
    close(outs["kiln"], outs["cpu"])
    same_placement(outs["kiln"], outs["cpu"])


@case
def shard_map_collectives_2d():
    # shard_map under GSPMD (@SPMDFullToShardShape / @SPMDShardToFullShape around the body):
    # per-device code with collectives, on a 2-D mesh, pieces split along one or both axes.
    x = np.random.default_rng(3).standard_normal((8, 4 * N)).astype(np.float32)
    y = np.arange(4.0 * N, dtype=np.float32)

    def build(platform):
        m = mesh(platform, (2, N // 2), ("a", "b"))

        def body(u, v):
            s = jax.lax.psum(u.sum(), ("a", "b"))
            g = jax.lax.all_gather(v, "b", tiled=True)
            return u * s, g * 2, jax.lax.pmax(v, "a")

        f = jax.jit(jax.shard_map(body, mesh=m, in_specs=(P("a", "b"), P("b")),
                                  out_specs=(P("a", "b"), P(), P("b")), check_vma=False))
        return f, (jax.device_put(x, NamedSharding(m, P("a", "b"))),
                   jax.device_put(y, NamedSharding(m, P("b"))))

    on_both(build)
    fn, args = build("kiln")
    assert "SPMDFullToShardShape" in hlo_of(fn, *args)


@case
def shard_map_under_grad():
    # A jitted shard_map differentiated: JAX puts the GSPMD bridges in a function of their own.
    x = np.random.default_rng(4).standard_normal((2 * N, 3)).astype(np.float32)

    def build(platform):
        m = mesh(platform, (N,), ("x",))
        f = jax.jit(jax.shard_map(lambda v: jax.lax.all_gather(jnp.sin(v), "x", tiled=True),
                                  mesh=m, in_specs=P("x"), out_specs=P(), check_vma=False))
        g = jax.jit(jax.grad(lambda v: (f(v) ** 2).sum()))
        return g, (jax.device_put(x, NamedSharding(m, P("x"))),)

    on_both(build)


@case
def shard_map_without_operands_and_replicated_result():
    # No operands (only @SPMDShardToFullShape), and a result declared replicated that differs
    # per device (check_vma=False): XLA's value is device 0's.
    def build(platform):
        m = mesh(platform, (N,), ("x",))
        f = jax.jit(jax.shard_map(lambda: (jax.lax.axis_index("x")[None],
                                           jax.lax.axis_index("x") * jnp.ones(3, jnp.int32)),
                                  mesh=m, in_specs=(), out_specs=(P("x"), P()),
                                  check_vma=False))
        return f, ()

    k, _ = on_both(build)
    close(k[0], np.arange(N, dtype=np.int32))
    close(k[1], np.zeros(3, np.int32))


@case
def pmap_psum_and_axis_index():
    def build(platform):
        f = jax.pmap(lambda v: v * jax.lax.axis_index("i") + jax.lax.psum(v, "i"), axis_name="i",
                     devices=devices(platform))
        return f, (np.arange(2.0 * N, dtype=np.float32).reshape(N, 2),)

    outs = {}
    for platform in ("kiln", "cpu"):
        fn, args = build(platform)
        with gspmd():
            outs[platform] = np.asarray(fn(*args))
    close(outs["kiln"], outs["cpu"])


@case
def partially_manual_shard_map():
    # A shard_map manual along one mesh axis only (axis_names): GSPMD marks the values between
    # the bridges manual along a subgroup; the body runs per device, whole along the other axis.
    x = np.arange(8.0 * N, dtype=np.float32).reshape(4, 2 * N)

    def build(platform):
        m = mesh(platform, (2, N // 2), ("a", "b"))
        f = jax.jit(jax.shard_map(lambda v: v * 2 + jax.lax.psum(v, "a"), mesh=m,
                                  in_specs=P("a"), out_specs=P("a"), axis_names={"a"}))
        return f, (jax.device_put(x, NamedSharding(m, P("a"))),)

    on_both(build)
    if N >= 4:  # with one device along "b" the shard_map is fully manual
        fn, args = build("kiln")
        assert "last_tile_dims={manual" in hlo_of(fn, *args)


def main():
    run_cases(CASES)


if __name__ == "__main__":
    main()
