"""`jax_num_cpu_devices` gives Kiln, a CPU backend, as many devices as JAX's CPU backend.

`jax.config.update("jax_num_cpu_devices", n)` (and JAX's test utility `request_cpu_devices(n)`,
which sets it) configures only the platform JAX names "cpu". JAX builds every plugin's client
options through `xla_bridge._options_from_jax_configs(plugin_name)` when it creates the client;
for Kiln that now also carries `kiln_device_count = n`, unless `KILN_DEVICE_COUNT` is set (it
wins, as documented in docs/multidevice.md), `jax_pjrt_client_create_options` already names a
count, or n is outside what Kiln accepts (1 to 1024; then Kiln keeps its own default). Options
given to `register_plugin` come first in JAX's merge, so this count replaces one named there.
"""

from __future__ import annotations

import os

OPTION = "kiln_device_count"
ENV = "KILN_DEVICE_COUNT"
MAX_DEVICES = 1024  # kMaxDeviceCount, pjrt/client.h


def enable(platform: str) -> None:
    from jax._src import xla_bridge as xb

    original = getattr(xb, "_options_from_jax_configs", None)
    num_cpu_devices = getattr(xb, "num_cpu_devices", None)
    if original is None or num_cpu_devices is None:
        return
    if getattr(original, "_kiln_platform", None) is not None:
        return

    def options_from_jax_configs(plugin_name):
        options = original(plugin_name)
        if plugin_name != platform or OPTION in options or os.environ.get(ENV):
            return options
        n = num_cpu_devices.value
        if isinstance(n, int) and 1 <= n <= MAX_DEVICES:
            options[OPTION] = n
        return options

    options_from_jax_configs._kiln_platform = platform  # type: ignore[attr-defined]
    options_from_jax_configs.__wrapped__ = original  # type: ignore[attr-defined]
    xb._options_from_jax_configs = options_from_jax_configs  # noqa: SLF001
