"""XLA's dump options on Kiln (pjrt/dump.h): `compiler_options={"xla_dump_to": dir, ...}` writes
`module_NNNN.<name>.{before,after}_optimizations.txt` (MLIR text that jaxlib's parser reads) and,
with `xla_dump_hlo_as_proto`, `*.hlo.pb` (an xla.HloProto holding the HloModuleProto Kiln's HLO
writer makes) on a compile and on a persistent-cache hit (PJRT_Executable_DeserializeAndLoad with
the caller's options). The .hlo.pb is read by jaxlib's own HLO tooling (XlaComputation) and,
compiled back on Kiln as format "hlo" through pypjrt, gives the CPU backend's results (tolerances.py)
and the Kiln run's bits."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax import lax

from conftest import assert_close, get_kiln_device, run_both
from pjrt_client import run_to_numpy

pytestmark = pytest.mark.requires_kiln

NAME = re.compile(r"module_\d{4}\.(?P<name>[\w.]+)\.(?P<stage>before|after)_optimizations"
                  r"\.(?P<kind>txt|hlo\.pb)$")


def _files(directory):
    """{(stage, kind): name} of the dump files in `directory`; every file must be named as XLA's."""
    out = {}
    for name in sorted(os.listdir(directory)):
        m = NAME.match(name)
        assert m, f"unexpected dump file {name}"
        assert (m["stage"], m["kind"]) not in out, f"two {m['stage']} {m['kind']} files"
        out[(m["stage"], m["kind"])] = name
    return out


def _hlo_module(hlo_proto: bytes) -> bytes:
    """The hlo_module (field 1) of a serialized xla.HloProto."""
    assert hlo_proto[0] == 0x0A, "an HloProto starts with its hlo_module field"
    length, shift, i = 0, 0, 1
    while True:
        byte = hlo_proto[i]
        length |= (byte & 0x7F) << shift
        shift, i = shift + 7, i + 1
        if byte < 0x80:
            break
    assert i + length == len(hlo_proto)
    return hlo_proto[i:i + length]


def program(x, y):
    z = jnp.sum(x * y, axis=0)
    w = lax.fori_loop(0, 3, lambda i, c: c + jnp.tanh(x[i]), z)
    s = jnp.sort(w)
    return s, jnp.where(w > 0, w, -w) @ y.T, lax.cond(s[0] > 0, jnp.sin, jnp.cos, w)


def _args():
    rng = np.random.default_rng(7)
    return (rng.standard_normal((3, 4)).astype(np.float32),
            rng.standard_normal((3, 4)).astype(np.float32))


def test_dump_to_writes_text_by_default(tmp_path):
    x = jax.device_put(np.float32(1), get_kiln_device())
    jax.jit(lambda v: v + 1, compiler_options={"xla_dump_to": str(tmp_path / "d")})(x)
    files = _files(tmp_path / "d")  # the directory is created
    assert set(files) == {("before", "txt"), ("after", "txt")}, files
    text = (tmp_path / "d" / files[("after", "txt")]).read_text()
    assert "stablehlo.add" in text and "func.func" in text
    # The text is MLIR that jaxlib's parser reads and verifies.
    from jax._src.interpreters import mlir as jax_mlir
    from jax._src.lib.mlir import ir
    with jax_mlir.make_ir_context():
        assert ir.Module.parse(text).operation.verify()


def test_proto_only(tmp_path):
    x = jax.device_put(np.float32(1), get_kiln_device())
    options = {"xla_dump_to": str(tmp_path), "xla_dump_hlo_as_proto": True,
               "xla_dump_hlo_as_text": False, "xla_dump_hlo_pass_re": ".*"}  # the last: ignored
    jax.jit(lambda v: v * 3, compiler_options=options)(x)
    assert set(_files(tmp_path)) == {("before", "hlo.pb"), ("after", "hlo.pb")}


def test_hlo_proto_reads_in_jaxlib_and_runs_back_on_kiln(tmp_path):
    from jaxlib import _hlo

    args = _args()
    options = {"xla_dump_to": str(tmp_path), "xla_dump_hlo_as_proto": True,
               "xla_dump_hlo_as_text": True}
    k = get_kiln_device()
    lowered = jax.jit(program, compiler_options=options).lower(*jax.device_put(args, k))
    kiln_out = [np.asarray(o) for o in jax.tree.leaves(lowered.compile()(*jax.device_put(args, k)))]
    files = _files(tmp_path)
    assert set(files) == {(s, k) for s in ("before", "after") for k in ("txt", "hlo.pb")}, files
    assert all(re.search(r"\.jit_program\.", name) for name in files.values()), files
    _, cpu = run_both(program, *args)
    for stage in ("before", "after"):
        module = _hlo_module((tmp_path / files[(stage, "hlo.pb")]).read_bytes())
        text = _hlo.XlaComputation(module).as_hlo_text()  # XLA's HloModule::CreateFromProto
        assert text.startswith("HloModule jit_program"), text[:200]
        for opcode in ("while(", "sort(", "conditional(", "dot(", "reduce("):
            assert opcode in text, f"{stage}: no {opcode} in\n{text}"
        got = run_to_numpy(module, b"hlo", list(args), jax.tree.leaves(lowered.out_info))
        assert_close(got, jax.tree.leaves(cpu), kind="composite")  # tanh, sums, sin/cos
        assert_close(got, kiln_out, exact=True)


CACHE_SCRIPT = textwrap.dedent("""
    import json, sys, jax, numpy as np
    from jax import monitoring
    hits = []
    monitoring.register_event_listener(
        lambda event, **kw: hits.append(event) if event.endswith("cache_hits") else None)
    jax.config.update("jax_compilation_cache_dir", sys.argv[1])
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    x = jax.device_put(np.float32(2), jax.devices("kiln")[0])
    a = jax.jit(lambda v: v + 1, compiler_options={"xla_dump_to": sys.argv[2]})(x)
    before = len(hits)
    b = jax.jit(lambda v: v + 1, compiler_options={
        "xla_dump_to": sys.argv[3], "xla_dump_hlo_as_proto": True,
        "xla_dump_hlo_as_text": True})(x)
    print(json.dumps({"hits": [before, len(hits)], "values": [float(a), float(b)]}))
""")


def test_dump_on_a_persistent_cache_hit(tmp_path):
    dirs = [tmp_path / "cache", tmp_path / "one", tmp_path / "two"]
    env = dict(os.environ, JAX_PLATFORMS="kiln,cpu")
    out = subprocess.run([sys.executable, "-c", CACHE_SCRIPT, *map(str, dirs)], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["hits"] == [0, 1], result  # the second compile is a cache hit
    assert result["values"] == [3.0, 3.0]
    one, two = _files(dirs[1]), _files(dirs[2])
    assert set(one) == {("before", "txt"), ("after", "txt")}
    assert set(two) == {(s, k) for s in ("before", "after") for k in ("txt", "hlo.pb")}
    # The cache hit dumps the same program.
    assert ((dirs[1] / one[("after", "txt")]).read_text()
            == (dirs[2] / two[("after", "txt")]).read_text())
