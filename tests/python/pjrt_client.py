"""The Kiln plugin under test driven by a second PJRT client, pypjrt (pure Python over ctypes):
what the program-format modes (program_formats.py, program_formats_hlo.py), the HLO input tests,
the conformance probe and the client examples share.

`kiln_library()` is PJRT_NAMES_AND_LIBRARY_PATHS's `kiln:` entry, else the installed package's
library; `kiln_client()` one pypjrt client of it per process; `compile_program` compiles code in
any PJRT program format (pypjrt's own `Client.compile` always sends "mlir"); `run_program` runs it
on device 0 and returns pypjrt buffers, `run_to_numpy` numpy arrays of the given avals.
"""

from __future__ import annotations

import ctypes
import os
from typing import Any, Sequence

import numpy as np

# numpy dtype name -> PJRT_Buffer_Type name (Kiln's DType numbering equals PJRT's).
_PJRT_NAMES = {
    "bool": "PRED", "int8": "S8", "int16": "S16", "int32": "S32", "int64": "S64",
    "uint8": "U8", "uint16": "U16", "uint32": "U32", "uint64": "U64", "float16": "F16",
    "float32": "F32", "float64": "F64", "bfloat16": "BF16", "complex64": "C64",
    "complex128": "C128", "float8_e5m2": "F8E5M2", "float8_e4m3fn": "F8E4M3FN",
    "float8_e4m3b11fnuz": "F8E4M3B11FNUZ", "float8_e5m2fnuz": "F8E5M2FNUZ",
    "float8_e4m3fnuz": "F8E4M3FNUZ", "int4": "S4", "uint4": "U4", "int2": "S2", "uint2": "U2",
    "float8_e4m3": "F8E4M3", "float8_e3m4": "F8E3M4", "float8_e8m0fnu": "F8E8M0FNU",
    "float4_e2m1fn": "F4E2M1FN",
}

_client = None


def kiln_library() -> str:
    """PJRT_NAMES_AND_LIBRARY_PATHS's `kiln:` entry, else the installed package's library."""
    for entry in os.environ.get("PJRT_NAMES_AND_LIBRARY_PATHS", "").split(","):
        name, _, path = entry.partition(":")
        if name == "kiln" and path:
            return path
    import kiln  # noqa: PLC0415

    return kiln.library_path()


def kiln_client():
    """One pypjrt client of the Kiln plugin per process."""
    global _client
    if _client is None:
        from pypjrt import Client  # noqa: PLC0415

        _client = Client.create(kiln_library())
    return _client


def pjrt_type(dtype: np.dtype) -> int:
    """The PJRT_Buffer_Type of a numpy dtype."""
    from pypjrt import typing as pt  # noqa: PLC0415

    return pt._code(_PJRT_NAMES[np.dtype(dtype).name])  # noqa: SLF001


def compile_program(client, code: bytes, fmt: bytes, options=None):
    """`PJRT_Client_Compile` of `code` in program format `fmt`, with pypjrt's structures."""
    if fmt == b"mlir" and options is None:
        return client.compile(code)
    from pypjrt import CompileOptions  # noqa: PLC0415
    from pypjrt.client import Executable  # noqa: PLC0415

    plugin = client._plugin  # noqa: SLF001
    opts = (options or CompileOptions()).encode(plugin.abi)
    keep = [ctypes.create_string_buffer(b, len(b)) for b in (code, fmt, opts)]
    voidp = ctypes.c_void_p
    prog = plugin.args("PJRT_Program", code=ctypes.cast(keep[0], voidp), code_size=len(code),
                       format=ctypes.cast(keep[1], voidp), format_size=len(fmt))
    args = plugin.args("PJRT_Client_Compile_Args", client=client._check(),  # noqa: SLF001
                       program=ctypes.addressof(prog), compile_options=ctypes.cast(keep[2], voidp),
                       compile_options_size=len(opts))
    plugin.call("PJRT_Client_Compile", args)
    return Executable(plugin, args.executable, client)


def run_program(code: bytes, fmt: bytes, inputs: Sequence[np.ndarray]) -> list[Any]:
    """Compiles `code` and runs it on Kiln's device 0; the output buffers (pypjrt's)."""
    client = kiln_client()
    exe = compile_program(client, code, fmt)
    with client.device(0) as device:
        buffers = []
        for x in inputs:
            x = np.array(x, order="C")  # (np.ascontiguousarray makes 0-d arrays 1-d)
            # pypjrt needs a writable buffer of at least one byte (zero-size arrays copy nothing).
            buffers.append(client.buffer_from_host(bytearray(x.tobytes() or b"\0"),
                                                   pjrt_type(x.dtype), list(x.shape), device))
    return exe(*buffers)


def run_to_numpy(code: bytes, fmt: bytes, inputs: Sequence[np.ndarray],
                 out_avals: Sequence[Any]) -> list[np.ndarray]:
    """run_program's results as numpy arrays of `out_avals`' shapes and dtypes."""
    outs = run_program(code, fmt, inputs)
    if len(outs) != len(out_avals):
        raise AssertionError(f"{len(outs)} results; JAX expects {len(out_avals)}")
    results = []
    for buf, aval in zip(outs, out_avals):
        host = np.empty(aval.shape, aval.dtype)
        if host.nbytes:
            buf.to_host(memoryview(host.reshape(-1).view(np.uint8)))
        results.append(host)
    return results
