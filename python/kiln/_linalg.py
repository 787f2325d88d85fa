"""Linear algebra on Kiln: JAX's own CPU lowering rules, registered for platform "kiln".

JAX lowers eigh, svd, LU, QR and friends to LAPACK custom calls only for the platforms it names;
for any other platform it has no rule (eigh, svd) or falls back to paths meant for TPUs. Kiln
implements the CPU rules' custom-call targets (`lapack_*{potrf,getrf,geqrf,orgqr/ungqr,syevd/heevd,
gesdd,trsm}_ffi`, kernels/lapack.cc), so the rules JAX registered for "cpu" are registered as they
are for "kiln" (looked up in JAX's table at run time, never copied).
"""

from __future__ import annotations

# Primitives whose CPU rules emit only targets Kiln implements.
PRIMITIVES = ("cholesky_p", "lu_p", "geqrf_p", "householder_product_p", "eigh_p", "svd_p",
              "triangular_solve_p")


def register(platform: str) -> None:
    try:
        from jax._src.interpreters import mlir
        from jax._src.lax import linalg
    except ImportError:
        return
    from kiln._lowering import register_lowering

    cpu_rules = mlir._platform_specific_lowerings.get("cpu", {})  # noqa: SLF001
    for name in PRIMITIVES:
        prim = getattr(linalg, name, None)
        entry = cpu_rules.get(prim) if prim is not None else None
        if entry is None:
            continue
        rule = getattr(entry, "rule", entry)
        register_lowering(prim, rule, platform)
