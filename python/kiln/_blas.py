"""Which kernels the OpenBLAS under Kiln's products runs.

Kiln's products (dot_general, convolution, the LAPACK calls) run on the OpenBLAS it ships (the wheel
bundles its own renamed copy of scipy-openblas32's library), built with DYNAMIC_ARCH: when the
library loads, it picks one set of kernels (a "core") for the process from CPUID, unless the
environment variable OPENBLAS_CORETYPE names one. That variable is read by every OpenBLAS in the
process (numpy's, scipy's) and is set for their sake, e.g. to pin them to AVX2 kernels: on the
2-core AMD Zen 5 machine Kiln is measured on, the environment sets OPENBLAS_CORETYPE=Haswell, and
under it Kiln's f32 GEMM ran at 46% of the machine's AVX-512 FMA peak where OpenBLAS's own choice
(SkylakeX) reaches 82-88% and XLA:CPU 88% (docs/engine.md, "Dense kernels").

So Kiln configures its own copy: before JAX loads the plugin, `preload` loads it, and with it
OpenBLAS, with OPENBLAS_CORETYPE replaced by KILN_OPENBLAS_CORETYPE (unset: OpenBLAS detects the
CPU), then restores the environment; JAX's own dlopen of the same path finds the library loaded.
OpenBLAS copies loaded before or after are unaffected.
"""

from __future__ import annotations

import ctypes
import os

# The function naming the selected core, under the symbol prefixes of the OpenBLAS builds Kiln links
# (PyPI's scipy-openblas32 for the wheel, Debian's libopenblas for KILN_BLAS=system).
_CORENAME_SYMBOLS = ("scipy_openblas_get_corename", "openblas_get_corename")


def preload(path: str) -> ctypes.CDLL | None:
    """Loads the plugin library at `path` so that its OpenBLAS initialises with the core named by
    KILN_OPENBLAS_CORETYPE, or the one it detects, whatever OPENBLAS_CORETYPE says; leaves
    os.environ as it found it. Returns the handle, or None if the environment needed no change
    (then JAX loads the library as usual)."""
    wanted = os.environ.get("KILN_OPENBLAS_CORETYPE")
    saved = os.environ.get("OPENBLAS_CORETYPE")
    if saved == wanted or not os.path.isfile(path):
        return None
    if wanted is None:
        del os.environ["OPENBLAS_CORETYPE"]
    else:
        os.environ["OPENBLAS_CORETYPE"] = wanted
    try:
        return ctypes.CDLL(path)
    finally:
        if saved is None:
            os.environ.pop("OPENBLAS_CORETYPE", None)
        else:
            os.environ["OPENBLAS_CORETYPE"] = saved


def core(path: str) -> str | None:
    """The core the OpenBLAS that the plugin library at `path` uses has selected (loading the
    library if it is not yet), or None if that OpenBLAS does not say."""
    lib = ctypes.CDLL(path)
    for symbol in _CORENAME_SYMBOLS:
        fn = getattr(lib, symbol, None)
        if fn is not None:
            fn.restype = ctypes.c_char_p
            name = fn()
            return name.decode() if name else None
    return None
