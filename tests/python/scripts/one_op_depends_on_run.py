import os, torch, repro_audit
repro_audit.seed_everything()
torch.set_num_threads(1)


class Normalise(torch.nn.Module):
    """Divides by the total of a fixed table of 65536 floats, summed in one thread, or (odd runs,
    from step 1 on) in two: the one op whose result depends on the run, and on every machine.

    The table is 1 at element 0, 2^-24 at elements 32768 and 32769, 0 elsewhere. Two threads sum
    one half each (ATen splits 65536 elements at its grain of 32768) and add the halves:
    1 + (2^-24 + 2^-24) = 1 + 2^-23, every step exact. One thread adds elements 0 and 32768 in the
    same vector lane (32768 is a multiple of every lane count times ATen's 4 accumulators; one
    lane when scalar) before element 32769's lane joins: (1 + 2^-24) + 2^-24 = 1, each addition a
    tie rounded to even. So the sums part by one ULP whatever the CPU's vector width, and dividing
    by 1 + 2^-23 instead of 1 moves every nonzero activation by more than half its ULP
    (|x| 2^-23 / (1 + 2^-23) > |x| 2^-24): step 1's gradients differ, not only the sum."""

    def __init__(self):
        super().__init__()
        table = torch.zeros(65536)
        table[0], table[32768], table[32769] = 1.0, 2.0**-24, 2.0**-24
        self.register_buffer("table", table)
        self.calls = 0

    def forward(self, x):
        two = int(os.environ.get("REPRO_AUDIT_RUN", "0")) % 2 == 1 and self.calls >= 1
        self.calls += 1
        torch.set_num_threads(2 if two else 1)
        total = self.table.sum()
        torch.set_num_threads(1)
        return x / total


model = torch.nn.Sequential()
model.add_module("features", torch.nn.Sequential(torch.nn.Linear(64, 1024), torch.nn.Tanh()))
model.add_module("norm", Normalise())
model.add_module("head", torch.nn.Linear(1024, 3))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
rec = repro_audit.Recorder.from_env(model, optimizer)
data = torch.Generator().manual_seed(5)
x = torch.randn(192, 64, generator=data)
y = torch.randint(0, 3, (192,), generator=data)
for i in range(0, 192, 64):
    optimizer.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x[i:i + 64]), y[i:i + 64])
    loss.backward()
    optimizer.step()
    rec.step(batch=(x[i:i + 64], y[i:i + 64]), loss=loss)
print("final", loss.item())
