"""Host memory kinds: every Kiln device has the memories XLA:CPU's devices have ("device", the
default, "pinned_host" and "unpinned_host"), `device_put` between them keeps the values, and jitted
programs whose arguments or results live in host memory (shardings with a `memory_kind`,
`compute_on("device_host")`) give the CPU backend's results, with results in the memory kind asked
for."""

from __future__ import annotations

import numpy as np
import pytest

import jax
from jax.sharding import SingleDeviceSharding

from conftest import get_cpu_device, get_kiln_device

pytestmark = pytest.mark.requires_kiln

KINDS = ("device", "pinned_host", "unpinned_host")


def test_memories_match_the_cpu_backend():
    kiln, cpu = get_kiln_device(), get_cpu_device()
    assert [m.kind for m in kiln.addressable_memories()] == [
        m.kind for m in cpu.addressable_memories()] == list(KINDS)
    assert kiln.default_memory().kind == cpu.default_memory().kind == "device"
    for m in kiln.addressable_memories():
        assert m.addressable_by_devices() == [kiln]
        assert kiln.memory(m.kind) == m


def test_device_put_between_kinds():
    d = get_kiln_device()
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    a = jax.device_put(x, d)
    # Every kind to every kind, the values unchanged.
    for src in KINDS:
        s = jax.device_put(a, SingleDeviceSharding(d, memory_kind=src))
        assert s.sharding.memory_kind == src
        for dst in KINDS:
            t = jax.device_put(s, SingleDeviceSharding(d, memory_kind=dst))
            assert t.sharding.memory_kind == dst
            assert t.devices() == {d}
            np.testing.assert_array_equal(np.asarray(t), x)
    # From numpy straight into host memory.
    h = jax.device_put(x, SingleDeviceSharding(d, memory_kind="unpinned_host"))
    assert h.sharding.memory_kind == "unpinned_host"
    np.testing.assert_array_equal(np.asarray(h), x)


def _run(device, fn, x, in_kind, out_kind):
    arg = jax.device_put(x, SingleDeviceSharding(device, memory_kind=in_kind))
    f = jax.jit(fn, in_shardings=SingleDeviceSharding(device, memory_kind=in_kind),
                out_shardings=SingleDeviceSharding(device, memory_kind=out_kind))
    return f(arg)


@pytest.mark.parametrize("in_kind,out_kind", [
    ("device", "pinned_host"), ("pinned_host", "device"), ("unpinned_host", "pinned_host"),
    ("pinned_host", "pinned_host")])
def test_jit_with_host_memory_arguments_and_results(in_kind, out_kind):
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    fn = lambda v: jax.numpy.tanh(v) * 2 + v.sum()  # noqa: E731
    got = _run(get_kiln_device(), fn, x, in_kind, out_kind)
    want = _run(get_cpu_device(), fn, x, in_kind, out_kind)
    assert got.sharding.memory_kind == want.sharding.memory_kind == out_kind
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
    compiled = jax.jit(fn, out_shardings=SingleDeviceSharding(get_kiln_device(),
                                                                memory_kind=out_kind)).lower(
        jax.device_put(x, get_kiln_device())).compile()
    assert compiled.output_shardings.memory_kind == out_kind


def test_compute_on_device_host():
    from jax.experimental.compute_on import compute_on

    @compute_on("device_host")
    @jax.jit
    def on_host(v):
        return v * 3 - 1

    fn = jax.jit(lambda v: on_host(v) + v)
    x = np.arange(8, dtype=np.float32)
    got = fn(jax.device_put(x, get_kiln_device()))
    want = fn(jax.device_put(x, get_cpu_device()))
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


def test_unknown_memory_kind_is_refused():
    d = get_kiln_device()
    with pytest.raises(Exception, match="memory kind"):
        jax.device_put(np.ones(3), SingleDeviceSharding(d, memory_kind="pinned_device"))
