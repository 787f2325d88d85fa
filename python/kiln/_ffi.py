"""XLA FFI handlers on Kiln: `jax.ffi.register_ffi_target(name, capsule, platform="kiln")` and
`jax.ffi.register_ffi_type(name, {...}, platform="kiln")`.

jaxlib routes a registration for a platform to the handler registered for it with
`xla_client.register_custom_call_handler` (and `register_custom_type_handler`), and keeps the
registrations made before that handler exists until it does. `register()` installs handlers for
"kiln" that pass the capsules' pointers to the library through the PJRT FFI extension
(abi/pjrt_ffi_extension.h), found, like Kiln's own extension, on the PJRT_Api's extension chain.
A stablehlo.custom_call to a registered name then runs the handler (kernels/ffi_call.cc).
"""

from __future__ import annotations

import ctypes
import threading

from kiln import _extension

FFI_EXTENSION_TYPE = 5  # PJRT_Extension_Type_FFI

_VOIDP = ctypes.c_void_p
_CALL = ctypes.CFUNCTYPE(_VOIDP, _VOIDP)


class _RegisterHandlerArgs(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("target_name", ctypes.c_char_p),
                ("target_name_size", ctypes.c_size_t), ("handler", _VOIDP),
                ("platform_name", ctypes.c_char_p), ("platform_name_size", ctypes.c_size_t),
                ("traits", ctypes.c_uint32)]


class _TypeInfo(ctypes.Structure):  # PJRT_FFI_Type_Info
    _fields_ = [("deleter", _VOIDP), ("serialize", _VOIDP), ("deserialize", _VOIDP)]


class _TypeRegisterArgs(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", _VOIDP),
                ("type_name", ctypes.c_char_p), ("type_name_size", ctypes.c_size_t),
                ("type_id", ctypes.c_int64), ("type_info", ctypes.POINTER(_TypeInfo))]


# PJRT_Error_Message_Args and PJRT_Error_Destroy_Args.
class _ErrorMessageArgs(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", _VOIDP), ("error", _VOIDP),
                ("message", _VOIDP), ("message_size", ctypes.c_size_t)]


class _ErrorDestroyArgs(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", _VOIDP), ("error", _VOIDP)]


_lock = threading.Lock()
_keep: list = []  # names and type infos the library may point at for the life of the process


class _Library:
    def __init__(self, path: str):
        lib = ctypes.CDLL(path)
        lib.GetPjrtApi.restype = _VOIDP
        self.api = lib.GetPjrtApi()
        word = ctypes.sizeof(ctypes.c_size_t)
        node = _VOIDP.from_address(self.api + word).value
        self.ext = None
        while node:
            base = _extension._ExtensionBase.from_address(node)
            if base.type == FFI_EXTENSION_TYPE:
                self.ext = node
                break
            node = base.next
        if self.ext is None:
            raise RuntimeError(f"{path} has no PJRT FFI extension (a Kiln build older than this "
                               "Python package?)")

    def _fn(self, offset: int):
        return _CALL(_VOIDP.from_address(self.ext + offset).value)

    def _raise(self, error: int, what: str) -> None:
        if not error:
            return
        # PJRT_Api: struct_size, extension_start, pjrt_api_version (24 bytes), then the slots
        # PJRT_Error_Destroy, PJRT_Error_Message, ...
        slots = self.api + 16 + 24
        destroy = ctypes.CFUNCTYPE(None, _VOIDP)(_VOIDP.from_address(slots).value)
        message = ctypes.CFUNCTYPE(None, _VOIDP)(_VOIDP.from_address(slots + 8).value)
        m = _ErrorMessageArgs(struct_size=ctypes.sizeof(_ErrorMessageArgs), error=error)
        message(ctypes.addressof(m))
        text = ctypes.string_at(m.message, m.message_size).decode(errors="replace")
        d = _ErrorDestroyArgs(struct_size=ctypes.sizeof(_ErrorDestroyArgs), error=error)
        destroy(ctypes.addressof(d))
        raise RuntimeError(f"{what}: {text}")

    def register_handler(self, name: str, handler: int, traits: int) -> None:
        name_b = name.encode()
        _keep.append(name_b)
        a = _RegisterHandlerArgs(struct_size=52, target_name=name_b, target_name_size=len(name_b),
                                 handler=handler, platform_name=b"kiln", platform_name_size=4,
                                 traits=traits)
        self._raise(self._fn(40)(ctypes.addressof(a)), f"registering FFI target {name!r}")

    def register_type(self, name: str, type_id_ptr: int, deleter: int | None) -> None:
        name_b = name.encode()
        info = _TypeInfo(deleter=deleter)
        _keep.extend((name_b, info))
        type_id = ctypes.c_int64.from_address(type_id_ptr)
        a = _TypeRegisterArgs(struct_size=ctypes.sizeof(_TypeRegisterArgs), type_name=name_b,
                              type_name_size=len(name_b), type_id=type_id.value,
                              type_info=ctypes.pointer(info))
        self._raise(self._fn(24)(ctypes.addressof(a)), f"registering FFI type {name!r}")
        type_id.value = a.type_id


def _capsule_pointer(capsule) -> int:
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype = ctypes.c_char_p
    get_name.argtypes = [ctypes.py_object]
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype = _VOIDP
    get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    try:
        pointer = get_pointer(capsule, get_name(capsule))
    except (TypeError, ValueError) as e:
        raise TypeError(f"expected a PyCapsule holding a function pointer, got {capsule!r}") from e
    if not pointer:
        raise ValueError("the PyCapsule holds a NULL pointer")
    return pointer


def _handler_pointer(name: str, fn) -> int:
    if isinstance(fn, dict):
        stages = set(fn)
        if stages - {"execute"}:
            raise NotImplementedError(
                f"FFI target {name!r}: Kiln registers only the execute stage through jax.ffi; "
                f"got stages {sorted(stages)} (a handler can register the others itself with "
                "XLA_FFI_Handler_Register)")
        if "execute" not in fn:
            raise ValueError(f"FFI target {name!r} has no 'execute' stage")
        fn = fn["execute"]
    return _capsule_pointer(fn)


def register(platform: str, path: str) -> None:
    """Routes jax.ffi registrations for `platform` to the library at `path`."""
    from jaxlib import xla_client
    library: list[_Library] = []

    def lib() -> _Library:
        with _lock:
            if not library:
                library.append(_Library(path))
            return library[0]

    def handler(name, fn, xla_platform_name, api_version, traits) -> None:
        del xla_platform_name
        name = name.decode() if isinstance(name, bytes) else str(name)
        if api_version != 1:
            raise NotImplementedError(
                f"FFI target {name!r}: Kiln runs typed XLA FFI handlers (api_version=1); the "
                f"untyped custom-call API (api_version={api_version}) is not supported")
        lib().register_handler(name, _handler_pointer(name, fn), int(traits))

    def type_handler(type_name, registration) -> None:
        type_name = type_name.decode() if isinstance(type_name, bytes) else str(type_name)
        deleter = None
        if isinstance(registration, dict):
            info = registration.get("type_info")
            if info is not None:
                # XLA_FFI_TypeInfo: struct_size, extension_start, deleter.
                deleter = _VOIDP.from_address(_capsule_pointer(info) + 16).value
            registration = registration["type_id"]
        lib().register_type(type_name, _capsule_pointer(registration), deleter)

    # Registrations made before Kiln loaded are replayed inside register_custom_*_handler; one that
    # fails there must not stop the others (nor Kiln's initialisation): it becomes a warning.
    replaying = [True]

    def replayed(fn):
        def wrapper(*args):
            try:
                fn(*args)
            except Exception as e:  # noqa: BLE001
                if not replaying[0]:
                    raise
                import warnings
                warnings.warn(f"Kiln could not register {args[0]!r}: {e}", RuntimeWarning,
                              stacklevel=2)
        return wrapper

    xla_client.register_custom_call_handler(platform, replayed(handler))
    xla_client.register_custom_type_handler(platform, replayed(type_handler))
    replaying[0] = False
