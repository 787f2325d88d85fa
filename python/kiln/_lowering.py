"""Registering JAX lowering rules for platform "kiln".

`mlir.register_lowering(..., platform="kiln")` refuses a platform JAX has not heard of yet, and when
PJRT_NAMES_AND_LIBRARY_PATHS names kiln, JAX registers the plugin only after it has called
`kiln.initialize()`. In that case the rule goes straight into JAX's per-platform table, which is
what register_lowering itself would do once the platform is known.
"""

from __future__ import annotations

from typing import Any, Callable


def register_lowering(prim: Any, rule: Callable[..., Any], platform: str,
                      inline: bool = True) -> None:
    from jax._src.interpreters import mlir

    try:
        mlir.register_lowering(prim, rule, platform=platform, inline=inline)
        return
    except NotImplementedError:
        pass  # unknown platform (not registered yet): write the table entry directly
    entry_type = getattr(mlir, "LoweringRuleEntry", None)
    entry = entry_type(rule, inline) if entry_type is not None else rule
    mlir._platform_specific_lowerings[platform][prim] = entry  # noqa: SLF001


def enable_donation(platform: str) -> None:
    """Lets JAX donate buffers to programs for `platform` (`jax.jit(..., donate_argnums=...)`).

    JAX honours donation only for the platforms in `mlir._platforms_with_donation`; for any other
    it drops it with "Some donated buffers were not usable". Kiln consumes a donated buffer at
    Execute (it is deleted; the program still reads its data)."""
    from jax._src.interpreters import mlir

    platforms = getattr(mlir, "_platforms_with_donation", None)
    if isinstance(platforms, list) and platform not in platforms:
        platforms.append(platform)


class _AsCachedPlatform:
    """What `compilation_cache.is_cache_used` reads of a backend (`platform` and
    `supports_executable_serialization`), for a Kiln backend presented as "cpu"."""

    platform = "cpu"

    def __init__(self, backend: Any) -> None:
        self.supports_executable_serialization = getattr(
            backend, "supports_executable_serialization", True)


def enable_compilation_cache(platform: str) -> None:
    """Lets JAX's persistent compilation cache (jax_compilation_cache_dir) store `platform`'s
    executables. JAX's `compilation_cache.is_cache_used` accepts only the platforms it names; for
    `platform` it is asked about a stand-in named "cpu" (Kiln serializes executables), so JAX's
    own bookkeeping still runs: the answer is decided once per task, and the task's
    `/jax/compilation_cache/tasks_using_cache` or `task_disabled_cache` event is recorded.
    """
    try:
        from jax._src import compilation_cache as cc
    except ImportError:
        return
    original = getattr(cc, "is_cache_used", None)
    if original is None or getattr(original, "_kiln_platform", None):
        return

    def is_cache_used(backend) -> bool:
        if getattr(backend, "platform", None) == platform:
            return original(_AsCachedPlatform(backend))
        return original(backend)

    is_cache_used._kiln_platform = platform  # type: ignore[attr-defined]
    is_cache_used.__wrapped__ = original  # type: ignore[attr-defined]
    cc.is_cache_used = is_cache_used


def _with_kiln_as_cpu(branches_platforms: Any, platform: str) -> Any:
    """`branches_platforms` of lax.platform_dependent with `platform` added to the branch that
    names "cpu", unless some branch names `platform` itself."""
    if branches_platforms is None or any(ps is not None and platform in ps
                                         for ps in branches_platforms):
        return branches_platforms
    return tuple(ps if ps is None or "cpu" not in ps else (*ps, platform)
                 for ps in branches_platforms)


def enable_platform_dependent(platform: str) -> None:
    """`lax.platform_dependent(x, cpu=f, default=g)` takes the `cpu` branch on Kiln, a CPU backend
    (a branch for `platform` itself still wins). JAX picks branches by platform name: both the
    branch index (`platform_index`) and the branches kept by the conditional (`cond` with
    `branches_platforms`) are lowered with Kiln named beside "cpu"."""
    from functools import partial

    from jax._src.lax.control_flow import conditionals as cond

    def platform_index(ctx, *, platforms):
        return cond._platform_index_lowering(  # noqa: SLF001
            ctx, platforms=_with_kiln_as_cpu(platforms, platform))

    def cond_lowering(ctx, index, *args, branches, **params):
        if params.get("branches_platforms") is not None:
            params = dict(params, branches_platforms=_with_kiln_as_cpu(
                params["branches_platforms"], platform))
        return cond._cond_lowering(ctx, index, *args, branches=branches, **params)  # noqa: SLF001

    register_lowering(cond.platform_index_p, platform_index, platform)
    register_lowering(cond.cond_p, partial(cond_lowering), platform)


class _CpuOnlyRulesToo(dict):
    """Kiln's per-platform lowering table, which also answers with the CPU backend's rule for a
    primitive that has a rule only for "cpu": no rule of Kiln's own and no default rule, so
    without it lowering for Kiln would fail ("MLIR translation rule for primitive ... not found
    for platform kiln"). Libraries register such rules for the custom calls of their own CPU
    kernels (`mlir.register_lowering(p, rule, platform="cpu")` next to an XLA FFI handler), and
    Kiln is a CPU. Where a default rule exists, Kiln keeps it: this only turns that error into
    the CPU's lowering. The CPU table is read live, so rules registered later count too."""

    def __init__(self, own: dict, cpu: dict, defaults: dict) -> None:
        super().__init__(own)
        self._cpu, self._defaults = cpu, defaults

    def _from_cpu(self, prim: Any) -> bool:
        return not dict.__contains__(self, prim) and prim in self._cpu and prim not in self._defaults

    def __contains__(self, prim: object) -> bool:
        return dict.__contains__(self, prim) or self._from_cpu(prim)

    def __getitem__(self, prim: Any) -> Any:
        return self._cpu[prim] if self._from_cpu(prim) else dict.__getitem__(self, prim)

    def get(self, prim: Any, default: Any = None) -> Any:
        return self[prim] if prim in self else default


def enable_cpu_only_rules(platform: str) -> None:
    """Lowering rules registered only for platform "cpu" apply to `platform` when it has no rule
    of its own and JAX has no default one (_CpuOnlyRulesToo)."""
    from jax._src.interpreters import mlir

    table = mlir._platform_specific_lowerings  # noqa: SLF001
    if isinstance(table.get(platform), _CpuOnlyRulesToo):
        return
    table[platform] = _CpuOnlyRulesToo(table.get(platform, {}), table["cpu"], mlir._lowerings)  # noqa: SLF001
