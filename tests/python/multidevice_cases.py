"""Multi-device programs on N Kiln devices, each compared with JAX's CPU backend.

Run by test_multidevice.py in a fresh process (the device count is fixed when the backends start):
KILN_DEVICE_COUNT=N, JAX_PLATFORMS=kiln,cpu and --xla_force_host_platform_device_count=N, so every
case can build the same mesh over N Kiln devices and over N CPU devices. Prints one JSON object:
{case name: {"ok": bool, "detail": str}}. Tolerances: rtol 1e-5 / atol 1e-6 for float results
(Kiln and XLA may reduce in different orders), exact for integers.
"""

from __future__ import annotations

import os

import numpy as np

import jax
import jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from case_runner import run_cases

N = int(os.environ["KILN_DEVICE_COUNT"])
AUTO = jax.sharding.AxisType.Auto
RTOL, ATOL = 1e-5, 1e-6


def devices(platform):
    return jax.devices(platform)[:N]


def mesh_1d(platform, name="x"):
    return Mesh(np.array(devices(platform)), (name,), axis_types=(AUTO,))


def mesh_2d(platform):
    return Mesh(np.array(devices(platform)).reshape(2, N // 2), ("a", "b"), axis_types=(AUTO, AUTO))


def close(got, want):
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or got.dtype != want.dtype:
        raise AssertionError(f"got {got.dtype}{got.shape}, want {want.dtype}{want.shape}")
    if np.issubdtype(want.dtype, np.inexact):
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
    else:
        np.testing.assert_array_equal(got, want)


def on_both(build, *args):
    """build(platform) -> callable; runs it with args on Kiln and CPU and compares the outputs."""
    out_k = build("kiln")(*args)
    out_c = build("cpu")(*args)
    for k, c in zip(jax.tree.leaves(out_k), jax.tree.leaves(out_c)):
        close(k, c)
        assert all(d.platform == "kiln" for d in k.sharding.device_set), k.sharding
    return out_k, out_c


CASES = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


@case
def pmap_psum():
    def build(platform):
        return jax.pmap(lambda x: x + jax.lax.psum(x, "i"), axis_name="i", devices=devices(platform))
    out, _ = on_both(build, np.arange(N))
    close(out, (np.arange(N) + N * (N - 1) // 2).astype(np.int32))


@case
def pmap_collectives_and_axis_index():
    def f(x):
        i = jax.lax.axis_index("i")
        return (jax.lax.pmean(x, "i") * i, jax.lax.pmax(x, "i"), jax.lax.pmin(x.astype(jnp.int32), "i"),
                jax.lax.psum(x.astype(jnp.complex64) * 1j, "i"), jax.lax.all_gather(x, "i"))
    x = np.random.default_rng(0).normal(size=(N, 3, 5)).astype(np.float32)
    on_both(lambda p: jax.pmap(f, axis_name="i", devices=devices(p)), x)


@case
def pmap_narrow_float_collectives():
    # f16 / bf16 reductions combine in f32 and round after each member.
    def f(x, y):
        return (jax.lax.psum(x, "i"), jax.lax.pmax(x, "i"), jax.lax.pmin(y, "i"),
                jax.lax.psum(y, "i"))
    rng = np.random.default_rng(2)
    x = rng.normal(size=(N, 7)).astype(np.float16)
    y = rng.normal(size=(N, 7)).astype(jnp.bfloat16)
    on_both(lambda p: jax.pmap(f, axis_name="i", devices=devices(p)), x, y)


@case
def pmap_psum_inside_scan_and_while():
    def f(x):
        def step(c, _):
            c = jnp.tanh(c) + jax.lax.psum(c, "i") * 0.01
            return c, c.sum()
        c, ys = jax.lax.scan(step, x, None, length=20)
        n = jax.lax.while_loop(lambda v: jax.lax.psum(v, "i") < 100.0, lambda v: v + 1.0, x.sum())
        return c, ys, n
    x = np.linspace(-1, 1, N * 4, dtype=np.float32).reshape(N, 4)
    on_both(lambda p: jax.pmap(f, axis_name="i", devices=devices(p)), x)


@case
def pmap_value_and_grad():
    def loss(w, x):
        return jnp.mean((jnp.tanh(x @ w)) ** 2)
    def step(w, x):
        l, g = jax.value_and_grad(loss)(w, x)
        return jax.lax.pmean(l, "i"), jax.lax.pmean(g, "i")
    rng = np.random.default_rng(1)
    w = np.broadcast_to(rng.normal(size=(6, 3)).astype(np.float32), (N, 6, 3)).copy()
    x = rng.normal(size=(N, 8, 6)).astype(np.float32)
    on_both(lambda p: jax.pmap(step, axis_name="i", devices=devices(p)), w, x)


@case
def shard_map_collectives():
    def body(x):
        a = jax.lax.ppermute(x, "x", [(i, (i + 1) % N) for i in range(N)])
        b = jax.lax.all_gather(x, "x", tiled=True)
        c = jax.lax.psum_scatter(b, "x", tiled=True)
        d = jax.lax.all_to_all(x.reshape(N, -1), "x", 0, 0, tiled=True).reshape(x.shape)
        e = jax.lax.pmax(x, "x")
        return a + c + d + e
    def build(platform):
        return jax.jit(jax.shard_map(body, mesh=mesh_1d(platform), in_specs=P("x"), out_specs=P("x")))
    x = (np.arange(4 * N, dtype=np.float32) * 1.5 - 3)
    out, _ = on_both(build, x)
    xs = x.reshape(N, 4)
    want = (np.roll(xs, 1, axis=0) + N * xs + xs.reshape(N, N, -1).transpose(1, 0, 2).reshape(N, 4)
            + xs.max(0))
    close(np.asarray(out).reshape(N, 4), want)  # the same computation in plain numpy
    assert out.sharding.spec == P("x"), out.sharding


@case
def shard_map_2d_partial_specs():
    def body(x, y):
        s = jax.lax.psum(x.sum(), ("a", "b"))
        return x * s + jax.lax.psum(y, "b"), jax.lax.all_gather(y, "a", tiled=True)
    def build(platform):
        m = mesh_2d(platform)
        return jax.jit(jax.shard_map(body, mesh=m, in_specs=(P("a", "b"), P("a", "b")),
                                     out_specs=(P("a", "b"), P(None, "b")), check_vma=False))
    rng = np.random.default_rng(2)
    on_both(build, rng.normal(size=(4, 2 * N)).astype(np.float32),
            rng.normal(size=(4, 2 * N)).astype(np.float32))


@case
def shard_map_partially_manual():
    # Only axis "a" is manual; "b" stays automatic inside the body.
    def body(x):
        return jnp.cos(x) * jax.lax.psum(x.sum(), "a")
    def build(platform):
        m = mesh_2d(platform)
        return jax.jit(jax.shard_map(body, mesh=m, in_specs=P("a"), out_specs=P("a"),
                                     axis_names={"a"}))
    on_both(build, np.linspace(0, 1, 8 * N, dtype=np.float32).reshape(4, 2 * N))


@case
def unreduced_result_summed_inside_jit():
    # A shard_map returning partial sums (unreduced over "b"), resharded inside the same jit.
    explicit = jax.sharding.AxisType.Explicit
    rng = np.random.default_rng(6)
    a = rng.normal(size=(4, 8)).astype(np.float32)
    b = rng.normal(size=(8, 3)).astype(np.float32)
    def build(platform):
        m = Mesh(np.array(devices(platform)).reshape(2, N // 2), ("a", "b"),
                 axis_types=(explicit, explicit))
        body = jax.shard_map(lambda x, y: x @ y, mesh=m, in_specs=(P("a", "b"), P("b", None)),
                             out_specs=P("a", None, unreduced={"b"}))
        g = jax.jit(lambda x, y: jax.sharding.reshard(body(x, y), P("a", None)))
        def run(x, y):
            with jax.set_mesh(m):
                return g(jax.device_put(x, NamedSharding(m, P("a", "b"))),
                         jax.device_put(y, NamedSharding(m, P("b", None))))
        return run
    out, _ = on_both(build, a, b)
    close(out, (jax.device_put(a, jax.devices("cpu")[0]) @ b))


def shards(arr):
    """Each device's piece of `arr`, in device-id order."""
    return [np.asarray(s.data) for s in sorted(arr.addressable_shards, key=lambda s: s.device.id)]


@case
def unreduced_boundary_per_device():
    # Unreduced values crossing jit's boundary: each device holds its own partial sum, as on XLA
    # (the shards themselves are compared, not only their total), and a later shard_map taking
    # them as unreduced operands sees each device's own partial.
    explicit = jax.sharding.AxisType.Explicit
    rng = np.random.default_rng(7)
    a = rng.normal(size=(4, 8)).astype(np.float32)
    b = rng.normal(size=(8, 3)).astype(np.float32)
    results = {}
    for platform in ("kiln", "cpu"):
        m = Mesh(np.array(devices(platform)).reshape(2, N // 2), ("a", "b"),
                 axis_types=(explicit, explicit))
        with jax.set_mesh(m):
            partial = jax.jit(jax.shard_map(lambda x, y: x @ y, in_specs=(P("a", "b"), P("b", None)),
                                            out_specs=P("a", None, unreduced={"b"})))
            total = jax.jit(jax.shard_map(lambda z: jax.lax.psum(z, "b"),
                                          in_specs=P("a", None, unreduced={"b"}),
                                          out_specs=P("a", None)))
            # check_vma=False: each device returns its own partial as if replicated.
            raw = jax.jit(jax.shard_map(lambda z: z, in_specs=P("a", None, unreduced={"b"}),
                                        out_specs=P("a", None), check_vma=False))
            out = partial(jax.device_put(a, NamedSharding(m, P("a", "b"))),
                          jax.device_put(b, NamedSharding(m, P("b", None))))
            results[platform] = (out, total(out), raw(out))
    (ko, kt, kr), (co, ct, cr) = results["kiln"], results["cpu"]
    assert ko.sharding.spec == co.sharding.spec == P("a", None, unreduced={"b"}), ko.sharding
    for got, want in zip(shards(ko), shards(co)):
        close(got, want)
    for got, want in zip(shards(kr), shards(cr)):
        close(got, want)
    close(kt, ct)
    close(kt, jax.device_put(a, jax.devices("cpu")[0]) @ b)


@case
def nested_shard_map():
    # A shard_map over "b" inside a shard_map manual over "a" only (partially automatic), with
    # collectives over both axes in the inner body and a result replicated over "b".
    rng = np.random.default_rng(8)
    x = rng.normal(size=(4, 2 * N)).astype(np.float32)
    def build(platform):
        m = mesh_2d(platform)
        def inner(v):
            return v * jax.lax.psum(v.sum(), "b") + jax.lax.psum(1.0, "a")
        def outer(v):
            # The inner shard_map takes the context mesh (the outer one's, "a" now manual).
            mid = jax.shard_map(inner, in_specs=P(None, "b"), out_specs=P(None, "b"))(v)
            return jnp.sin(mid)
        f = jax.jit(jax.shard_map(outer, mesh=m, in_specs=P("a", None), out_specs=P("a", None),
                                  axis_names=frozenset({"a"}), check_vma=False))
        def run(v):
            with jax.set_mesh(m):
                return f(jax.device_put(v, NamedSharding(m, P("a", "b"))))
        return run
    on_both(build, x)


@case
def named_sharding_matmul_2x2():
    rng = np.random.default_rng(3)
    a = rng.normal(size=(8, 8)).astype(np.float32)
    b = rng.normal(size=(8, 4)).astype(np.float32)
    def build(platform):
        m = mesh_2d(platform)
        f = jax.jit(lambda x, y: x @ y, out_shardings=NamedSharding(m, P("a", None)))
        return lambda x, y: f(jax.device_put(x, NamedSharding(m, P("a", "b"))),
                              jax.device_put(y, NamedSharding(m, P("b", None))))
    out, ref = on_both(build, a, b)
    close(out, jax.device_put(a, jax.devices("cpu")[0]) @ b)
    assert out.sharding.spec == ref.sharding.spec == P("a", None)
    assert [s.data.shape for s in out.addressable_shards] == [(4, 4)] * N


@case
def data_parallel_mlp_step():
    rng = np.random.default_rng(4)
    params = {"w1": rng.normal(size=(5, 16)).astype(np.float32) * 0.3,
              "w2": rng.normal(size=(16, 2)).astype(np.float32) * 0.3}
    x = rng.normal(size=(8 * N, 5)).astype(np.float32)
    y = rng.normal(size=(8 * N, 2)).astype(np.float32)

    def loss(p, x, y):
        return jnp.mean((jnp.tanh(x @ p["w1"]) @ p["w2"] - y) ** 2)

    def step(p, x, y):
        g = jax.grad(loss)(p, x, y)
        g = jax.tree.map(lambda t: jax.lax.psum(t, "x") / N, g)
        return jax.tree.map(lambda a, b: a - 0.1 * b, p, g)

    def build(platform):
        m = mesh_1d(platform)
        # check_vma=False: the gradients are summed by the explicit psum, not implicitly.
        return jax.jit(jax.shard_map(step, mesh=m, in_specs=(P(), P("x"), P("x")), out_specs=P(),
                                     check_vma=False))
    out, _ = on_both(build, params, x, y)
    # The single-device step on the CPU backend gives the same parameters.
    cpu = jax.devices("cpu")[0]
    single = jax.jit(lambda p, x, y: jax.tree.map(lambda a, b: a - 0.1 * b, p,
                                                  jax.grad(loss)(p, x, y)))(
        jax.device_put(params, cpu), jax.device_put(x, cpu), jax.device_put(y, cpu))
    for k in params:
        close(out[k], single[k])


@case
def sharded_jit_propagation():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(4 * N, 6)).astype(np.float32)
    def build(platform):
        m = mesh_1d(platform)
        f = jax.jit(lambda v: (jnp.sin(v) * 2).sum(axis=1), in_shardings=NamedSharding(m, P("x")))
        return lambda v: f(jax.device_put(v, NamedSharding(m, P("x"))))
    on_both(build, x)
    # Results computed elementwise from a sharded argument (or that argument itself) are sharded
    # like it, as XLA's propagation leaves them.
    def build_elementwise(platform):
        m = mesh_1d(platform)
        f = jax.jit(lambda v: (jnp.sin(v) * 2, v))
        return lambda v: f(jax.device_put(v, NamedSharding(m, P("x"))))
    out_k, out_c = on_both(build_elementwise, x)
    for k, c in zip(out_k, out_c):
        assert k.sharding.spec == c.sharding.spec == P("x"), (k.sharding, c.sharding)
        assert [s.data.shape for s in k.addressable_shards] == [(4, 6)] * N


def main():
    run_cases(CASES)


if __name__ == "__main__":
    main()
