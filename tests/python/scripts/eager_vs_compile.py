"""A small convnet trained eagerly and through torch.compile (issue 63, on a GPU machine with
PyTorch 2.x: scripts/gpu-pytorch-check's `compile` check). The two should compute the same up to
rounding: Inductor fuses the pointwise ops and picks its own reductions, and compiled code may
ignore deterministic settings (pytorch#174386). `repro-audit exec --expect equivalent --versus
'python3 eager_vs_compile.py compile' -- python3 eager_vs_compile.py eager` judges the compiled
program's losses against the floor of the eager one's perturbed runs.

Usage: python3 eager_vs_compile.py eager|compile [--device cuda|cpu] [--steps N]
"""
import argparse
import sys

import torch

import repro_audit


class SmallConvNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(1, 16, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(16, 32, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2))
        self.head = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(32 * 5 * 5, 64),
                                        torch.nn.GELU(), torch.nn.Linear(64, 10))

    def forward(self, x):
        return self.head(self.features(x))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("variant", choices=["eager", "compile"])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--steps", type=int, default=8)
    args = parser.parse_args()
    if args.variant == "compile" and not hasattr(torch, "compile"):
        sys.exit("eager_vs_compile.py: torch.compile needs PyTorch 2.0 or later; this is %s"
                 % torch.__version__)
    repro_audit.seed_everything(default=0)
    torch.use_deterministic_algorithms(True)
    model = SmallConvNet().to(args.device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    data = torch.Generator().manual_seed(1)
    with repro_audit.record(model, optimizer) as rec:
        # Compiled after the recorder has the module: the recorder names and perturbs the eager
        # module's parameters, which the compiled one shares.
        forward = torch.compile(model) if args.variant == "compile" else model
        for _ in range(args.steps):
            x = torch.randn(64, 1, 28, 28, generator=data).to(args.device)
            y = torch.randint(0, 10, (64,), generator=data).to(args.device)
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(forward(x), y)
            loss.backward()
            optimizer.step()
            rec.step(batch=(x, y), loss=loss)


if __name__ == "__main__":
    main()
