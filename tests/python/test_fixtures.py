"""The fixtures in tests/fixtures: internally consistent, up to date with their generator, and
(with Kiln) each program's expected outputs are reproduced by Kiln within the manifest tolerance.

The execution check goes through jaxlib: the fixture artifact is deserialized to StableHLO and
compiled with jaxlib's kiln client (which serializes it again for Kiln, at Kiln's advertised
version) together with the fixture's compile options. Feeding the raw .mlir.bc bytes straight to
PJRT_Client_Compile is the C++ tests' job.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import jax
from jax._src.interpreters import mlir as jax_mlir
from jax._src.lib import xla_client as xc
from jaxlib.mlir.dialects import stablehlo

from conftest import REPO_ROOT, assert_array_close, get_kiln_device

FIXTURES = Path(REPO_ROOT) / "tests" / "fixtures"
MANIFESTS = sorted(FIXTURES.glob("*.json"))
STEMS = [p.stem for p in MANIFESTS]
EXPECTED_STEMS = {"add_i32", "mul_f32", "mlp_value_and_grad", "mlp_sgd_step", "while_loop", "cond",
                  "fori_loop_f64", "sort_f32", "random_normal", "gather_scatter", "reduce_ops",
                  "dot_batched", "elementwise_f32", "fft", "scan_stacked"}


def load(stem: str) -> dict:
    return json.loads((FIXTURES / f"{stem}.json").read_text())


def read_arrays(stem: str, which: str) -> list[np.ndarray]:
    m = load(stem)
    blob = (FIXTURES / m["files"][which]).read_bytes()
    arrays = []
    for e in m[which]:
        dt = jax.numpy.dtype(e["dtype"]).newbyteorder("<")
        a = np.frombuffer(blob, dt, count=int(np.prod(e["shape"], dtype=np.int64)), offset=e["offset"])
        arrays.append(a.reshape(e["shape"]).astype(dt.newbyteorder("=")))
    return arrays


def test_all_programs_present():
    assert set(STEMS) == EXPECTED_STEMS


@pytest.mark.parametrize("stem", STEMS)
def test_fixture_files_consistent(stem):
    m = load(stem)
    for f in m["files"].values():
        assert (FIXTURES / f).is_file(), f
    art = (FIXTURES / m["files"]["program"]).read_bytes()
    assert art[:4] == b"ML\xefR"
    assert art[5:5 + len(m["producer"])] == m["producer"].encode() == b"StableHLO_v1.17.0"
    opts = xc.CompileOptions.ParseFromString((FIXTURES / m["files"]["compile_options"]).read_bytes())
    assert opts.num_replicas == 1 and opts.num_partitions == 1
    npz = np.load(FIXTURES / m["files"]["npz"])
    for which, prefix in (("inputs", "in"), ("outputs", "out")):
        entries = m[which]
        size = (FIXTURES / m["files"][which]).stat().st_size
        assert sum(e["nbytes"] for e in entries) == size
        offset = 0
        for i, (e, a) in enumerate(zip(entries, read_arrays(stem, which))):
            assert e["offset"] == offset
            offset += e["nbytes"]
            ref = npz[f"{prefix}{i}"]
            assert ref.dtype == a.dtype and list(ref.shape) == e["shape"]
            assert ref.tobytes() == a.tobytes(), f"{stem} {which}[{i}]: .npz and .bin differ"
        assert len(npz.files) == len(m["inputs"]) + len(m["outputs"])


def test_generator_reproduces_committed_fixtures(tmp_path):
    stems = ["add_i32", "cond", "sort_f32"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_", "XLA_", "PJRT_"))}
    proc = subprocess.run([sys.executable, str(FIXTURES / "generate_fixtures.py"), "--out",
                           str(tmp_path), "--only", *stems], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    for stem in stems:
        for f in load(stem)["files"].values():
            assert (tmp_path / f).read_bytes() == (FIXTURES / f).read_bytes(), f"{f} is stale"


def _compile_fixture(stem: str):
    m = load(stem)
    art = (FIXTURES / m["files"]["program"]).read_bytes()
    with jax_mlir.make_ir_context() as ctx:
        module = jax_mlir.module_to_bytecode(stablehlo.deserialize_portable_artifact(ctx, art))
    options = xc.CompileOptions.ParseFromString(
        (FIXTURES / m["files"]["compile_options"]).read_bytes())
    device = get_kiln_device()
    return device.client.compile_and_load(module, xc.DeviceList((device,)), options)


@pytest.mark.requires_kiln
@pytest.mark.parametrize("stem", [s for s in STEMS if not load(s)["expect_compile_error"]])
def test_kiln_reproduces_expected_outputs(stem):
    m = load(stem)
    device = get_kiln_device()
    exe = _compile_fixture(stem)
    with jax.enable_x64(m["x64"]):
        args = [jax.device_put(a, device) for a in read_arrays(stem, "inputs")]
        outs = exe.execute_sharded(args).disassemble_into_single_device_arrays()
        got = [np.asarray(o[0]) for o in outs]
    want = read_arrays(stem, "outputs")
    assert len(got) == len(want)
    tol = m["tolerance"]
    for e, g, w in zip(m["outputs"], got, want):
        assert_array_close(g, w, tol["rtol"], tol["atol"], path=f"{stem}:{e['name']}")


@pytest.mark.requires_kiln
@pytest.mark.parametrize("stem", [s for s in STEMS if load(s)["expect_compile_error"]])
def test_kiln_rejects_unsupported_fixture(stem):
    err = load(stem)["expect_compile_error"]
    with pytest.raises(jax.errors.JaxRuntimeError) as info:
        _compile_fixture(stem)
    msg = str(info.value)
    assert msg.startswith("UNIMPLEMENTED") and err["op"] in msg, msg
