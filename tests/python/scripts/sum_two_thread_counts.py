"""One program run with 1 and with 2 intra-op threads (issue 63: the magnitude of the op where two
programs part): the model scales its hidden layer by the root of a sum over all of its 65,536
elements, a reduction PyTorch splits among its threads (at::parallel_reduce, above its grain of
32,768 elements), so the sum's last bits follow the thread count. Every other op of the step is
split by output element and gives the same bits either way, up to the sum; from the sum on, the
values differ. `compare A B --align` of the two traces names aten.sum.default in `model` as the
op where they part: equal inputs, another output, and how far apart its outputs are.

Usage: python3 sum_two_thread_counts.py 1|2
"""
import sys

import torch

import repro_audit


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Linear(16, 8192)
        self.head = torch.nn.Linear(8192, 4)

    def forward(self, x):
        hidden = self.embed(x)
        return self.head(hidden / hidden.square().sum().sqrt())


def main(threads):
    torch.manual_seed(0)
    torch.set_num_threads(threads)
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.Generator().manual_seed(1)
    x = torch.randn(8, 16, generator=data)
    y = torch.randint(0, 4, (8,), generator=data)
    with repro_audit.record(model, optimizer) as rec:
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        rec.step(batch=(x, y), loss=loss)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
