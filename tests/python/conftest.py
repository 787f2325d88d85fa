"""Shared fixtures and helpers for Kiln's Python tests.

The tests are differential: each program is jitted once and run with its inputs on the Kiln device
and on JAX's built-in CPU backend, and the results are compared with the tolerances in
`tolerances.py`.

Environment:
  JAX_PLATFORMS           defaults to "kiln,cpu": Kiln is the default backend and CPU is available
                          as the reference.
  KILN_TESTS_SELFCHECK=1  harness self-check without Kiln: JAX_PLATFORMS=cpu with two host devices;
                          `kiln_device` is CPU device 1 and tests marked `requires_kiln` are skipped.
                          Every differential test must pass in this mode (it validates the tests,
                          not Kiln).
"""

from __future__ import annotations

import os
import sys

SELFCHECK = os.environ.get("KILN_TESTS_SELFCHECK", "") not in ("", "0")
if SELFCHECK:
    os.environ["JAX_PLATFORMS"] = "cpu"
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                               + " --xla_force_host_platform_device_count=2").strip()
else:
    os.environ.setdefault("JAX_PLATFORMS", "kiln,cpu")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import jax  # noqa: E402

from tolerances import tolerance  # noqa: E402,F401  (re-exported for tests)
import program_formats  # noqa: E402

# The platform name under test. In self-check mode the "Kiln" device is a second CPU device.
KILN_PLATFORM = "cpu" if SELFCHECK else "kiln"

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "requires_kiln: needs the real Kiln plugin (skipped in KILN_TESTS_SELFCHECK mode)")


def pytest_collection_modifyitems(config, items):
    if not SELFCHECK:
        return
    skip = pytest.mark.skip(reason="KILN_TESTS_SELFCHECK: needs the real Kiln plugin")
    for item in items:
        if "requires_kiln" in item.keywords:
            item.add_marker(skip)


def pytest_report_header(config):
    mode = "SELFCHECK (kiln_device = cpu:1)" if SELFCHECK else "kiln vs cpu"
    return f"kiln tests: {mode}; JAX_PLATFORMS={os.environ.get('JAX_PLATFORMS')}"


_devices: dict[str, object] = {}


def get_kiln_device():
    if "kiln" not in _devices:
        try:
            devs = jax.devices(KILN_PLATFORM)
        except Exception as e:  # a missing or broken plugin must fail loudly, never skip
            pytest.fail(f"Kiln backend unavailable: {type(e).__name__}: {e}", pytrace=False)
        _devices["kiln"] = devs[1] if SELFCHECK else devs[0]
    return _devices["kiln"]


def get_cpu_device():
    if "cpu" not in _devices:
        _devices["cpu"] = jax.devices("cpu")[0]
    return _devices["cpu"]


@pytest.fixture(scope="session")
def kiln_device():
    return get_kiln_device()


@pytest.fixture(scope="session")
def cpu_device():
    return get_cpu_device()


def _to_numpy_tree(tree):
    return jax.tree_util.tree_map(lambda a: np.asarray(a), tree)


def _assert_on(tree, device, what):
    for leaf in jax.tree_util.tree_leaves(tree):
        if isinstance(leaf, jax.Array):
            assert leaf.devices() == {device}, (
                f"{what} result is on {leaf.devices()}, expected {device}")


def run_on(f, args, device, jit_kwargs=None):
    """jit(f)(*args) with the args committed to `device`; returns the (device) result tree."""
    jitted = jax.jit(f, **(jit_kwargs or {}))
    placed = jax.device_put(args, device)
    with jax.default_device(device):
        out = jitted(*placed)
    out = jax.block_until_ready(out)
    if program_formats.selected() and device.platform == KILN_PLATFORM and not SELFCHECK:
        # KILN_PROGRAM_FORMAT: the same program in other encodings must give the same bits.
        program_formats.check_formats(f, args, jit_kwargs, out)
    return out


def run_both(f, *args, jit_kwargs=None):
    """Runs jit(f) on Kiln and on CPU with the same inputs; returns (kiln, cpu) numpy trees.

    Also checks that every array result of the Kiln run lives on the Kiln device, so a test cannot
    pass by silently running on CPU twice.
    """
    kiln, cpu = get_kiln_device(), get_cpu_device()
    out_k = run_on(f, args, kiln, jit_kwargs)
    _assert_on(out_k, kiln, "Kiln")
    out_c = run_on(f, args, cpu, jit_kwargs)
    _assert_on(out_c, cpu, "CPU")
    return _to_numpy_tree(out_k), _to_numpy_tree(out_c)


def _describe_mismatch(got: np.ndarray, want: np.ndarray, bad: np.ndarray, limit: int = 8) -> str:
    idx = np.argwhere(bad)[:limit]
    lines = [f"{int(bad.sum())} of {bad.size} elements differ; first:"]
    for i in idx:
        t = tuple(int(v) for v in i)
        lines.append(f"  at {t}: kiln={got[t]!r} cpu={want[t]!r}")
    return "\n".join(lines)


def assert_array_close(got, want, rtol=None, atol=None, *, kind="arith", path="", exact=None):
    """Compares one array: dtype and shape equal; ints/bools exact; floats within tolerance.

    NaN must be matched by NaN, infinities by the same infinity. If rtol/atol are None, they come
    from tolerances.tolerance(dtype, kind).
    """
    got = np.asarray(got)
    want = np.asarray(want)
    where = f" at {path}" if path else ""
    assert got.dtype == want.dtype, f"dtype{where}: kiln {got.dtype} vs cpu {want.dtype}"
    assert got.shape == want.shape, f"shape{where}: kiln {got.shape} vs cpu {want.shape}"
    is_inexact = jax.dtypes.issubdtype(got.dtype, np.inexact)  # incl. bfloat16 (numpy kind 'V')
    if not is_inexact:
        bad = got != want
        if bad.any():
            pytest.fail(f"exact mismatch{where} ({got.dtype}{list(got.shape)}):\n"
                        + _describe_mismatch(got, want, bad), pytrace=False)
        return
    if exact:
        # Bit-for-bit up to NaN payloads: equal values, same sign of zero, NaN where NaN.
        # (Compared in float64/complex128, which represents every narrower value exactly.)
        wide = np.complex128 if got.dtype.kind == "c" else np.float64
        gw, ww = got.astype(wide), want.astype(wide)
        parts = [(gw.real, ww.real), (gw.imag, ww.imag)] if got.dtype.kind == "c" else [(gw, ww)]
        bad = np.zeros(got.shape, bool)
        with np.errstate(invalid="ignore"):
            for g, w in parts:
                both_nan = np.isnan(g) & np.isnan(w)
                bad |= ~both_nan & ((g != w) | (np.signbit(g) != np.signbit(w)))
        if bad.any():
            pytest.fail(f"exact mismatch{where} ({got.dtype}{list(got.shape)}):\n"
                        + _describe_mismatch(got, want, bad), pytrace=False)
        return
    if rtol is None or atol is None:
        r, a = tolerance(got.dtype, kind)
        rtol = r if rtol is None else rtol
        atol = a if atol is None else atol
    # XLA:CPU flushes subnormal results to zero; Kiln need not. Differences below the smallest
    # normal number are not reported (see tolerances.py).
    atol = max(atol, float(jax.dtypes.finfo(got.dtype).tiny))
    g = got.astype(np.complex128 if got.dtype.kind == "c" else np.float64)
    w = want.astype(g.dtype)
    with np.errstate(invalid="ignore"):
        nan_g, nan_w = np.isnan(g), np.isnan(w)
        inf_mismatch = (np.isinf(g) | np.isinf(w)) & ~(g == w) & ~nan_g & ~nan_w
        close = np.abs(g - w) <= atol + rtol * np.abs(w)
        bad = (nan_g != nan_w) | inf_mismatch | (~close & ~nan_g & ~nan_w & ~np.isinf(w))
    if bad.any():
        pytest.fail(f"mismatch{where} ({got.dtype}{list(got.shape)}, rtol={rtol}, atol={atol}):\n"
                    + _describe_mismatch(got, want, bad), pytrace=False)


def assert_close(kiln, cpu, rtol=None, atol=None, *, kind="arith", exact=None):
    """assert_array_close over two pytrees with identical structure."""
    paths_k, tree_k = jax.tree_util.tree_flatten_with_path(kiln)
    paths_c, tree_c = jax.tree_util.tree_flatten_with_path(cpu)
    assert tree_k == tree_c, f"tree structure: kiln {tree_k} vs cpu {tree_c}"
    for (p, a), (_, b) in zip(paths_k, paths_c):
        assert_array_close(a, b, rtol, atol, kind=kind, path=jax.tree_util.keystr(p), exact=exact)


def check_both(f, *args, rtol=None, atol=None, kind="arith", exact=None, jit_kwargs=None):
    """run_both + assert_close; returns (kiln, cpu)."""
    k, c = run_both(f, *args, jit_kwargs=jit_kwargs)
    assert_close(k, c, rtol, atol, kind=kind, exact=exact)
    return k, c
