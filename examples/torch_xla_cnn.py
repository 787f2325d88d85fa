"""A small CNN trained by PyTorch/XLA with Adam, on Kiln or on XLA's CPU backend.

Convolutions (padding, stride), BatchNorm2d, GELU, max pooling, LayerNorm, log-softmax and NLL
loss, 4 Adam steps, then topk, cumsum and sort: PyTorch/XLA lowers BatchNorm and LayerNorm to
HLO's batch-norm-* instructions and GELU to erf. Run it twice and compare the JSON lines:

    KILN_LIBRARY=build/dev/libkiln_pjrt.so python examples/torch_xla_cnn.py KILN
    python examples/torch_xla_cnn.py CPU

See docs/clients.md, "PyTorch/XLA", for what this needs from Kiln.
"""

from __future__ import annotations

import json
import os
import sys


def main() -> None:
    backend = sys.argv[1] if len(sys.argv) > 1 else "KILN"
    os.environ["PJRT_DEVICE"] = backend
    if backend == "KILN":
        import torch_xla.experimental.plugins as plugins

        library = os.environ.get("KILN_LIBRARY")
        if not library:
            import kiln

            library = kiln.library_path()

        class KilnPlugin(plugins.DevicePlugin):
            def library_path(self):
                return os.path.abspath(library)

        plugins.register_plugin("KILN", KilnPlugin())
        plugins.use_dynamic_plugins()

    import torch
    import torch_xla

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = torch.nn.Conv2d(1, 4, 3, padding=1)
            self.bn = torch.nn.BatchNorm2d(4)
            self.c2 = torch.nn.Conv2d(4, 8, 3, stride=2)
            self.fc = torch.nn.Linear(8 * 3 * 3, 10)
            self.ln = torch.nn.LayerNorm(10)

        def forward(self, x):
            x = torch.nn.functional.gelu(self.bn(self.c1(x)))
            x = torch.nn.functional.max_pool2d(x, 2)
            x = torch.tanh(self.c2(x))
            return torch.log_softmax(self.ln(self.fc(x.flatten(1))), -1)

    device = torch_xla.device()
    torch.manual_seed(0)
    model = Net().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    x = torch.randn(6, 1, 14, 14).to(device)
    y = torch.randint(0, 10, (6,)).to(device)
    losses = []
    for _ in range(4):
        optimizer.zero_grad()
        loss = torch.nn.functional.nll_loss(model(x), y)
        loss.backward()
        optimizer.step()
        torch_xla.sync()
        losses.append(loss.item())
    print(json.dumps({
        "backend": backend,
        "losses": losses,
        "topk": torch.topk(model(x), 3).indices.cpu().tolist()[0],
        "cumsum_last": torch.cumsum(x.flatten(), 0)[-1].item(),
        "smallest": torch.sort(x.flatten())[0][:3].cpu().tolist(),
    }))


if __name__ == "__main__":
    main()
