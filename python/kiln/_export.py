"""`jax.export` across CPU backends: Kiln is a CPU, so exports for "cpu" run on Kiln and back.

An `Exported` records the platforms it was lowered for, and calling it (`exported.call`, which
lowers the primitive `call_exported`) refuses any lowering platform not among them ("was exported
for platforms ... but it is used on ('kiln',)"). Kiln lowers every primitive as JAX lowers it for
"cpu" (the LAPACK and platform_dependent rules Kiln registers are the cpu ones), so a module
lowered for either platform runs on the other. Two adaptations make that visible to JAX:

* `call_exported` lowered for "kiln" uses the artifact's "cpu" lowering when the artifact has none
  for "kiln" (and one lowered for "cpu" uses a "kiln" lowering when the artifact has no "cpu" one);
  every other platform is still checked as JAX checks it.
* The default export platform on Kiln is "cpu": `jax.export.export(f)` with Kiln as the default
  backend lowers for "cpu" and records `('cpu',)`, an artifact any JAX CPU backend accepts.
  Asking for `platforms=("kiln",)` explicitly still records "kiln". So does an export that is the
  first thing to start JAX's backends: JAX calls `kiln.initialize()` (which installs this) from
  inside that export's own default_export_platform call.
"""

from __future__ import annotations

from typing import Any, Sequence

_CPU = "cpu"


def _equivalent_platforms(lowering: Sequence[str], exported: Sequence[str],
                          platform: str) -> tuple[str, ...]:
    """`lowering` with `platform` renamed "cpu" (or "cpu" renamed `platform`) where the exported
    platforms lack the name but have its equivalent."""
    out = []
    for p in lowering:
        if p not in exported:
            if p == platform and _CPU in exported:
                p = _CPU
            elif p == _CPU and platform in exported:
                p = platform
        out.append(p)
    return tuple(out)


def _wrap_call_exported_lowering(original: Any, platform: str) -> Any:
    def call_exported_lowering(ctx, *args, exported):
        module_context = ctx.module_context
        lowering = tuple(module_context.platforms)
        mapped = _equivalent_platforms(lowering, tuple(exported.platforms), platform)
        if mapped == lowering:
            return original(ctx, *args, exported=exported)
        # JAX's rule reads the lowering platforms from the module context only to choose the
        # artifact's platform index; the rest of the module is still lowered for `lowering`.
        module_context.platforms = mapped
        try:
            return original(ctx, *args, exported=exported)
        finally:
            module_context.platforms = lowering

    call_exported_lowering._kiln_platform = platform  # type: ignore[attr-defined]
    call_exported_lowering.__wrapped__ = original  # type: ignore[attr-defined]
    return call_exported_lowering


def _wrap_default_export_platform(original: Any, platform: str) -> Any:
    def default_export_platform() -> str:
        chosen = original()
        return _CPU if chosen == platform else chosen

    default_export_platform.__doc__ = original.__doc__
    default_export_platform._kiln_platform = platform  # type: ignore[attr-defined]
    default_export_platform.__wrapped__ = original  # type: ignore[attr-defined]
    return default_export_platform


def enable_cpu_exports(platform: str) -> None:
    """Makes exports for "cpu" callable on `platform` (and the reverse), and makes "cpu" the
    default export platform when `platform` is the default backend."""
    import sys

    from jax._src.export import _export
    from jax._src.interpreters import mlir

    current = mlir._lowerings.get(_export.call_exported_p)  # noqa: SLF001
    rule = getattr(current, "rule", current)
    if rule is None:
        raise RuntimeError("jax has no lowering rule for call_exported")
    if getattr(rule, "_kiln_platform", None) is None:
        mlir.register_lowering(_export.call_exported_p,
                               _wrap_call_exported_lowering(rule, platform),
                               inline=bool(getattr(current, "inline", True)))

    original = _export.default_export_platform
    if getattr(original, "_kiln_platform", None) is None:
        wrapped = _wrap_default_export_platform(original, platform)
        # The public names are the same function object, bound at import: rebind each.
        for name in ("jax._src.export._export", "jax.export", "jax.experimental.export"):
            module = sys.modules.get(name)
            if module is None:
                continue
            for attr in ("default_export_platform", "default_lowering_platform"):
                if getattr(module, attr, None) is original:
                    setattr(module, attr, wrapped)
