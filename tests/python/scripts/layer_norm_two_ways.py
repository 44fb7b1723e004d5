"""One small model with its LayerNorm written two ways (issue 63, worked case (c)): `manual`
computes it from mean, var, sub, div, mul and add; `library` calls nn.LayerNorm. Both name the
module `norm` and its parameters `weight` and `bias`, so the two programs' parameters pair up by
name, start from the same weights (one seed, the same modules created in the same order) and read
the same batches; only the norm's ops differ. `repro-audit compare A B --align` of the two traces
should name model.norm as where they part. `renamed` is `manual` with the norm's parameters named
`gamma` and `beta`: parameters that do not pair up by name, which --align refuses.

Usage: python3 layer_norm_two_ways.py manual|library|renamed
"""
import sys

import torch

import repro_audit

EPS = 1e-5


class ManualLayerNorm(torch.nn.Module):
    """nn.LayerNorm over the last dimension, written out: (x - mean) / sqrt(var + eps) * w + b."""

    def __init__(self, features, names=("weight", "bias")):
        super().__init__()
        self.names = names
        self.register_parameter(names[0], torch.nn.Parameter(torch.ones(features)))
        self.register_parameter(names[1], torch.nn.Parameter(torch.zeros(features)))

    def forward(self, x):
        weight, bias = (getattr(self, name) for name in self.names)
        mean = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, unbiased=False, keepdim=True)
        return (x - mean) / torch.sqrt(var + EPS) * weight + bias


class Net(torch.nn.Module):
    def __init__(self, variant):
        super().__init__()
        self.embed = torch.nn.Linear(16, 32)
        if variant == "library":
            self.norm = torch.nn.LayerNorm(32, eps=EPS)
        else:
            self.norm = ManualLayerNorm(32, ("gamma", "beta") if variant == "renamed"
                                        else ("weight", "bias"))
        self.head = torch.nn.Linear(32, 4)

    def forward(self, x):
        return self.head(torch.relu(self.norm(self.embed(x))))


def main(variant):
    if variant not in ("manual", "library", "renamed"):
        sys.exit("usage: layer_norm_two_ways.py manual|library|renamed")
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = Net(variant)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    rec = repro_audit.Recorder.from_env(model, optimizer)
    data = torch.Generator().manual_seed(1)
    x = torch.randn(24, 16, generator=data)
    y = torch.randint(0, 4, (24,), generator=data)
    for i in range(0, 24, 8):
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x[i:i + 8]), y[i:i + 8])
        loss.backward()
        optimizer.step()
        rec.step(batch=(x[i:i + 8], y[i:i + 8]), loss=loss)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "")
