import os, torch, repro_audit
repro_audit.seed_everything()
torch.set_num_threads(1)


class Normalise(torch.nn.Module):
    """Divides by the batch's total: a sum of 65536 elements, in one thread or two as the run
    counter says (the one op whose result depends on the run)."""

    def forward(self, x):
        torch.set_num_threads(1 + int(os.environ.get("REPRO_AUDIT_RUN", "0")) % 2)
        total = x.sum()
        torch.set_num_threads(1)
        return x / total.abs()


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
