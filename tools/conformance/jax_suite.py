#!/usr/bin/env python3
"""Runs files of JAX's own test suite on Kiln and on JAX's CPU backend and compares them.

JAX's tests are not in its wheel or sdist: point --jax-src at a checkout of jax-ml/jax at the tag
of the installed jax (e.g. `git clone --depth 1 --branch jax-v0.10.2 https://github.com/jax-ml/jax`).
Never commit it. The interpreter running this script needs jax, jaxlib, pytest, absl-py and
hypothesis, and Kiln either installed or named by PJRT_NAMES_AND_LIBRARY_PATHS. In the second case
the tool declares Kiln's `jax_plugins` entry point itself (a generated `*.dist-info` on PYTHONPATH,
beside this checkout's `python/`), so JAX calls `kiln.initialize()` exactly as for an installed
wheel: without it, the LAPACK lowerings, buffer donation and host callbacks that Kiln registers
there would be missing and their tests would fail for that reason alone.

Each file runs twice in fresh pytest processes, each with a timeout (the two at once with
--jobs 2):
  * Kiln:  JAX_PLATFORMS=kiln,cpu  (Kiln is the default backend; tests that ask for the CPU device
           find it). JAX's test utilities decide what to run and skip, and which tolerances apply,
           from the "device under test"; on an unknown platform they skip hundreds of tests meant
           for every backend. A pytest plugin this tool writes sets `jax_test_dut=cpu` in the Kiln
           run, so the tests' device checks treat Kiln as the CPU backend it stands in for (the
           programs still run on Kiln, the default backend). --no-dut turns that off.
  * CPU:   JAX_PLATFORMS=cpu.
A test counts when it passes on CPU. The rate is Kiln's passes over CPU's passes; the report lists
Kiln's skips and failures among those apart, and groups the failures by the first line of their
error. A pytest run that crashes or times out is reported, and makes the exit status 1. The last
line is `jax-suite: N passed, M failed, K skipped` (over the tests CPU passes).

  tools/conformance/jax_suite.py --jax-src ~/jax --files lax_test.py,fft_test.py \
      --markdown docs/conformance-run.md
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

DEFAULT_FILES = ["lax_test.py", "lax_numpy_test.py", "lax_control_flow_test.py", "random_test.py",
                 "lax_vmap_test.py", "lax_autodiff_test.py", "api_test.py", "fft_test.py",
                 "linalg_test.py"]


REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Loaded into the Kiln run with `-p`: the device under test is the CPU backend Kiln replaces.
# Importing test_util this early binds its capture_stdout/capture_stderr to the streams of
# before pytest's capture (it dup2()s onto their file descriptors), so they are bound again to the
# streams each test runs with, as they would be had a test module imported test_util first.
_DUT_PLUGIN = """
def pytest_configure(config):
    import jax
    from jax._src import test_util  # defines the option
    jax.config.update("jax_test_dut", "cpu")


def pytest_runtest_setup(item):
    import functools
    import sys
    from jax._src import test_util
    test_util.capture_stdout = functools.partial(test_util._capture_output, sys.stdout)
    test_util.capture_stderr = functools.partial(test_util._capture_output, sys.stderr)
"""


def _kiln_entry_point_declared() -> bool:
    from importlib.metadata import entry_points
    return any(ep.name == "kiln" for ep in entry_points(group="jax_plugins"))


def _declare_entry_point(tmp: str, env: dict[str, str]) -> None:
    """Makes `kiln` importable and declared as a jax_plugins entry point in the child's env."""
    info = os.path.join(tmp, "kiln_pjrt_suite-0.0.dist-info")
    os.makedirs(info)
    with open(os.path.join(info, "METADATA"), "w") as f:
        f.write("Metadata-Version: 2.1\nName: kiln-pjrt-suite\nVersion: 0.0\n")
    with open(os.path.join(info, "entry_points.txt"), "w") as f:
        f.write("[jax_plugins]\nkiln = kiln\n")
    paths = [tmp, os.path.join(REPO, "python"), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)


def run_pytest(jax_src: str, test_file: str, platforms: str, extra: list[str], timeout: float,
               cases: int, dut: bool) -> tuple[dict[str, tuple[str, str]], float, str]:
    """Returns ({test id: (outcome, first error line)}, seconds, note)."""
    with tempfile.TemporaryDirectory() as tmp:
        xml_path = os.path.join(tmp, "junit.xml")
        env = dict(os.environ, JAX_PLATFORMS=platforms)
        if cases > 0:
            env["JAX_NUM_GENERATED_CASES"] = str(cases)
        plugin: list[str] = []
        if platforms.startswith("kiln"):
            if not _kiln_entry_point_declared():
                if "PJRT_NAMES_AND_LIBRARY_PATHS" not in os.environ:
                    raise SystemExit("Kiln is neither installed nor named by "
                                     "PJRT_NAMES_AND_LIBRARY_PATHS=kiln:<path of libkiln_pjrt.so>")
                _declare_entry_point(os.path.join(tmp, "plugin"), env)
            if dut:
                with open(os.path.join(tmp, "kiln_suite_dut.py"), "w") as f:
                    f.write(_DUT_PLUGIN)
                env["PYTHONPATH"] = os.pathsep.join(
                    p for p in (tmp, env.get("PYTHONPATH", "")) if p)
                plugin = ["-p", "kiln_suite_dut"]
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin,
               "--tb=line", f"--junitxml={xml_path}", os.path.join("tests", test_file), *extra]
        start = time.time()
        note = ""
        try:
            proc = subprocess.run(cmd, cwd=jax_src, env=env, capture_output=True, text=True,
                                  timeout=timeout)
            if proc.returncode not in (0, 1):
                note = (f"{platforms}: pytest exited with {proc.returncode}: "
                        f"{(proc.stdout + proc.stderr).strip()[-300:]}")
        except subprocess.TimeoutExpired:
            note = f"{platforms}: timed out after {timeout:.0f} s"
        seconds = time.time() - start
        results: dict[str, tuple[str, str]] = {}
        if os.path.exists(xml_path):
            for case in ET.parse(xml_path).getroot().iter("testcase"):
                name = f"{case.get('classname')}::{case.get('name')}"
                outcome, message = "passed", ""
                for tag in ("failure", "error"):
                    el = case.find(tag)
                    if el is not None:
                        outcome = "failed"
                        text = (el.get("message") or el.text or "").strip()
                        message = text.splitlines()[0] if text else tag
                skipped = case.find("skipped")
                if skipped is not None:
                    outcome = "skipped"
                    message = (skipped.get("message") or "skipped").strip().splitlines()[0]
                results[name] = (outcome, message)
        return results, seconds, note


def cause_of(message: str) -> str:
    """A failure's group: its error line without numbers, shapes and source positions."""
    m = re.sub(r"\bat [^ ]+:\d+:\d+", "at <loc>", message)
    m = re.sub(r"0x[0-9a-f]+|\d+", "N", m)
    return m[:160]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jax-src", required=True, help="checkout of jax-ml/jax at the jax tag")
    ap.add_argument("--files", default=",".join(DEFAULT_FILES),
                    help="comma-separated test files under tests/")
    ap.add_argument("-k", default=None, help="pytest -k expression")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds per pytest run")
    ap.add_argument("--cases", type=int, default=3,
                    help="JAX_NUM_GENERATED_CASES (0: JAX's default of 10)")
    ap.add_argument("--jobs", type=int, default=1, choices=(1, 2),
                    help="2: run a file's Kiln and CPU passes at the same time")
    ap.add_argument("--no-dut", action="store_true",
                    help="leave jax_test_dut unset in the Kiln run")
    ap.add_argument("--markdown", default=None, help="also write the report to this file")
    ap.add_argument("--failures", type=int, default=12, help="failure causes listed per file")
    args = ap.parse_args()
    extra = ["-k", args.k] if args.k else []

    cases = f"JAX_NUM_GENERATED_CASES={args.cases}" if args.cases > 0 else "JAX's default cases"
    lines = ["# JAX's test suite on Kiln", "",
             f"`tools/conformance/jax_suite.py --files {args.files}"
             + (f" -k '{args.k}'" if args.k else "") + (" --no-dut" if args.no_dut else "")
             + "`, jax " + _version("jax") + f", {cases}. Kiln: `JAX_PLATFORMS=kiln,cpu`"
             + ("" if args.no_dut else " with `jax_test_dut=cpu`") + "; CPU: "
             "`JAX_PLATFORMS=cpu`. The rate is Kiln's passes over CPU's passes.", "",
             "| file | CPU passes | Kiln passes | Kiln skips | Kiln failures | rate | time Kiln / CPU |",
             "|---|---|---|---|---|---|---|"]
    details: list[str] = []
    total = {"cpu": 0, "passed": 0, "failed": 0, "skipped": 0}
    crashed = False
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs)
    for test_file in [f.strip() for f in args.files.split(",") if f.strip()]:
        run_k = pool.submit(run_pytest, args.jax_src, test_file, "kiln,cpu", extra, args.timeout,
                            args.cases, not args.no_dut)
        run_c = pool.submit(run_pytest, args.jax_src, test_file, "cpu", extra, args.timeout,
                            args.cases, False)
        (kiln, tk, note_k), (cpu, tc, note_c) = run_k.result(), run_c.result()
        cpu_pass = {t for t, (o, _) in cpu.items() if o == "passed"}
        kiln_pass = {t for t in cpu_pass if kiln.get(t, ("missing", ""))[0] == "passed"}
        kiln_skip = {t for t in cpu_pass if kiln.get(t, ("missing", ""))[0] == "skipped"}
        failed = {t: kiln.get(t, ("missing", "no result (crash or timeout)"))[1]
                  for t in cpu_pass - kiln_pass - kiln_skip}
        total["cpu"] += len(cpu_pass)
        total["passed"] += len(kiln_pass)
        total["failed"] += len(failed)
        total["skipped"] += len(kiln_skip)
        rate = 100.0 * len(kiln_pass) / len(cpu_pass) if cpu_pass else 0.0
        lines.append(f"| {test_file} | {len(cpu_pass)} | {len(kiln_pass)} | {len(kiln_skip)} | "
                     f"{len(failed)} | {rate:.1f}% | {tk:.0f} s / {tc:.0f} s |")
        for note in (note_k, note_c):
            if note:
                crashed = True
                details.append(f"- {test_file}: {note}")
        causes = collections.Counter(cause_of(m) for m in failed.values())
        if causes:
            details.append(f"\n### {test_file}: failure causes\n")
            for cause, count in causes.most_common(args.failures):
                tests = sorted(t.split("::")[-1] for t, m in failed.items() if cause_of(m) == cause)
                shown = ", ".join(f"`{t}`" for t in tests[:3]) + (" ..." if len(tests) > 3 else "")
                details.append(f"- {count} × `{cause}` ({shown})")
        skip_causes = collections.Counter(cause_of(kiln[t][1] or "skipped") for t in kiln_skip)
        if skip_causes:
            details.append(f"\n### {test_file}: Kiln's skips of CPU passes\n")
            for cause, count in skip_causes.most_common(args.failures):
                details.append(f"- {count} × `{cause}`")
        print(lines[-1], flush=True)
    pool.shutdown()
    rate = 100.0 * total["passed"] / total["cpu"] if total["cpu"] else 0.0
    lines.append(f"| **all** | {total['cpu']} | {total['passed']} | {total['skipped']} | "
                 f"{total['failed']} | {rate:.2f}% | |")
    report = "\n".join(lines + [""] + details) + "\n"
    print(report)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(report)
    print(f"jax-suite: {total['passed']} passed, {total['failed']} failed, "
          f"{total['skipped']} skipped")
    return 1 if crashed else 0


def _version(dist: str) -> str:
    try:
        from importlib.metadata import version
        return version(dist)
    except Exception:  # noqa: BLE001
        return "?"


if __name__ == "__main__":
    sys.exit(main())
