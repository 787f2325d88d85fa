#!/usr/bin/env python3
"""Runs every harness of JAX's `test_harnesses` on Kiln and on JAX's CPU backend and compares them.

`jax._src.internal_test_util.test_harnesses` (shipped in the jax wheel) defines about four thousand
harnesses: one use of one primitive each (a callable, its argument descriptors, a dtype), covering
every lax primitive JAX lowers. This tool jits each harness on the CPU backend and on Kiln, with the
same arguments (drawn from a NumPy generator seeded by the harness's name) and compares the
results, leaf by leaf: same structure, dtypes and shapes, integers and booleans exact, floating
values within the tolerance of their dtype (TOLERANCES below; a few groups, named in
GROUP_TOLERANCES, are looser, each with its reason).

A harness counts when it runs on CPU. It is skipped when JAX declares it unimplemented on CPU (its
`jax_unimplemented` limitations), when it fails on CPU, or when its results cannot be compared
(SKIP_GROUPS, each with its reason). It fails when Kiln raises, differs, crashes or hangs.

The harnesses run in a worker process (JAX_PLATFORMS=kiln,cpu) that writes one JSON line per
harness; if the worker dies or a harness runs longer than --timeout, the parent records that
harness as a crash or a timeout and starts a new worker after it. The exit status is 1 when a
harness crashed or timed out, or, with --baseline, when a harness the baseline records as passing
no longer passes, or fewer than --min-rate of the harnesses run pass. The last line is
`harnesses: N passed, M failed, K skipped`.

  tools/conformance/harnesses.py --baseline tools/conformance/harnesses_baseline.json
  tools/conformance/harnesses.py --filter 'conv|fft' --markdown /tmp/h.md
  tools/conformance/harnesses.py --write-baseline tools/conformance/harnesses_baseline.json

Kiln must be installed, or named by PJRT_NAMES_AND_LIBRARY_PATHS=kiln:<path of libkiln_pjrt.so>
(the tool then declares Kiln's jax_plugins entry point itself, as jax_suite.py does).
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from jax_suite import (  # noqa: E402
    _declare_entry_point, _kiln_entry_point_declared, _version, cause_of)

# Relative and absolute tolerance per floating dtype name (complex: per component).
TOLERANCES = {
    "float4_e2m1fn": 0.25, "float8_e3m4": 0.125, "float8_e4m3": 0.125, "float8_e4m3b11fnuz": 0.125,
    "float8_e4m3fn": 0.125, "float8_e4m3fnuz": 0.125, "float8_e5m2": 0.25,
    "float8_e5m2fnuz": 0.25, "float8_e8m0fnu": 0.5,
    "bfloat16": 1e-2, "float16": 1e-3, "float32": 1e-5, "float64": 1e-12,
    "complex64": 1e-5, "complex128": 1e-12,
}

# Groups whose results are computed by different but equally valid algorithms on the two
# backends (LAPACK builds, summation orders of long reductions): looser, as JAX's own tests are.
GROUP_TOLERANCES = {
    "conv_general_dilated": {"float32": 1e-4, "complex64": 1e-4, "float64": 1e-10},
    "dot_general": {"float32": 1e-4, "complex64": 1e-4},
    # Random 200x200 matrices are ill-conditioned enough for single precision to differ ~1e-3
    # (AMD Zen), and by 0.042 in one of 40,000 elements on an Intel Xeon, where OpenBLAS runs
    # other kernels than jaxlib's LAPACK: elementwise agreement of f32 factors of such matrices
    # says little; tests/python/test_linalg.py checks the factors by reconstruction.
    "cholesky": {"float32": 5e-2, "complex64": 5e-2, "float64": 1e-10, "complex128": 1e-10},
    "lu": {"float32": 1e-4, "complex64": 1e-4, "float64": 1e-10, "complex128": 1e-10},
    "qr": {"float32": 1e-4, "complex64": 1e-4, "float64": 1e-10, "complex128": 1e-10},
    "svd": {"float32": 1e-4, "complex64": 1e-4, "float64": 1e-10, "complex128": 1e-10},
    # XLA:CPU solves float16/bfloat16 systems in those types, Kiln in f32 rounded once.
    "triangular_solve": {"float32": 1e-4, "complex64": 1e-4, "float64": 1e-10,
                         "complex128": 1e-10, "float16": 3e-2, "bfloat16": 1e-1},
    "linear_solve": {"float32": 1e-4, "float64": 1e-10},
    "tridiagonal_solve": {"float32": 1e-4, "float64": 1e-10},
    "fft": {"float32": 1e-4, "complex64": 1e-4, "float64": 1e-10, "complex128": 1e-10},
    "cumsum": {"float32": 1e-4, "bfloat16": 3e-2, "float16": 3e-3},
    "cumprod": {"float32": 1e-4, "bfloat16": 3e-2, "float16": 3e-3},
    # Sums of float16 windows in another order differ by one unit in the last place (2^-10).
    "reduce_window_add": {"float32": 1e-4, "float16": 2e-3},
    "erf_inv": {"float32": 1e-4},
    "igamma": {"float32": 1e-4, "float64": 1e-10},
    "igammac": {"float32": 1e-4, "float64": 1e-10},
    "random_gamma": {"float32": 1e-4, "float64": 1e-10},
    "eigh": {"float32": 1e-3, "complex64": 1e-3, "float64": 1e-10, "complex128": 1e-10},
}

# Groups whose outputs cannot be compared: none at present. (eigh's eigenvectors are unique only
# up to a phase per vector, which JAX's own harness test skips eigh for; _compare normalizes them.)
SKIP_GROUPS: dict[str, str] = {}


# ---------------------------------------------------------------------------------------------
# Worker: runs harnesses in this process, one JSON line each.


def _canonical_unstable_sort(leaves, axis: int):
    """Sorts every 1-D lane of the outputs of an unstable sort by all of them together, so that
    elements with equal keys, which an unstable sort may order either way, compare in one order."""
    import numpy as np
    arrays = [np.moveaxis(np.asarray(a), axis, -1) for a in leaves]
    lanes = arrays[0].reshape(-1, arrays[0].shape[-1]).shape[0]
    flat = [a.reshape(lanes, -1) for a in arrays]
    out = [np.empty_like(f) for f in flat]
    for i in range(lanes):
        order = np.lexsort([f[i] for f in reversed(flat)])
        for f, o in zip(flat, out):
            o[i] = f[i][order]
    return [np.moveaxis(o.reshape(a.shape), -1, axis) for o, a in zip(out, arrays)]


def _compare(group: str, cpu, kiln, params: dict | None = None, args=None) -> str:
    """'' when equal within tolerance, else what differs."""
    import jax
    import numpy as np

    def plain(x):
        if isinstance(x, jax.Array) and jax.dtypes.issubdtype(x.dtype, jax.dtypes.extended):
            x = jax.random.key_data(x)
        return np.asarray(x)

    cpu_leaves, cpu_tree = jax.tree.flatten(cpu)
    kiln_leaves, kiln_tree = jax.tree.flatten(kiln)
    if cpu_tree != kiln_tree:
        return f"result structure {kiln_tree} != CPU's {cpu_tree}"
    params = params or {}
    if group == "approx_top_k" and len(cpu_leaves) == 2 and args:
        # Equal values may be returned with either index: the indices must select the values.
        operand = plain(args[0]).astype(np.float64)
        values, indices = plain(kiln_leaves[0]).astype(np.float64), plain(kiln_leaves[1])
        picked = np.take_along_axis(operand, indices.astype(np.int64), axis=-1)
        if not np.array_equal(picked, values, equal_nan=True):
            return "result 1: the indices do not select the returned values"
        cpu_leaves, kiln_leaves = cpu_leaves[:1], kiln_leaves[:1]
    vectors = {"eigh": [0] if len(cpu_leaves) == 2 else [],  # (vectors, values)
               "eig": list(range(1, len(cpu_leaves)))}.get(group, [])  # (values, [left], [right])
    if vectors:
        # Eigenvectors (columns) are unique up to a unit factor each (a sign, a phase), and LAPACK
        # builds choose differently: scale every column so that its largest entry is real and
        # positive on both sides.
        def normalized(v):
            v = plain(v)
            if v.size == 0:
                return v
            big = np.take_along_axis(v, np.abs(v).argmax(axis=-2)[..., None, :], axis=-2)
            return (v * (np.conj(big) / np.maximum(np.abs(big), np.finfo(np.float64).tiny))
                    ).astype(v.dtype)
        cpu_leaves = [normalized(x) if i in vectors else x for i, x in enumerate(cpu_leaves)]
        kiln_leaves = [normalized(x) if i in vectors else x for i, x in enumerate(kiln_leaves)]
    if group == "sort" and params.get("is_stable") is False and len(cpu_leaves) > 1:
        axis = params.get("dimension", 0)
        cpu_leaves = _canonical_unstable_sort([plain(x) for x in cpu_leaves], axis)
        kiln_leaves = _canonical_unstable_sort([plain(x) for x in kiln_leaves], axis)
    for i, (c, k) in enumerate(zip(cpu_leaves, kiln_leaves)):
        c, k = plain(c), plain(k)
        where = f"result {i}" if len(cpu_leaves) > 1 else "result"
        if c.dtype != k.dtype or c.shape != k.shape:
            return f"{where}: {k.dtype}{list(k.shape)} != CPU's {c.dtype}{list(c.shape)}"
        tol = GROUP_TOLERANCES.get(group, {}).get(c.dtype.name, TOLERANCES.get(c.dtype.name))
        if tol is None:  # integers, booleans: exact
            if not np.array_equal(c, k):
                bad = int(np.sum(c != k))
                return f"{where} ({c.dtype}): {bad} of {c.size} elements differ"
            continue
        wide = np.complex128 if np.iscomplexobj(c) else np.float64
        cw, kw = c.astype(wide), k.astype(wide)
        close = np.isclose(kw, cw, rtol=tol, atol=tol, equal_nan=True)
        if not np.all(close):
            err = np.abs(kw - cw)
            err = np.where(np.isnan(err), np.inf, err)
            return (f"{where} ({c.dtype}): {int(np.sum(~close))} of {c.size} elements differ "
                    f"beyond {tol:g}, max |diff| {float(np.max(err)):.3g}")
    return ""


def _one_line(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}".strip()
    return text.splitlines()[0][:400] if text else type(e).__name__


def run_harness(h, seed_name: str) -> tuple[str, str]:
    """(status, detail) for one harness: pass, fail or skip."""
    import zlib

    import jax
    import numpy as np

    if h.group_name in SKIP_GROUPS:
        return "skip", SKIP_GROUPS[h.group_name]
    if not h.filter("cpu", include_jax_unimpl=False):
        return "skip", "JAX: unimplemented on cpu"
    rng = np.random.RandomState(zlib.adler32(seed_name.encode()))
    args = h.dyn_args_maker(rng)
    results = {}
    for platform in ("cpu", "kiln"):
        device = jax.devices(platform)[0]
        try:
            with jax.default_device(device):
                placed = jax.tree.map(
                    lambda x: jax.device_put(x, device) if isinstance(x, jax.Array) else x, args)
                out = jax.jit(h.dyn_fun)(*placed)
                out = jax.block_until_ready(out)
                results[platform] = jax.device_get(jax.tree.map(_to_host_safe, out))
        except Exception as e:  # noqa: BLE001 - every failure is reported
            if platform == "cpu":
                return "skip", "fails on CPU: " + _one_line(e)
            return "fail", _one_line(e)
    diff = _compare(h.group_name, results["cpu"], results["kiln"], h.params, args)
    return ("fail", diff) if diff else ("pass", "")


def _to_host_safe(x):
    import jax
    if isinstance(x, jax.Array) and jax.dtypes.issubdtype(x.dtype, jax.dtypes.extended):
        return jax.random.key_data(x)
    return x


def worker(start: int, pattern: str | None, out_path: str, shard: tuple[int, int]) -> int:
    import warnings

    import jax  # noqa: F401 - initializes the backends before the harnesses are defined
    from jax._src.internal_test_util import test_harnesses

    warnings.simplefilter("ignore")
    rx = re.compile(pattern) if pattern else None
    with open(out_path, "a", buffering=1) as out:
        # Harnesses defined from sets of dtypes come in an order that differs between processes
        # (numpy's scalar types hash by address): sorted by name, index i is the same harness
        # in every worker and after every restart.
        for i, h in enumerate(sorted(test_harnesses.all_harnesses, key=lambda h: h.fullname)):
            if i < start or i % shard[1] != shard[0] or (rx and not rx.search(h.fullname)):
                continue
            dtype = str(getattr(h.dtype, "__name__", h.dtype))
            out.write(json.dumps({"i": i, "started": h.fullname, "group": h.group_name,
                                  "dtype": dtype}) + "\n")
            out.flush()
            status, detail = run_harness(h, h.fullname)
            out.write(json.dumps({"i": i, "name": h.fullname, "group": h.group_name,
                                  "dtype": dtype, "status": status, "detail": detail}) + "\n")
            out.flush()
        out.write(json.dumps({"done": True}) + "\n")
    return 0


# ---------------------------------------------------------------------------------------------
# Parent: restarts the worker past a crash or a hang, writes the report.


def run_all(pattern: str | None, timeout: float, env: dict[str, str], jobs: int) -> list[dict]:
    """Every harness, in `jobs` workers at once (harness i in worker i % jobs)."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        parts = list(pool.map(lambda k: run_shard(pattern, timeout, env, (k, jobs)), range(jobs)))
    merged = {r["i"]: r for part in parts for r in part}
    return [merged[i] for i in sorted(merged)]


def run_shard(pattern: str | None, timeout: float, env: dict[str, str],
              shard: tuple[int, int]) -> list[dict]:
    results: dict[int, dict] = {}
    start = 0
    with tempfile.TemporaryDirectory() as tmp:
        out_path = os.path.join(tmp, "results.jsonl")
        while True:
            open(out_path, "w").close()
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--start", str(start),
                   "--out", out_path, "--shard", f"{shard[0]}/{shard[1]}"]
            cmd += ["--filter", pattern] if pattern else []
            proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, text=True)
            last_progress, last_size, started, done = time.time(), 0, None, False
            while True:
                code = proc.poll()
                size = os.path.getsize(out_path)
                if size != last_size:
                    last_size, last_progress = size, time.time()
                    started, done = _read(out_path, results)
                if code is not None:
                    started, done = _read(out_path, results)
                    break
                if started is not None and time.time() - last_progress > timeout:
                    proc.kill()
                    proc.wait()
                    break
                time.sleep(0.05)
            if done:
                break
            stderr = proc.stderr.read() if proc.stderr else ""
            if started is None:
                raise SystemExit(f"the harness worker failed before its first harness:\n"
                                 f"{stderr[-2000:]}")
            i, name = started["i"], started["started"]
            what = (f"timed out after {timeout:.0f} s" if proc.returncode in (None, -9)
                    and time.time() - last_progress > timeout
                    else f"crashed (exit status {proc.returncode}): "
                         f"{stderr.strip().splitlines()[-1][:300] if stderr.strip() else ''}")
            results[i] = {"i": i, "name": name, "group": started["group"], "dtype": started["dtype"],
                          "status": "fail", "detail": what, "crash": True}
            print(f"harnesses: {name} {what}; continuing after it", file=sys.stderr, flush=True)
            start = i + 1
    return [results[i] for i in sorted(results)]


def _read(path: str, results: dict[int, dict]) -> tuple[dict | None, bool]:
    """Folds the worker's lines into results; returns (harness started but not finished, done)."""
    started, done = None, False
    with open(path) as f:
        for line in f:
            if not line.endswith("\n"):
                break
            rec = json.loads(line)
            if rec.get("done"):
                done = True
            elif "started" in rec:
                started = rec
            else:
                results[rec["i"]] = rec
                started = None
    return started, done


def report(rows: list[dict], baseline: dict[str, str] | None) -> tuple[list[str], list[str]]:
    """(Markdown lines, regressions against the baseline)."""
    by_group: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for r in rows:
        by_group[r["group"]][r["status"]] += 1
    passed = sum(c["pass"] for c in by_group.values())
    failed = sum(c["fail"] for c in by_group.values())
    ran = passed + failed
    lines = ["# JAX's primitive harnesses on Kiln", "",
             f"{len(rows)} harnesses: {passed} pass, {failed} fail, "
             f"{sum(c['skip'] for c in by_group.values())} skipped; "
             f"{100.0 * passed / max(ran, 1):.2f}% of the {ran} that run on CPU pass on Kiln.", ""]
    fails = [r for r in rows if r["status"] == "fail"]
    if fails:
        lines += ["## Failures", "", "| harness | what |", "|---|---|"]
        lines += [f"| `{r['name']}` | {r['detail'].replace('|', '/')} |" for r in fails]
        lines.append("")
    skips = collections.Counter(cause_of(r["detail"]) for r in rows if r["status"] == "skip")
    if skips:
        lines += ["## Skips", ""] + [f"- {n} × {c}" for c, n in skips.most_common()] + [""]
    lines += ["## Per group", "", "| group | pass | fail | skip |", "|---|---|---|---|"]
    lines += [f"| {g} | {c['pass']} | {c['fail']} | {c['skip']} |"
              for g, c in sorted(by_group.items())]
    regressions = []
    if baseline is not None:
        now = {r["name"]: r["status"] for r in rows}
        regressions = [f"{name}: baseline pass, now {now.get(name, 'missing')}"
                       for name, status in sorted(baseline.items())
                       if status == "pass" and now.get(name) != "pass"]
    return lines, regressions


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--filter", default=None, help="regex over harness names")
    ap.add_argument("--timeout", type=float, default=300, help="seconds one harness may take")
    ap.add_argument("--baseline", default=None, help="fail on regressions against this JSON")
    ap.add_argument("--min-rate", type=float, default=99.0,
                    help="with --baseline: the least pass rate (%%) of the harnesses run")
    ap.add_argument("--write-baseline", default=None, help="write {harness: status} here")
    ap.add_argument("--markdown", default=None, help="write the report here")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes at once")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--shard", default="0/1", help=argparse.SUPPRESS)
    ap.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--out", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        k, n = (int(x) for x in args.shard.split("/"))
        return worker(args.start, args.filter, args.out, (k, n))

    env = dict(os.environ, JAX_PLATFORMS="kiln,cpu")
    env.setdefault("XLA_FLAGS", "")
    with tempfile.TemporaryDirectory() as tmp:
        if not _kiln_entry_point_declared():
            if "PJRT_NAMES_AND_LIBRARY_PATHS" not in os.environ:
                raise SystemExit("Kiln is neither installed nor named by "
                                 "PJRT_NAMES_AND_LIBRARY_PATHS=kiln:<path of libkiln_pjrt.so>")
            _declare_entry_point(os.path.join(tmp, "plugin"), env)
        t0 = time.time()
        rows = run_all(args.filter, args.timeout, env, max(1, args.jobs))
    baseline = None
    if args.baseline:
        with open(args.baseline) as f:
            baseline = json.load(f)["harnesses"]
        if args.filter:
            rx = re.compile(args.filter)
            baseline = {k: v for k, v in baseline.items() if rx.search(k)}
    lines, regressions = report(rows, baseline)
    lines.insert(2, f"`tools/conformance/harnesses.py"
                 + (f" --filter '{args.filter}'" if args.filter else "")
                 + f"`, jax {_version('jax')}, {time.time() - t0:.0f} s.")
    lines.insert(3, "")
    text = "\n".join(lines) + "\n"
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)
    if args.write_baseline:
        with open(args.write_baseline, "w") as f:
            json.dump({"jax": _version("jax"),
                       "harnesses": {r["name"]: r["status"] for r in rows}}, f, indent=0,
                      sort_keys=True)
            f.write("\n")
    fails = [r for r in rows if r["status"] == "fail"]
    for r in fails:
        print(f"FAIL {r['name']}: {r['detail']}")
    passed, failed = sum(r["status"] == "pass" for r in rows), len(fails)
    skipped = len(rows) - passed - failed
    status = 0
    if any(r.get("crash") for r in rows):
        status = 1
    for line in regressions:
        print(f"REGRESSION {line}")
        status = 1
    rate = 100.0 * passed / max(passed + failed, 1)
    if baseline is not None and rate < args.min_rate:
        print(f"pass rate {rate:.2f}% is below --min-rate {args.min_rate}%")
        status = 1
    print(f"harnesses: {passed} passed, {failed} failed, {skipped} skipped")
    return status


if __name__ == "__main__":
    sys.exit(main())
