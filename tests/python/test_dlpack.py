"""DLPack between Kiln and numpy / torch (python/kiln/_dlpack.py, PJRT_Client_CreateViewOfDeviceBuffer
and Kiln's extension version 2): values against JAX's CPU backend, zero-copy where Kiln aliases
memory (pointer equality), copies where it cannot, and lifetimes (memory held while a consumer
holds it, released after).

torch comes from Debian (python3-torch, CPU-only, in scripts/apt-packages.txt): PyPI's Linux wheel
pulls in the CUDA stack (gigabytes). Debian's build is compiled against NumPy 1.x, so the torch test
compares through lists, never through torch's NumPy bridge."""

from __future__ import annotations

import gc
import os
import warnings
import weakref

import ml_dtypes
import numpy as np
import pytest

import jax
import jax.dlpack
import jax.numpy as jnp
from jax.sharding import SingleDeviceSharding

from conftest import get_cpu_device, get_kiln_device
from opdata import x64_if

pytestmark = pytest.mark.requires_kiln

DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.int32, np.uint32, np.int64, np.float16,
          np.float32, np.float64, np.complex64, np.complex128]


def _sample(dtype, shape=(3, 5)):
    rng = np.random.default_rng(7)
    if np.dtype(dtype) == np.bool_:
        return rng.random(shape) < 0.5
    if np.issubdtype(dtype, np.complexfloating):
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -100), min(info.max, 100), shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _live_bytes():
    return get_kiln_device().memory_stats()["bytes_in_use"]


# ---- export: Kiln -> numpy ------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_numpy_from_kiln_matches_cpu_without_copying(dtype):
    host = _sample(dtype)
    with x64_if(dtype):
        f = jax.jit(lambda a: a[::-1] if a.dtype == jnp.bool_ else a * 2)
        on_kiln = f(jax.device_put(host, get_kiln_device()))
        on_cpu = f(jax.device_put(host, get_cpu_device()))
        assert on_kiln.__dlpack_device__() == on_cpu.__dlpack_device__()
        got, want = np.from_dlpack(on_kiln), np.from_dlpack(on_cpu)
        assert got.ctypes.data == on_kiln.unsafe_buffer_pointer()
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_export_holds_memory_after_the_array_is_deleted():
    n_bytes = 8 << 20
    x = jax.device_put(np.arange(n_bytes // 4, dtype=np.float32), get_kiln_device()) + 1
    x.block_until_ready()
    gc.collect()
    view = np.from_dlpack(x)
    held = _live_bytes()
    x.delete()
    gc.collect()
    assert _live_bytes() >= held  # the view still holds the array
    assert view[0] == 1 and view[-1] == n_bytes // 4
    del view
    gc.collect()
    assert _live_bytes() <= held - n_bytes


def test_export_survives_donation():
    x = jax.device_put(np.arange(1024, dtype=np.float32), get_kiln_device()) * 1
    view = np.from_dlpack(x)
    y = jax.jit(lambda a: a * 2, donate_argnums=0)(x)
    np.testing.assert_array_equal(np.asarray(y), np.arange(1024, dtype=np.float32) * 2)
    assert x.is_deleted()
    np.testing.assert_array_equal(view, np.arange(1024, dtype=np.float32))


def test_export_copy_true_copies():
    x = jax.device_put(np.arange(6.0, dtype=np.float32), get_kiln_device())
    capsule = x.__dlpack__(copy=True)
    got = np.from_dlpack(_Wrap(capsule))
    assert got.ctypes.data != x.unsafe_buffer_pointer()
    np.testing.assert_array_equal(got, np.arange(6.0, dtype=np.float32))


def test_export_refusals():
    x = jax.device_put(np.ones(4, np.float32), get_kiln_device())
    with pytest.raises(BufferError, match="kDLCPU"):
        x.__dlpack__(dl_device=(2, 0))
    with pytest.raises(BufferError, match="stream"):
        x.__dlpack__(stream=5)
    b = jax.device_put(np.ones(4, ml_dtypes.bfloat16), get_kiln_device())
    with pytest.raises(BufferError, match="bfloat16"):
        np.from_dlpack(b)


def test_export_of_empty_array():
    x = jax.device_put(np.zeros((0, 3), np.float32), get_kiln_device())
    got = np.from_dlpack(x)
    assert got.shape == (0, 3) and got.dtype == np.float32


class _Wrap:
    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)


# ---- import: numpy -> Kiln -------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_kiln_from_numpy_aliases_and_computes_like_cpu(dtype):
    host = np.ascontiguousarray(_sample(dtype, (4, 6)))
    with x64_if(dtype):
        y = jnp.from_dlpack(host, device=get_kiln_device())
        assert y.devices() == {get_kiln_device()}
        assert y.unsafe_buffer_pointer() == host.ctypes.data
        f = jax.jit(lambda a: jnp.sum(a.astype(jnp.float32) if a.dtype == jnp.bool_ else a,
                                      axis=0))
        got = np.asarray(f(y))
        want = np.asarray(f(jax.device_put(host, get_cpu_device())))
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_import_keeps_the_producer_alive_until_kiln_lets_go():
    host = np.arange(64, dtype=np.float32).reshape(8, 8)
    want = host @ host.T
    alive = weakref.ref(host)
    y = jax.dlpack.from_dlpack(host, device=SingleDeviceSharding(get_kiln_device()))
    assert y.unsafe_buffer_pointer() == host.ctypes.data
    del host
    gc.collect()
    assert alive() is not None  # Kiln's buffer holds the producer's memory
    z = jax.jit(lambda a: a @ a.T)(y)
    np.testing.assert_array_equal(np.asarray(z), want)
    del y
    gc.collect()
    assert alive() is None  # released once Kiln no longer uses it
    np.testing.assert_array_equal(np.asarray(z), want)


def test_import_copies_what_kiln_cannot_alias():
    base = np.arange(40, dtype=np.float32).reshape(5, 8)
    raw = np.zeros(41, np.float32)
    unaligned = raw[1:]  # 4 bytes past numpy's alignment
    unaligned[:] = np.arange(40)
    read_only = np.frombuffer(base.tobytes(), dtype=np.float32)
    for host in (base[:, ::2], base.T, unaligned, base[1:], read_only):
        y = jnp.from_dlpack(host, device=get_kiln_device())
        np.testing.assert_array_equal(np.asarray(y), host)
        if host.ctypes.data % 16:
            assert y.unsafe_buffer_pointer() != host.ctypes.data
    with pytest.raises(ValueError, match="copy=False"):
        jnp.from_dlpack(base[:, ::2], device=get_kiln_device(), copy=False)
    aligned = jnp.from_dlpack(base, device=get_kiln_device(), copy=False)
    assert aligned.unsafe_buffer_pointer() == base.ctypes.data


def test_import_copy_true_copies():
    host = np.arange(16, dtype=np.int32)
    y = jnp.from_dlpack(host, device=get_kiln_device(), copy=True)
    assert y.unsafe_buffer_pointer() != host.ctypes.data
    host[0] = 99
    assert int(y[0]) == 0


def test_import_of_empty_array():
    y = jnp.from_dlpack(np.zeros((2, 0), np.float32), device=get_kiln_device())
    assert y.shape == (2, 0) and y.devices() == {get_kiln_device()}


def test_kiln_numpy_kiln_round_trip_shares_memory():
    x = jax.jit(lambda a: a * 3)(jax.device_put(np.arange(32.0, dtype=np.float32),
                                                get_kiln_device()))
    back = jnp.from_dlpack(np.from_dlpack(x), device=get_kiln_device())
    assert back.unsafe_buffer_pointer() == x.unsafe_buffer_pointer()
    np.testing.assert_array_equal(np.asarray(back), np.arange(32.0, dtype=np.float32) * 3)


def test_other_devices_keep_jax_behaviour():
    # Without a Kiln target, JAX's own importer places a CPU tensor on the CPU device.
    y = jnp.from_dlpack(np.ones(3, np.float32))
    assert y.devices() == {get_cpu_device()}
    cpu = jax.device_put(np.ones(3, np.float32), get_cpu_device())
    np.testing.assert_array_equal(np.from_dlpack(cpu), np.ones(3, np.float32))


# ---- torch -----------------------------------------------------------------------------------

DEBIAN_DIST_PACKAGES = "/usr/lib/python3/dist-packages"


def _import_torch():
    """torch from the virtualenv if it has one, else Debian's python3-torch (same Python 3.11).
    Debian's directory is on sys.path only while torch imports, so nothing else comes from it."""
    try:
        import torch
        return torch
    except ImportError:
        pass
    import sys
    if not os.path.isdir(os.path.join(DEBIAN_DIST_PACKAGES, "torch")):
        pytest.fail("torch is not installed: scripts/setup.sh installs Debian's python3-torch")
    sys.path.append(DEBIAN_DIST_PACKAGES)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "compiled using NumPy 1.x": its NumPy bridge is unused
            import torch
    finally:
        sys.path.remove(DEBIAN_DIST_PACKAGES)
    return torch


# Debian's torch 1.13 predates DLPack's bool code, so bool is not among these.
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "uint8", "complex64",
                                   "float16"])
def test_torch_round_trips(dtype):
    torch = _import_torch()
    with x64_if(dtype):
        _torch_round_trip(torch, dtype)


def _torch_round_trip(torch, dtype):
    values = _sample(np.dtype(dtype), (3, 4))
    # Kiln -> torch, zero-copy: torch's tensor is Kiln's buffer.
    x = jax.device_put(values, get_kiln_device())
    t = torch.from_dlpack(x)
    assert t.data_ptr() == x.unsafe_buffer_pointer()
    assert str(t.dtype) == f"torch.{dtype}"
    assert t.tolist() == values.tolist()
    # torch -> Kiln, zero-copy, and Kiln computes on it as JAX's CPU backend does.
    source = torch.from_dlpack(np.ascontiguousarray(_sample(np.dtype(dtype), (4, 6)))).clone()
    y = jnp.from_dlpack(source, device=get_kiln_device())
    assert y.devices() == {get_kiln_device()}
    assert y.dtype == np.dtype(dtype)
    assert y.unsafe_buffer_pointer() == source.data_ptr()
    assert np.asarray(y).tolist() == source.tolist()
    cpu = jax.device_put(np.asarray(y), get_cpu_device())
    np.testing.assert_allclose(np.asarray(jnp.sum(y, axis=1)), np.asarray(jnp.sum(cpu, axis=1)),
                               rtol=1e-3 if dtype == "float16" else 1e-6)


def test_torch_keeps_kiln_memory_alive():
    torch = _import_torch()
    x = jax.device_put(np.arange(64, dtype=np.float32), get_kiln_device()) + 1
    t = torch.from_dlpack(x)
    expected = np.asarray(x).tolist()
    del x
    gc.collect()
    assert t.tolist() == expected  # torch's capsule holds Kiln's buffer
