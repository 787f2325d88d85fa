"""Host <-> Kiln buffer transfers: device_put / np.asarray round trips for every dtype and for
0-d, empty and non-contiguous inputs; readiness, deletion, cross-backend copies, reuse of outputs
as inputs, a large transfer, and a jax.experimental.transfer pull (async host-to-device buffers)."""

from __future__ import annotations

import gc
import zlib

import ml_dtypes
import numpy as np
import pytest

import jax
import jax.numpy as jnp

from conftest import get_cpu_device, get_kiln_device
from opdata import x64_if

DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
          np.uint64, np.float16, ml_dtypes.bfloat16, np.float32, np.float64, np.complex64]
DTYPES = [np.dtype(d) for d in DTYPES]
SHAPES = [(), (0,), (3, 0, 2), (7,), (3, 4), (2, 3, 4, 5)]


def sample(dtype: np.dtype, shape) -> np.ndarray:
    """Values covering the dtype's range, including extremes and float specials."""
    n = int(np.prod(shape, dtype=np.int64))
    rng = np.random.default_rng(zlib.crc32(repr((dtype.name, shape)).encode()))
    if dtype == np.bool_:
        flat = rng.random(n) < 0.5
    elif dtype.kind in "iu":
        info = np.iinfo(dtype)
        flat = rng.integers(int(info.min), int(info.max), n, endpoint=True, dtype=dtype)
        if n >= 2:
            flat[:2] = [info.min, info.max]
    elif dtype.kind == "c":
        flat = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dtype)
        if n >= 2:
            flat[:2] = [complex(np.nan, -0.0), complex(np.inf, 1.0)]
    else:
        flat = (rng.standard_normal(n) * 100).astype(dtype)
        specials = np.array([np.nan, -0.0, np.inf, -np.inf, 0.0], np.float32).astype(dtype)
        flat[:min(n, 5)] = specials[:min(n, 5)]
    return flat.reshape(shape)


def assert_same_bytes(got: np.ndarray, want: np.ndarray):
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(want).tobytes(), (
        f"bytes differ:\nkiln: {got!r}\nhost: {want!r}")


CASES = [(d, s) for d in DTYPES for s in SHAPES]


@pytest.mark.parametrize("dtype,shape", CASES, ids=[f"{d.name}-{s}" for d, s in CASES])
def test_round_trip(dtype, shape, kiln_device):
    x = sample(dtype, shape)
    with x64_if(dtype):
        y = jax.device_put(x, kiln_device)
        assert y.devices() == {kiln_device}
        assert y.dtype == dtype and y.shape == shape
        assert y.size == x.size and y.nbytes == x.nbytes
        assert_same_bytes(np.asarray(y), x)
        # a second read gives the same bytes
        assert_same_bytes(np.asarray(y), x)


@pytest.mark.parametrize("dtype", [np.dtype(np.int32), np.dtype(np.float32), np.dtype(np.int8),
                                   np.dtype(np.float64), np.dtype(np.bool_),
                                   np.dtype(ml_dtypes.bfloat16)], ids=lambda d: d.name)
@pytest.mark.parametrize("view", ["transpose", "strided", "reversed", "fortran", "broadcast",
                                  "transpose3d", "column"])
def test_non_contiguous_inputs(view, dtype, kiln_device):
    base = sample(dtype, (6, 8))
    x = {
        "transpose": lambda: base.T,
        "strided": lambda: base[::2, 1::3],
        "reversed": lambda: base[::-1, ::-1],
        "fortran": lambda: np.asfortranarray(base),
        "broadcast": lambda: np.broadcast_to(base[0], (5, 8)),   # zero stride
        "transpose3d": lambda: sample(dtype, (2, 3, 4)).transpose(2, 0, 1),
        "column": lambda: base[:, 3],
    }[view]()
    assert not x.flags.c_contiguous
    with x64_if(dtype):
        y = jax.device_put(x, kiln_device)
        assert_same_bytes(np.asarray(y), np.ascontiguousarray(x))
        # and a computation sees the logical (not the memory) order
        z = jax.jit(lambda a: a.reshape(-1))(y)
        assert_same_bytes(np.asarray(z), np.ascontiguousarray(x).reshape(-1))


def test_source_freed_after_device_put(kiln_device):
    """jaxlib passes host buffers as kImmutableZeroCopy: a plugin that aliases the numpy memory must
    keep it alive (or copy it) after the numpy array is garbage collected."""
    import gc

    def put(n, value):
        return jax.device_put(np.full(n, value, np.float32), kiln_device)

    ys = [put(n, float(i)) for i, n in enumerate((4, 1000, 1 << 20, 3 << 20))]
    gc.collect()
    junk = [np.full(n, -99.0, np.float32) for n in (4, 1000, 1 << 20, 3 << 20)]  # reuse the memory
    for i, y in enumerate(ys):
        out = np.asarray(y)
        assert (out == float(i)).all(), f"array {i}: {np.unique(out)[:5]}"
    del junk


def test_result_is_not_aliased_by_later_host_writes(kiln_device):
    y = jax.jit(lambda a: a + 1)(jax.device_put(np.arange(4, dtype=np.int32), kiln_device))
    host = np.asarray(y)
    try:
        host[0] = 100  # may be read-only, which is also fine
    except ValueError:
        pass
    assert np.asarray(y).tolist()[1:] == [2, 3, 4]
    assert jax.jit(lambda a: a * 1)(y).tolist() == [1, 2, 3, 4]


def test_scalars_and_lists(kiln_device):
    with jax.default_device(kiln_device):
        for value, dtype in [(3, jnp.int32), (2.5, jnp.float32), (True, jnp.bool_)]:
            y = jax.device_put(value, kiln_device)
            assert y.devices() == {kiln_device}
            assert y.dtype == dtype and y.shape == ()
            assert y.item() == value
        z = jnp.asarray([[1, 2], [3, 4]], dtype=jnp.int16, device=kiln_device)
        assert z.devices() == {kiln_device}
        assert np.asarray(z).tolist() == [[1, 2], [3, 4]]


def test_block_until_ready(kiln_device):
    x = jax.device_put(np.arange(1000, dtype=np.float32), kiln_device)
    assert x.block_until_ready() is x
    y = jax.jit(lambda a: (a * 2, a.sum()))(x)
    out = jax.block_until_ready(y)
    assert out is y
    assert np.asarray(y[0])[999] == 1998.0
    assert float(y[1]) == float(np.arange(1000, dtype=np.float32).sum())


def test_copy_to_host_async_then_read(kiln_device):
    x = jax.jit(lambda a: a - 1)(jax.device_put(np.arange(10, dtype=np.int32), kiln_device))
    x.copy_to_host_async()
    assert np.asarray(x).tolist() == list(range(-1, 9))


def test_delete_then_use_raises(kiln_device):
    x = jax.device_put(np.arange(5, dtype=np.float32), kiln_device)
    keep = jax.device_put(np.arange(3, dtype=np.int32), kiln_device)
    assert not x.is_deleted()
    x.delete()
    assert x.is_deleted()
    with pytest.raises(RuntimeError, match="deleted"):
        np.asarray(x)
    with pytest.raises(RuntimeError, match="deleted"):
        jax.jit(lambda a: a + 1)(x)
    with pytest.raises(RuntimeError, match="deleted"):
        jax.device_put(x, get_cpu_device())
    x.delete()  # deleting twice is harmless
    # the process and other buffers are unaffected
    assert np.asarray(keep).tolist() == [0, 1, 2]
    assert jax.jit(lambda a: a * 3)(keep).tolist() == [0, 3, 6]


def test_delete_result_buffer(kiln_device):
    y = jax.jit(lambda a: a + 1)(jax.device_put(np.ones(3, np.float32), kiln_device))
    y.delete()
    with pytest.raises(RuntimeError, match="deleted"):
        np.asarray(y)


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.int64),
                                   np.dtype(ml_dtypes.bfloat16), np.dtype(np.bool_),
                                   np.dtype(np.complex64)], ids=lambda d: d.name)
def test_kiln_to_cpu_and_back(dtype, kiln_device, cpu_device):
    x = sample(dtype, (4, 5))
    with x64_if(dtype):
        k = jax.device_put(x, kiln_device)
        c = jax.device_put(k, cpu_device)
        assert c.devices() == {cpu_device}
        assert_same_bytes(np.asarray(c), x)
        k2 = jax.device_put(c, kiln_device)
        assert k2.devices() == {kiln_device}
        assert_same_bytes(np.asarray(k2), x)
        # results of a Kiln computation, too
        r = jax.jit(lambda a: a.T)(k)
        assert_same_bytes(np.asarray(jax.device_put(r, cpu_device)), x.T.copy())


def test_outputs_reused_as_inputs_without_donation(kiln_device):
    f = jax.jit(lambda a, b: (a * 2 + b, a - b))
    a = jax.device_put(np.arange(6, dtype=np.int32), kiln_device)
    b = jax.device_put(np.full(6, 3, np.int32), kiln_device)
    u, v = f(a, b)
    u2, v2 = f(u, v)      # outputs as inputs
    u3, v3 = f(u2, u)     # mixing generations; u is used twice
    ha, hb = np.arange(6), np.full(6, 3)
    hu, hv = ha * 2 + hb, ha - hb
    hu2, hv2 = hu * 2 + hv, hu - hv
    hu3, hv3 = hu2 * 2 + hu, hu2 - hu
    for got, want in [(u, hu), (v, hv), (u2, hu2), (v2, hv2), (u3, hu3), (v3, hv3)]:
        assert np.asarray(got).tolist() == want.tolist()
    # inputs are still alive and unchanged (not donated)
    assert np.asarray(a).tolist() == ha.tolist() and np.asarray(b).tolist() == hb.tolist()
    assert not a.is_deleted() and not u.is_deleted()


def test_same_buffer_passed_twice(kiln_device):
    x = jax.device_put(np.arange(4, dtype=np.float32), kiln_device)
    assert jax.jit(lambda a, b: a * b + a)(x, x).tolist() == [0.0, 2.0, 6.0, 12.0]


def test_identity_and_passthrough_outputs(kiln_device):
    x = jax.device_put(np.arange(4, dtype=np.int32), kiln_device)
    a, b, c = jax.jit(lambda a: (a, a, a + 0))(x)
    for out in (a, b, c):
        assert out.devices() == {kiln_device}
        assert np.asarray(out).tolist() == [0, 1, 2, 3]
    x.delete()  # deleting the input must not invalidate outputs that alias it
    for out in (a, b, c):
        assert np.asarray(out).tolist() == [0, 1, 2, 3]


def test_many_small_transfers(kiln_device):
    xs = [jax.device_put(np.full((3,), i, np.int32), kiln_device) for i in range(200)]
    total = jax.jit(lambda *a: sum(a))(*xs[:50])
    assert np.asarray(total).tolist() == [sum(range(50))] * 3
    assert [int(np.asarray(x)[0]) for x in xs] == list(range(200))


def test_large_array_round_trip(kiln_device):
    n = 16 * 1024 * 1024  # 64 MB of float32
    x = np.arange(n, dtype=np.float32)
    x[::4096] = -1.5
    y = jax.device_put(x, kiln_device)
    back = np.asarray(y)
    assert back.shape == x.shape and np.array_equal(back, x)
    z = jax.jit(lambda a: a[::-1] + 1.0)(y)
    zz = np.asarray(z)
    assert zz[0] == x[-1] + 1.0 and zz[-1] == x[0] + 1.0
    assert np.array_equal(zz[::997], (x[::-1] + 1.0)[::997])


def test_device_get_tree(kiln_device):
    tree = {"a": jax.device_put(np.arange(3, dtype=np.int32), kiln_device),
            "b": (jax.device_put(np.float32(2.5), kiln_device), 7)}
    got = jax.device_get(tree)
    assert isinstance(got["a"], np.ndarray) and got["a"].tolist() == [0, 1, 2]
    assert float(got["b"][0]) == 2.5 and got["b"][1] == 7


def test_repr_and_str_of_kiln_array(kiln_device):
    x = jax.device_put(np.array([1.5, -2.0], np.float32), kiln_device)
    assert "1.5" in repr(x) and "-2." in str(x)


# ------------------------------------------------------------------------------------------------
# Raw pointers and memory statistics


@pytest.mark.requires_kiln
def test_unsafe_buffer_pointer_points_at_the_data():
    import ctypes

    x = jax.device_put(np.arange(12, dtype=np.float32).reshape(3, 4), get_kiln_device())
    ptr = x.unsafe_buffer_pointer()
    assert ptr != 0
    seen = np.frombuffer((ctypes.c_char * 48).from_address(ptr), dtype=np.float32)
    np.testing.assert_array_equal(seen.reshape(3, 4), np.asarray(x))
    # A computed result too (waits for the computation).
    y = jax.jit(lambda v: v * 2)(x)
    seen = np.frombuffer((ctypes.c_char * 48).from_address(y.unsafe_buffer_pointer()),
                         dtype=np.float32)
    np.testing.assert_array_equal(seen.reshape(3, 4), np.asarray(x) * 2)


@pytest.mark.requires_kiln
def test_unsafe_buffer_pointer_of_deleted_buffer_is_an_error():
    x = jax.device_put(np.ones(3, np.float32), get_kiln_device())
    x.delete()
    with pytest.raises(Exception, match="deleted"):
        x.unsafe_buffer_pointer()


@pytest.mark.requires_kiln
def test_memory_stats_follow_allocations():
    device = get_kiln_device()
    # Earlier tests' arrays may still be freed while this runs (garbage collection, deletions the
    # device thread has not reached): collect them first, and allow a few KiB of such frees
    # between the two readings. The 2 MiB buffer itself must show in full.
    gc.collect()
    jax.effects_barrier()
    before = device.memory_stats()
    assert before is not None
    assert before["bytes_limit"] > 0
    x = jax.device_put(np.ones((512, 1024), np.float32), device)
    x.block_until_ready()
    during = device.memory_stats()
    assert during["bytes_in_use"] >= before["bytes_in_use"] + 2 * 1024 * 1024 - 4096
    assert during["peak_bytes_in_use"] >= during["bytes_in_use"]
    assert during["num_allocs"] > before["num_allocs"]
    assert during["largest_alloc_size"] >= 2 * 1024 * 1024
    del x
    after = device.memory_stats()
    assert after["bytes_in_use"] <= during["bytes_in_use"] - 2 * 1024 * 1024
    assert after["peak_bytes_in_use"] >= during["bytes_in_use"]


# ------------------------------------------------------------------------------------------------
# Donation


@pytest.mark.requires_kiln
def test_donated_buffer_is_consumed_and_results_match_cpu():
    import warnings

    def step(params, batch):
        return params - 0.1 * batch.mean() * params, (params * batch).sum()

    params = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    batch = np.arange(12, dtype=np.float32).reshape(3, 4)
    want = jax.jit(step)(*jax.device_put((params, batch), get_cpu_device()))
    f = jax.jit(step, donate_argnums=0)
    p = jax.device_put(params, get_kiln_device())
    b = jax.device_put(batch, get_kiln_device())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "Some donated buffers were not usable" must not appear
        got = f(p, b)
    assert p.is_deleted() and not b.is_deleted()
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)
    with pytest.raises(RuntimeError, match="deleted"):
        np.asarray(p)
    # A training loop that donates its state every step.
    state = got[0]
    for _ in range(5):
        state, _ = f(state, b)
    expect = want[0]
    for _ in range(5):
        expect, _ = jax.jit(step)(expect, jax.device_put(batch, get_cpu_device()))
    np.testing.assert_allclose(np.asarray(state), np.asarray(expect), rtol=1e-5)


def _donated_run(f, args):
    """Runs jit(f, donate_argnums=0) on Kiln and CPU; returns Kiln's results, whether each one is
    the donated buffer's memory, and CPU's results."""
    kiln = [jax.device_put(a, get_kiln_device()) for a in args]
    pointer = kiln[0].unsafe_buffer_pointer()
    got = jax.jit(f, donate_argnums=0)(*kiln)
    got = got if isinstance(got, tuple) else (got,)
    assert kiln[0].is_deleted()
    reused = [g.unsafe_buffer_pointer() == pointer for g in got]
    want = jax.jit(f)(*[jax.device_put(a, get_cpu_device()) for a in args])
    want = want if isinstance(want, tuple) else (want,)
    # Values are O(1); XLA contracts to FMAs and sums in another order: a few ulps of the sums.
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-5)
    return reused


def _train_step(w, x):
    def loss(w):
        return jnp.sum(jnp.tanh(x @ w) ** 2)
    return w - 0.01 * jax.grad(loss)(w)


@pytest.mark.requires_kiln
@pytest.mark.parametrize("name,f,shapes,expect", [
    # The update is elementwise over the donated parameters: computed into their memory.
    ("sgd", lambda p, g: p - 0.1 * g, [(256, 64), (256, 64)], [True]),
    ("train_step", _train_step, [(64, 64), (32, 64)], [True]),
    # Every read of p (the transpose) ends before the add writes: in place too.
    ("read_before", lambda p: p.T.reshape(256, 64) + 1, [(256, 64)], [True]),
    # p is read again after the first result is written (in the same fused loop): no reuse,
    # or the second result would see p * 2 instead of p.
    ("read_after", lambda p: (p * 2, p + p * 2), [(256, 64)], [False, False]),
    # The reverse reads all of p before the multiply writes: in place.
    ("reversed", lambda p: p[::-1] * 2, [(256, 64)], [True]),
    # The step computing the result reads p, but not element for element: its own buffer.
    ("cumsum", lambda p: jnp.cumsum(p, axis=1), [(256, 64)], [False]),
    ("matmul", lambda p: p @ p, [(64, 64)], [False]),
])
def test_donated_buffer_is_reused_in_place_when_safe(name, f, shapes, expect):
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    args = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    assert _donated_run(f, args) == expect


@pytest.mark.requires_kiln
def test_donated_buffer_shared_elsewhere_is_not_overwritten():
    x = jax.device_put(np.arange(4096, dtype=np.float32), get_kiln_device()) + 0
    # A second buffer over x's memory (Kiln's device-to-device copies share the array).
    alias = jax.device_put(x, get_kiln_device(), may_alias=False)
    assert alias.unsafe_buffer_pointer() == x.unsafe_buffer_pointer()
    y = jax.jit(lambda a: a * 2, donate_argnums=0)(x)
    np.testing.assert_array_equal(np.asarray(y), np.arange(4096, dtype=np.float32) * 2)
    np.testing.assert_array_equal(np.asarray(alias), np.arange(4096, dtype=np.float32))
    # Memory a numpy array lent without copying is never written either.
    source = np.arange(4096, dtype=np.float32)
    lent = jax.device_put(source, get_kiln_device())
    z = jax.jit(lambda a: a + 1, donate_argnums=0)(lent)
    np.testing.assert_array_equal(np.asarray(z), source + 1)
    np.testing.assert_array_equal(source, np.arange(4096, dtype=np.float32))


@pytest.mark.requires_kiln
def test_donating_a_buffer_used_twice_is_an_error():
    f = jax.jit(lambda a, b: a + b, donate_argnums=0)
    x = jax.device_put(np.arange(3, dtype=np.float32), get_kiln_device())
    with pytest.raises(Exception, match="donat"):
        f(x, x)
    assert not x.is_deleted()
    np.testing.assert_array_equal(np.asarray(x), np.arange(3, dtype=np.float32))


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.int8), np.dtype(np.complex64)])
def test_transfer_server_loopback_pull(dtype, kiln_device):
    """jax.experimental.transfer between two servers of this process: the pulling side receives
    through PJRT_Client_CreateBuffersForAsyncHostToDevice and TransferData, in many small chunks
    (transfer_size) copied in parallel."""
    from jax.experimental import transfer
    client = kiln_device.client
    src = transfer.start_transfer_server(client, "127.0.0.1:0", ["127.0.0.1:0"], transfer_size=4096)
    dst = transfer.start_transfer_server(client, "127.0.0.1:0", ["127.0.0.1:0"], transfer_size=4096)
    xs = [jax.device_put(sample(dtype, (300, 70)), kiln_device),
          jax.device_put(sample(dtype, (5,)), kiln_device)]
    src.await_pull(11, xs)
    specs = [jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=x.sharding) for x in xs]
    ys = dst.connect(src.address()).pull(11, specs)
    for x, y in zip(xs, ys):
        assert y.devices() == {kiln_device}
        np.testing.assert_array_equal(np.asarray(y), np.asarray(x))
