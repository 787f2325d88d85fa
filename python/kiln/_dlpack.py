"""DLPack for Kiln arrays: `np.from_dlpack(x)`, `torch.from_dlpack(x)` and `jax.dlpack.from_dlpack`
/ `jnp.from_dlpack(..., device=<kiln device>)`, without copying where the memory allows it.

jaxlib's own DLPack code accepts only the cpu, cuda and rocm platforms (it compares the client's
platform id), so for a plugin platform it refuses both directions. Kiln's arrays live in host
memory, so Kiln presents them to DLPack consumers as CPU memory:

* export: `__dlpack_device__` is (kDLCPU, 0) and `__dlpack__` hands out a numpy view of the
  array's memory. The view holds a reference taken through Kiln's extension
  (`retain_host_memory`), so the memory stays valid even if JAX deletes or donates the array while
  the consumer holds it. bfloat16 and float8 arrays are refused (numpy cannot export them).
* import onto a Kiln device: a CPU tensor that is dense, row-major and 16-byte aligned becomes a
  Kiln buffer that aliases it (PJRT_Client_CreateViewOfDeviceBuffer, through jaxlib's own
  importer); the producer's memory is released when Kiln no longer uses it. Anything else is
  copied, or refused when the caller passed copy=False. Imports to other devices are JAX's.
"""

from __future__ import annotations

import ctypes
import math
from typing import Any

import numpy as np

KDLCPU = 1
_VIEW_ALIGNMENT = 16  # pjrt/buffer_external.cc, kViewAlignment


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32),
                ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_valid = ctypes.pythonapi.PyCapsule_IsValid
_capsule_valid.restype = ctypes.c_int
_capsule_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _viewable(capsule) -> bool:
    """True if the unversioned DLPack capsule holds memory a Kiln buffer may alias: CPU memory,
    whole bytes per element, dense row-major and 16-byte aligned (or no elements at all)."""
    if not _capsule_valid(capsule, b"dltensor"):
        return False
    t = _DLTensor.from_address(_capsule_pointer(capsule, b"dltensor"))
    if t.device_type != KDLCPU or t.ndim < 0 or t.lanes != 1 or t.bits % 8:
        return False
    shape = [t.shape[i] for i in range(t.ndim)]
    if math.prod(shape) == 0:
        return True
    if ((t.data or 0) + t.byte_offset) % _VIEW_ALIGNMENT:
        return False
    if t.strides:
        expected = 1
        for i in reversed(range(t.ndim)):
            if shape[i] > 1 and t.strides[i] != expected:
                return False
            expected *= shape[i]
    return True


class _Capsule:
    """Offers an already-made capsule to a consumer that asks for `__dlpack__` (np.from_dlpack)."""

    def __init__(self, capsule):
        self._capsule = capsule

    def __dlpack__(self, **kwargs):
        del kwargs
        return self._capsule

    def __dlpack_device__(self):
        return (KDLCPU, 0)


class _HostMemory:
    """numpy's view of a Kiln array's memory (via __array_interface__), holding a reference on it
    that is released when the view goes away."""

    def __init__(self, pointer: int, nbytes: int, reference: int, release):
        self.__array_interface__ = {"shape": (nbytes,), "typestr": "|u1",
                                    "data": (pointer, False), "version": 3}
        self._reference = reference
        self._release = release

    def __del__(self):
        if self._reference:
            reference, self._reference = self._reference, None
            self._release(reference)


def _is_kiln(x, platform: str) -> bool:
    try:
        devices = x.devices()
    except Exception:  # noqa: BLE001 - deleted or not an array: not ours to handle
        return False
    return len(devices) == 1 and next(iter(devices)).platform == platform


def _host_view(x, library: str) -> np.ndarray:
    """A zero-copy numpy array of the single-device Kiln array `x`."""
    from kiln import _extension

    dtype = np.dtype(x.dtype)
    shape = tuple(x.shape)
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes == 0:
        return np.zeros(shape, dtype)
    pointer = x.unsafe_buffer_pointer()  # waits for the value
    ext = _extension.find(library, 2, "DLPack export")
    reference = ext.retain_host_memory(pointer, nbytes)
    if not reference:
        raise BufferError(f"Kiln could not find the memory of this {dtype}{list(shape)} array "
                          "(was it deleted?)")
    raw = np.asarray(_HostMemory(pointer, nbytes, reference, ext.release_host_memory))
    # The memory holds the array in its layout's order (row-major unless it was made in another):
    # a strided view of the logical array, still zero-copy.
    major_to_minor = _major_to_minor(x, len(shape))
    physical = raw.view(dtype).reshape(tuple(shape[d] for d in major_to_minor))
    return physical.transpose(tuple(np.argsort(major_to_minor)))


def _major_to_minor(x, rank: int) -> tuple:
    try:
        order = tuple(x.format.layout.major_to_minor)
    except Exception:  # noqa: BLE001 - no layout to ask for: Kiln's default, row-major
        order = ()
    return order if sorted(order) == list(range(rank)) else tuple(range(rank))


def _dl_device_type(value: int):
    try:
        from jax._src.dlpack import DLDeviceType
        return DLDeviceType(value)
    except (ImportError, AttributeError, ValueError):
        return value


def _export(x, library: str, stream, max_version, dl_device, copy):
    if stream is not None and stream != -1:
        raise BufferError(f"Kiln arrays are in host memory: __dlpack__ takes no stream, got "
                          f"{stream!r}")
    if dl_device is not None and (int(dl_device[0]), int(dl_device[1])) != (KDLCPU, 0):
        raise BufferError(f"Kiln arrays are in host memory; they can be exported to (kDLCPU, 0) "
                          f"only, not {tuple(dl_device)}")
    dtype = np.dtype(x.dtype)
    if dtype.kind not in "biufc" or dtype.type.__module__ != "numpy":
        raise BufferError(f"DLPack export of {dtype} arrays from Kiln is not supported")
    view = _host_view(x, library)
    if copy:
        view = view.copy()
    kwargs = {} if max_version is None else {"max_version": max_version}
    return view.__dlpack__(stream=None, **kwargs)


def _native_import(capsule, device, copy):
    """jaxlib's importer onto `device` (a Kiln device): a view of the capsule's memory. Returns
    None when this jaxlib's importer has another signature (the capsule is then still unused)."""
    try:
        from jax._src.lib import _jax as native
    except ImportError:
        from jax._src.lib import xla_client
        native = xla_client._xla  # noqa: SLF001 - older jaxlib
    importer = getattr(native, "dlpack_managed_tensor_to_buffer", None)
    if importer is None:
        return None
    for args in ((capsule, device, None, copy, KDLCPU), (capsule, device, None, copy)):
        try:
            return importer(*args)
        except TypeError:
            continue
    return None


def _import(original, external_array, device, copy):
    import jax
    import jax.numpy as jnp
    from jax._src import dtypes

    dl_type, _ = external_array.__dlpack_device__()
    if int(dl_type) != KDLCPU:
        return original(external_array, device=device, copy=copy)
    if copy:  # Kiln copies whatever it is given: no view needed.
        return jax.device_put(np.from_dlpack(external_array), device)
    try:
        capsule = external_array.__dlpack__(stream=None)
    except BufferError:
        # E.g. numpy refuses a read-only array to unversioned consumers; np.from_dlpack asks for
        # a versioned capsule, and Kiln copies it.
        if copy is False:
            raise
        return jax.device_put(np.from_dlpack(external_array), device)
    if _viewable(capsule):
        arr = _native_import(capsule, device, copy)
        if arr is not None:
            return jnp.asarray(arr, dtype=dtypes.canonicalize_dtype(arr.dtype))
    if copy is False:
        raise ValueError("Specified input which requires a copy to reach a Kiln device (Kiln "
                         "aliases only dense, row-major, 16-byte aligned CPU memory), however "
                         "copy=False. Set copy=True or copy=None to perform the requested "
                         "operation.")
    return jax.device_put(np.from_dlpack(_Capsule(capsule)), device)


def _kiln_target(device, platform: str):
    if device is None:
        return None
    device_set = getattr(device, "device_set", None)
    if device_set is not None:  # a Sharding
        if len(device_set) != 1:
            return None
        device = next(iter(device_set))
    return device if getattr(device, "platform", None) == platform else None


def register(platform: str, library: str) -> None:
    """Extends jax.Array's DLPack methods and jax.dlpack.from_dlpack for `platform`'s arrays and
    devices; every other array and device goes to JAX's own code."""
    try:
        import jax.dlpack
        from jax._src import array
    except ImportError:
        return
    cls = array.ArrayImpl
    if getattr(cls.__dlpack__, "_kiln_platform", None) != platform:
        original_dlpack, original_device = cls.__dlpack__, cls.__dlpack_device__

        def __dlpack__(self, *, stream: Any = None, max_version=None, dl_device=None,
                       copy=None):
            if _is_kiln(self, platform):
                return _export(self, library, stream, max_version, dl_device, copy)
            kwargs = {"stream": stream}
            for key, value in (("max_version", max_version), ("dl_device", dl_device),
                               ("copy", copy)):
                if value is not None:
                    kwargs[key] = value
            return original_dlpack(self, **kwargs)

        def __dlpack_device__(self):
            if _is_kiln(self, platform):
                return (_dl_device_type(KDLCPU), 0)
            return original_device(self)

        __dlpack__._kiln_platform = platform  # type: ignore[attr-defined]
        cls.__dlpack__, cls.__dlpack_device__ = __dlpack__, __dlpack_device__

    original_from = jax.dlpack.from_dlpack
    if getattr(original_from, "_kiln_platform", None) != platform:
        def from_dlpack(external_array, device=None, copy=None):
            target = _kiln_target(device, platform)
            if target is None or not hasattr(external_array, "__dlpack_device__"):
                return original_from(external_array, device=device, copy=copy)
            return _import(original_from, external_array, target, copy)

        from_dlpack._kiln_platform = platform  # type: ignore[attr-defined]
        from_dlpack.__wrapped__ = original_from  # type: ignore[attr-defined]
        from_dlpack.__doc__ = original_from.__doc__
        jax.dlpack.from_dlpack = from_dlpack
