"""Acceptance smoke tests: plugin discovery, registration routes, first programs, device and
backend attributes.

The registration and first-program checks run in fresh subprocesses with a clean environment, so
that they see exactly what a user's `python -c ...` sees (no state from this test process).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import jax
import jax.numpy as jnp

from conftest import KILN_PLATFORM, SELFCHECK
from native_code import cpu_flags

pytestmark = pytest.mark.requires_kiln

# Keep only what a process needs to start; drop every JAX_*/XLA_*/PJRT_* setting of the caller.
_KEEP = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "USER", "SYSTEMROOT")


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in _KEEP}
    env.update(extra)
    return env


def run_python(code: str, timeout: float = 240, **env: str) -> dict:
    """Runs `code` in `sys.executable -c` with a clean env; the code must print one JSON line last."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=_clean_env(**env),
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, (
        f"subprocess exited with {proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n"
        f"{proc.stderr}")
    lines = [l for l in proc.stdout.splitlines() if l.strip()]
    assert lines, f"no output; stderr:\n{proc.stderr}"
    result = json.loads(lines[-1])
    result["_stderr"] = proc.stderr
    return result


def test_library_path_is_a_shared_library():
    import kiln
    path = kiln.library_path()
    assert os.path.isabs(path), path
    assert os.path.isfile(path), path
    with open(path, "rb") as f:
        assert f.read(4) == b"\x7fELF", f"{path} is not an ELF shared object"


def test_entry_point_is_registered():
    from importlib.metadata import entry_points
    names = {ep.name: ep.value for ep in entry_points(group="jax_plugins")}
    assert "kiln" in names, f"no 'kiln' entry point in group jax_plugins: {names}"


def test_devices_listed_with_jax_platforms_kiln():
    r = run_python("""
        import json, jax
        ds = jax.devices()
        print(json.dumps({"platforms": [d.platform for d in ds], "ids": [d.id for d in ds],
                          "default_backend": jax.default_backend(),
                          "local_count": jax.local_device_count()}))
        """, JAX_PLATFORMS="kiln")
    assert r["platforms"], "jax.devices() is empty"
    assert set(r["platforms"]) == {"kiln"}, r["platforms"]
    assert r["default_backend"] == "kiln"
    assert r["ids"] == list(range(len(r["ids"]))), r["ids"]
    assert r["local_count"] == len(r["ids"])


def test_jnp_add_on_kiln():
    r = run_python("""
        import json, jax, jax.numpy as jnp
        x = jnp.add(1, 1)
        print(json.dumps({"value": x.item(), "dtype": str(x.dtype),
                          "platforms": sorted(d.platform for d in x.devices())}))
        """, JAX_PLATFORMS="kiln")
    assert r["value"] == 2
    assert r["dtype"] == "int32"
    assert r["platforms"] == ["kiln"]


def test_jit_mul_on_kiln():
    r = run_python("""
        import json, jax
        x = jax.jit(lambda x: x * 2)(1.)
        print(json.dumps({"value": x.item(), "dtype": str(x.dtype),
                          "platforms": sorted(d.platform for d in x.devices())}))
        """, JAX_PLATFORMS="kiln")
    assert r["value"] == 2.0
    assert r["dtype"] == "float32"
    assert r["platforms"] == ["kiln"]


def test_kiln_is_default_with_cpu_also_enabled():
    r = run_python("""
        import json, jax, jax.numpy as jnp
        y = jax.jit(lambda a, b: a @ b)(jnp.ones((3, 4)), jnp.ones((4, 2)))
        print(json.dumps({"default": jax.default_backend(),
                          "cpu": [d.platform for d in jax.devices("cpu")],
                          "y": y.tolist(), "on": sorted(d.platform for d in y.devices())}))
        """, JAX_PLATFORMS="kiln,cpu")
    assert r["default"] == "kiln"
    assert r["cpu"] and set(r["cpu"]) == {"cpu"}
    assert r["on"] == ["kiln"]
    assert r["y"] == [[4.0, 4.0]] * 3


# Route 2: PJRT_NAMES_AND_LIBRARY_PATHS. The kiln package's jax_plugins entry point would register
# the same name a second time, so this script removes that entry point from jax's discovery
# (jax calls importlib.metadata.entry_points(group="jax_plugins") at backend initialisation).
_WITHOUT_ENTRY_POINT = """
    import importlib.metadata as md
    _orig = md.entry_points
    def _entry_points(**kw):
        eps = _orig(**kw)
        if kw.get("group") == "jax_plugins":
            return md.EntryPoints(e for e in eps if e.name != "kiln")
        return eps
    md.entry_points = _entry_points
"""


def test_env_var_registration_route():
    import kiln
    r = run_python(_WITHOUT_ENTRY_POINT + """
    import json, jax, jax.numpy as jnp
    from jax._src import xla_bridge
    x = jax.jit(lambda x: x * 2)(1.)
    print(json.dumps({"platforms": [d.platform for d in jax.devices()], "value": x.item(),
                      "on": sorted(d.platform for d in x.devices()),
                      "add": jnp.add(1, 1).item()}))
    """, JAX_PLATFORMS="kiln", PJRT_NAMES_AND_LIBRARY_PATHS=f"kiln:{kiln.library_path()}")
    assert set(r["platforms"]) == {"kiln"}
    assert r["value"] == 2.0 and r["on"] == ["kiln"]
    assert r["add"] == 2


def test_env_var_route_alone_is_what_registers():
    """Control for the test above: with the entry point removed and no env var, there is no kiln."""
    r = run_python(_WITHOUT_ENTRY_POINT + """
    import json, jax
    try:
        jax.devices()
        print(json.dumps({"error": None}))
    except RuntimeError as e:
        print(json.dumps({"error": str(e)}))
    """, JAX_PLATFORMS="kiln")
    assert r["error"] is not None and "kiln" in r["error"], r


def test_env_var_wins_over_entry_point(tmp_path):
    """Both routes at once: the kiln entry point is installed and PJRT_NAMES_AND_LIBRARY_PATHS
    names kiln. jax runs the entry point first and then registers the env var's plugins, and a
    second registration of one name fails in jaxlib; kiln.initialize() therefore defers to the
    env var. Checked with a copy of the library: the copy must be the one loaded."""
    import shutil

    import kiln
    (tmp_path / "kiln").mkdir()
    copy = tmp_path / "kiln" / "libkiln_pjrt_copy.so"
    shutil.copy(kiln.library_path(), copy)
    # A manylinux wheel's plugin finds its bundled libraries at $ORIGIN/../kiln_pjrt.libs, the
    # development install's OpenBLAS at $ORIGIN/../scipy_openblas32/lib: the copy gets the same.
    site = os.path.dirname(os.path.dirname(kiln.library_path()))
    for sibling in ("kiln_pjrt.libs", "scipy_openblas32"):
        if os.path.isdir(os.path.join(site, sibling)):
            (tmp_path / sibling).symlink_to(os.path.join(site, sibling))
    r = run_python("""
    import json, jax
    x = jax.jit(lambda x: x * 2)(1.)
    maps = open("/proc/self/maps").read()
    print(json.dumps({"platforms": [d.platform for d in jax.devices()], "value": x.item(),
                      "maps": [l.split()[-1] for l in maps.splitlines() if "kiln" in l]}))
    """, JAX_PLATFORMS="kiln", PJRT_NAMES_AND_LIBRARY_PATHS=f"kiln:{copy}")
    assert set(r["platforms"]) == {"kiln"} and r["value"] == 2.0
    assert str(copy) in r["maps"], r["maps"]
    assert kiln.library_path() not in r["maps"], r["maps"]


# ------------------------------------------------------------------------------------------------
# In-process attributes (this process runs with JAX_PLATFORMS=kiln,cpu)
# ------------------------------------------------------------------------------------------------

def test_device_attributes(kiln_device):
    devs = jax.devices(KILN_PLATFORM)
    assert [d.id for d in devs] == list(range(len(devs)))
    d = devs[0]
    assert d.platform == "kiln"
    assert d.client.platform == "kiln"
    assert d.process_index == 0
    assert isinstance(d.device_kind, str) and d.device_kind.strip(), repr(d.device_kind)
    assert isinstance(str(d), str) and str(d).strip()
    assert isinstance(repr(d), str) and repr(d).strip()
    assert "kiln" in (str(d) + repr(d)).lower(), (str(d), repr(d))
    assert d in jax.local_devices(backend="kiln")
    mem = d.default_memory()
    assert mem in d.addressable_memories()
    assert isinstance(mem.kind, str) and mem.kind
    # memory_stats may be None (UNIMPLEMENTED is tolerated by jaxlib), but must not raise.
    stats = d.memory_stats()
    assert stats is None or isinstance(stats, dict)


def test_backend_attributes(kiln_device):
    from jax.extend.backend import get_backend
    b = get_backend("kiln")
    assert b.platform == "kiln"
    assert b.device_count() == len(jax.devices("kiln"))
    assert b.platform_version.startswith("PJRT C API\n"), repr(b.platform_version)
    assert b.platform_version[len("PJRT C API\n"):].strip(), "empty plugin PlatformVersion"
    cur = tuple(b.stablehlo_current_version)
    low = tuple(b.stablehlo_minimum_version)
    assert len(cur) == 3 and len(low) == 3
    # Kiln's fixtures (tests/fixtures) are VHLO 1.17.0, jaxlib 0.10.2's current version; Kiln must
    # advertise at least that so jax sends it the same thing (jax clamps higher values to 1.17.0).
    assert cur >= (1, 17, 0), cur
    assert low <= cur


def test_arrays_default_to_kiln(kiln_device):
    if SELFCHECK:
        pytest.skip("default device is CPU in self-check mode")
    x = jnp.arange(5.0)
    assert x.devices() == {kiln_device}
    np.testing.assert_array_equal(np.asarray(x * 2), np.arange(5.0, dtype=np.float32) * 2)


# Sandybridge: OpenBLAS's AVX kernels without FMA, which its detection picks on no CPU with FMA.
_OPENBLAS_PROBE = """
    import json, os, jax, kiln, numpy as np
    from kiln import _blas
    x = np.arange(64 * 64, dtype=np.float32).reshape(64, 64) / 4096
    y = np.asarray(jax.jit(lambda a: a @ a)(x))
    print(json.dumps({"core": _blas.core(kiln.library_path()),
                      "env": os.environ.get("OPENBLAS_CORETYPE"),
                      "err": float(np.max(np.abs(y - x.astype(np.float64) @ x)))}))
"""


@pytest.mark.skipif("fma" not in cpu_flags(), reason="OpenBLAS detects a CPU without FMA as Sandybridge")
def test_openblas_coretype_of_the_process_does_not_pick_kilns_kernels():
    # OPENBLAS_CORETYPE is set for the process's other OpenBLAS copies; Kiln's copy detects the CPU
    # (python/kiln/_blas.py), and the process's environment is left as it was.
    r = run_python(_OPENBLAS_PROBE, JAX_PLATFORMS="kiln", OPENBLAS_CORETYPE="Sandybridge")
    assert r["core"] not in (None, "Sandybridge"), r
    assert r["env"] == "Sandybridge", r
    assert r["err"] < 1e-4, r


def test_kiln_openblas_coretype_picks_kilns_kernels():
    r = run_python(_OPENBLAS_PROBE, JAX_PLATFORMS="kiln", OPENBLAS_CORETYPE="Haswell",
                   KILN_OPENBLAS_CORETYPE="Sandybridge")
    assert r["core"] == "Sandybridge", r
    assert r["env"] == "Haswell", r
    assert r["err"] < 1e-4, r
