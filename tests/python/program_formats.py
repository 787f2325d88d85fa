"""Other encodings of the suite's programs, run through a second PJRT client (pypjrt).

JAX hands Kiln every program as a StableHLO portable artifact (MLIR bytecode). PJRT clients may
send the same program in other encodings; with `KILN_PROGRAM_FORMAT=<name>[,<name>...]` every
`conftest.run_on` on the Kiln device also

  1. lowers the program (`jax.jit(f, **jit_kwargs).lower(*args)`),
  2. encodes it with the format's function below (lowered -> (program bytes, PJRT format name)),
  3. compiles and runs it with pypjrt on the same Kiln plugin, with the same inputs,
  4. asserts that every output equals the bytecode run's output bit for bit.

FORMATS is the registry. "text" is MLIR text as `Lowered.as_text()` prints it (format "mlir").
An "hlo" entry is added when tests/python/program_formats_hlo.py exists and defines
`hlo_program(lowered) -> (bytes, b"hlo")`. "written" is the artifact JAX sends printed back as MLIR
text by Kiln's own writer (program_formats_written.py); "hlo_written" the same artifact written
as an HloModuleProto by Kiln's HLO writer and compiled as "hlo" (program_formats_hlo_written.py).

Programs that this path cannot reproduce faithfully are skipped by it (never failed): programs
with effects (tokens JAX threads through extra arguments), multi-device programs, and (for text)
programs with CHLO ops, which JAX's bytecode path decomposes before Kiln sees them. Where jaxlib's
serializer rewrote the program (StableHLO's complex-math expansion), the text of the artifact JAX
sent must give the same bits and `as_text()` must agree within the suite's tolerance.
"""
from __future__ import annotations

import os
import re
from typing import Any, Callable

import numpy as np

import jax

from pjrt_client import run_program

ProgramFn = Callable[[Any], "tuple[bytes, bytes]"]


class NotEncodable(Exception):
    """Raised by a format's function for a program its encoding refuses by name (for "written":
    what Kiln's writer answers UNIMPLEMENTED); the program is skipped in that format, as the
    multi-device ones are, and counted in REFUSED."""


REFUSED: dict[str, int] = {}


def text_program(lowered) -> tuple[bytes, bytes]:
    """MLIR text, pretty form, as JAX prints it (what `jax.jit(f).lower(x).as_text()` gives)."""
    return lowered.as_text().encode(), b"mlir"


FORMATS: dict[str, ProgramFn] = {"text": text_program}

try:  # another engineer's HLO encoding, when present
    from program_formats_hlo import hlo_program  # type: ignore[import-not-found]

    FORMATS["hlo"] = hlo_program
except ImportError:
    pass

from program_formats_written import written_program  # noqa: E402,I001  (Kiln's own MLIR writer)

FORMATS["written"] = written_program

from program_formats_hlo_written import hlo_written_program  # noqa: E402,I001  (Kiln's HLO writer)

FORMATS["hlo_written"] = hlo_written_program


def selected() -> list[str]:
    """The formats named by KILN_PROGRAM_FORMAT (empty: the extra runs are off)."""
    names = [n.strip() for n in os.environ.get("KILN_PROGRAM_FORMAT", "").split(",") if n.strip()]
    unknown = [n for n in names if n not in FORMATS]
    if unknown:
        raise ValueError(f"KILN_PROGRAM_FORMAT names unknown format(s) {unknown}; "
                         f"known: {sorted(FORMATS)}")
    return names


_CHLO = re.compile(r"\bchlo\.[a-z_]+[ (]")


def _host(x) -> np.ndarray:
    """A leaf as numpy; typed PRNG keys as their key data (what the lowered program takes)."""
    if jax.dtypes.issubdtype(getattr(x, "dtype", np.float32), jax.dtypes.prng_key):
        x = jax.random.key_data(x)
    return np.asarray(x)


def _dynamic_args(args: tuple, jit_kwargs: dict) -> tuple:
    static = jit_kwargs.get("static_argnums", ())
    static = (static,) if isinstance(static, int) else tuple(static)
    static = {i % len(args) for i in static} if args else set()
    return tuple(a for i, a in enumerate(args) if i not in static)


def check_formats(f, args: tuple, jit_kwargs: dict | None, bytecode_out,
                  names: list[str] | None = None) -> None:
    """Runs f's program in every selected format (or `names`); asserts bit-equal outputs to
    `bytecode_out`, the pytree JAX's own (bytecode) run on Kiln returned."""
    names = selected() if names is None else names
    if not names:
        return
    jit_kwargs = jit_kwargs or {}
    lowered = jax.jit(f, **jit_kwargs).lower(*args)
    compile_args = lowered._lowering.compile_args  # noqa: SLF001
    if compile_args.get("ordered_effects") or compile_args.get("unordered_effects"):
        return
    if len(compile_args.get("device_assignment") or ()) > 1:
        return
    leaves = jax.tree_util.tree_leaves(_dynamic_args(tuple(args), jit_kwargs))
    kept = compile_args.get("kept_var_idx")
    inputs = [_host(jax.device_put(x)) for i, x in enumerate(leaves)
              if kept is None or i in kept]
    want = [_host(x) for x in jax.tree_util.tree_leaves(bytecode_out)]
    for name in names:
        try:
            code, fmt = FORMATS[name](lowered)
        except NotEncodable:
            REFUSED[name] = REFUSED.get(name, 0) + 1
            continue
        if name == "text" and _CHLO.search(code.decode()):
            # JAX prints CHLO ops (chlo.erf, chlo.top_k, ...) that its bytecode path decomposes
            # into StableHLO before Kiln sees them; Kiln's text reader reads them but Kiln does
            # not compile CHLO, so these programs are not comparable.
            continue
        outs = run_program(code, fmt, inputs)
        assert len(outs) == len(want), (
            f"format {name}: {len(outs)} outputs, the bytecode run gave {len(want)}")
        got = [bytes(buf.to_host()) if w.nbytes else b"" for buf, w in zip(outs, want)]
        for i, (raw, w) in enumerate(zip(got, want)):
            assert len(raw) == w.nbytes, (
                f"format {name}: output {i} has {len(raw)} bytes, the bytecode run {w.nbytes}")
        if name == "text" and any(raw != w.tobytes() for raw, w in zip(got, want)):
            _explain_text_difference(lowered, inputs, got, want)
            continue
        for i, (raw, w) in enumerate(zip(got, want)):
            assert raw == w.tobytes(), (
                f"format {name}: output {i} differs from the bytecode run "
                f"({w.dtype}{list(w.shape)})")


def _explain_text_difference(lowered, inputs, got: list[bytes], want: list[np.ndarray]) -> None:
    """`Lowered.as_text()` is the program before jaxlib serializes it for Kiln, and the
    serializer rewrites some programs (e.g. StableHLO's complex-math expansion of sqrt/log1p on
    complex values): then the text is a different program. The artifact JAX sent, printed as text
    by jaxlib, is the same program and must give the same bits; the as_text() program must agree
    within the suite's tolerance."""
    from jax._src import xla_bridge
    from jax._src.interpreters import mlir as jax_mlir
    from jax._src.lib import _jax
    from jaxlib.mlir.dialects import stablehlo

    from conftest import assert_array_close

    version = xla_bridge.backend_stablehlo_version("kiln") or (1, 17, 0)
    artifact = _jax.mlir.serialize_portable_artifact(
        lowered.as_text(debug_info=True), ".".join(str(v) for v in version), True)
    with jax_mlir.make_ir_context() as ctx:
        text = stablehlo.deserialize_portable_artifact(ctx, artifact).operation.get_asm(
            enable_debug_info=True)
    same = [bytes(b.to_host()) if w.nbytes else b""
            for b, w in zip(run_program(text.encode(), b"mlir", inputs), want)]
    for i, (raw, w) in enumerate(zip(same, want)):
        assert raw == w.tobytes(), (
            f"format text: output {i} of the artifact's own text differs from the bytecode run "
            f"({w.dtype}{list(w.shape)})")
    for i, (raw, w) in enumerate(zip(got, want)):
        g = np.frombuffer(raw, w.dtype).reshape(w.shape)
        assert_array_close(g, w, kind="composite", path=f"as_text() output {i}")
