"""Kiln: a PJRT plugin that runs JAX programs on the CPU.

Installing the `kiln-pjrt` distribution makes JAX pick Kiln up by itself: the distribution declares
an entry point `kiln = "kiln"` in the group `jax_plugins`, and JAX imports every such module and
calls its `initialize()` the first time it initialises its backends. After that, `jax.devices("kiln")`
lists Kiln's devices.
"""

from __future__ import annotations

import os

from kiln._version import __version__

__all__ = ["__version__", "initialize", "library_path", "PLATFORM_NAME"]

# The name the plugin is registered under. It must equal the platform name the library reports
# (PJRT_Client_PlatformName), because JAX keys backends by the registered name but lowers programs
# for the client's platform name.
PLATFORM_NAME = "kiln"

# The wheel installs the shared library into this package's directory (CMake's install() rule
# with DESTINATION kiln), so it is found relative to this file, wherever the package lives.
_LIBRARY_FILE = "libkiln_pjrt.so"


def library_path() -> str:
    """Absolute path of the bundled PJRT plugin library, libkiln_pjrt.so."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), _LIBRARY_FILE)


def _named_in_pjrt_env_var() -> bool:
    """True if PJRT_NAMES_AND_LIBRARY_PATHS ("name:path,name:path") already names kiln."""
    spec = os.environ.get("PJRT_NAMES_AND_LIBRARY_PATHS", "")
    sep = ";" if os.name == "nt" else ","
    return any(item.split(":", 1)[0].strip() == PLATFORM_NAME
               for item in spec.split(sep) if item.strip())


def initialize() -> None:
    """Registers Kiln with JAX. Called by JAX through the `jax_plugins` entry point."""
    # JAX is optional at install time: without it there is nothing to register with.
    try:
        from jax._src import xla_bridge
    except ImportError:
        return
    # What JAX grants only to platforms it names: host-callback and LAPACK lowerings, buffer
    # donation, the persistent compilation cache, DLPack, platform_dependent's cpu branches, XLA FFI
    # handlers, jax.export artifacts made for the cpu platform, the CPU device count
    # (jax_num_cpu_devices), lowering rules registered only for the cpu platform.
    from kiln import (_blas, _callbacks, _compat, _device_count, _dlpack, _export, _ffi, _linalg,
                      _lowering)
    message = _compat.jaxlib_warning()
    if message:
        import warnings
        warnings.warn(message, RuntimeWarning, stacklevel=2)
    path = _callbacks.library_in_env(PLATFORM_NAME) or library_path()
    # Before anything loads the library: OpenBLAS picks its kernels as it loads (kiln/_blas.py).
    try:
        _blas.preload(path)
    except OSError as e:
        import warnings
        warnings.warn(f"Kiln could not choose OpenBLAS's kernels: {e}", RuntimeWarning, stacklevel=2)
    # Each of these adapts one JAX feature; one that fails (a JAX release that moved an internal)
    # must not take the others, or the plugin, with it.
    for what, register in (("host callbacks", lambda: _callbacks.register(PLATFORM_NAME, path)),
                           ("LAPACK lowerings", lambda: _linalg.register(PLATFORM_NAME)),
                           ("buffer donation", lambda: _lowering.enable_donation(PLATFORM_NAME)),
                           ("lax.platform_dependent's cpu branches",
                            lambda: _lowering.enable_platform_dependent(PLATFORM_NAME)),
                           ("the compilation cache",
                            lambda: _lowering.enable_compilation_cache(PLATFORM_NAME)),
                           ("DLPack", lambda: _dlpack.register(PLATFORM_NAME, path)),
                           ("XLA FFI handlers", lambda: _ffi.register(PLATFORM_NAME, path)),
                           ("jax.export across CPU backends",
                            lambda: _export.enable_cpu_exports(PLATFORM_NAME)),
                           ("jax_num_cpu_devices",
                            lambda: _device_count.enable(PLATFORM_NAME)),
                           ("lowering rules registered only for the cpu platform",
                            lambda: _lowering.enable_cpu_only_rules(PLATFORM_NAME))):
        try:
            register()
        except Exception as e:  # noqa: BLE001 - reported, and the rest still registers
            import warnings
            warnings.warn(f"Kiln could not enable {what} with this JAX: {type(e).__name__}: {e}",
                          RuntimeWarning, stacklevel=2)
    # JAX registers plugins named in PJRT_NAMES_AND_LIBRARY_PATHS right after running the entry
    # points, and registering one name twice fails. If the variable names kiln (e.g. to point JAX
    # at a development build), let it win instead of registering the bundled library too.
    if _named_in_pjrt_env_var():
        return
    if not os.path.isfile(path):
        raise RuntimeError(f"Kiln's plugin library is missing: {path} (reinstall kiln-pjrt)")
    # register_plugin loads the library (dlopen + GetPjrtApi) and adds a backend factory, so the
    # client is only created when JAX initialises its backends.
    xla_bridge.register_plugin(PLATFORM_NAME, library_path=path)
