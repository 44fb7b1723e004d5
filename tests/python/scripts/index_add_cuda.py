"""A model whose one nondeterministic op on a GPU is index_add_: 65,536 rows added into 16 with
float atomics, in whatever order the GPU's threads reach them (PyTorch documents index_add_ on
CUDA as nondeterministic unless torch.use_deterministic_algorithms(True)). For the GPU check of
op records (scripts/gpu-pytorch-check): the report must name aten.index_add_ in model.1."""
import torch

import repro_audit

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


class Scatter(torch.nn.Module):
    def __init__(self, rows, buckets):
        super().__init__()
        index = torch.randint(0, buckets, (rows,), generator=torch.Generator().manual_seed(0))
        self.register_buffer("index", index)
        self.buckets = buckets

    def forward(self, x):
        out = torch.zeros(self.buckets, x.shape[1], device=x.device)
        return out.index_add_(0, self.index, x)


repro_audit.seed_everything(default=3)
model = torch.nn.Sequential(torch.nn.Linear(8, 32), Scatter(65536, 16), torch.nn.Flatten(0),
                            torch.nn.Linear(16 * 32, 1)).to(DEVICE)
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
rec = repro_audit.Recorder.from_env(model, optimizer)
x = torch.randn(65536, 8, generator=torch.Generator().manual_seed(1)).to(DEVICE)
for _ in range(2):
    optimizer.zero_grad()
    loss = model(x).square().mean()
    loss.backward()
    optimizer.step()
    rec.step(batch=(x,), loss=loss)
rec.finish()
