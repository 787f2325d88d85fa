"""A 2-layer MLP trained with SGD by PyTorch/XLA, on Kiln or on XLA's CPU backend.

PyTorch/XLA compiles through `PjRtCApiClient::Compile(XlaComputation)`: Kiln receives each graph
as a serialized HloModuleProto (PJRT program format "hlo"). Run it twice and compare:

    KILN_LIBRARY=build/dev/libkiln_pjrt.so python examples/torch_xla_mlp.py KILN
    python examples/torch_xla_mlp.py CPU

Each run prints one JSON line: the loss of every step and the final weights' checksum. Needs
`pip install torch==2.9.0 torch-xla==2.9.0` (see docs/clients.md, "PyTorch/XLA").
"""

from __future__ import annotations

import json
import os
import sys


def main() -> None:
    backend = sys.argv[1] if len(sys.argv) > 1 else "KILN"
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    os.environ["PJRT_DEVICE"] = backend  # before torch_xla looks for a device
    if backend == "KILN":
        import torch_xla.experimental.plugins as plugins

        library = os.environ.get("KILN_LIBRARY")
        if not library:
            import kiln  # the installed package's plugin

            library = kiln.library_path()

        class KilnPlugin(plugins.DevicePlugin):
            def library_path(self):
                return os.path.abspath(library)

        plugins.register_plugin("KILN", KilnPlugin())
        plugins.use_dynamic_plugins()

    import torch
    import torch_xla

    device = torch_xla.device()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    model = model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    inputs, targets = torch.randn(32, 8), torch.randn(32, 4)
    x, y = inputs.to(device), targets.to(device)

    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        torch_xla.sync()
        losses.append(loss.item())
    checksum = sum(float(p.detach().cpu().double().sum()) for p in model.parameters())
    print(json.dumps({"backend": backend, "losses": losses, "weights_sum": checksum}))


if __name__ == "__main__":
    main()
