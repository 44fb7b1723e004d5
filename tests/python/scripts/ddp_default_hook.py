"""The recorder's stand-in for DDP's own all-reduce (repro_audit.collective, tests/python/
test_distributed.py): two DDP models of one initialisation train the same batches, one without a
hook, one through collective's default hook; each rank prints whether every gradient of every
step is bitwise the same. With 3 ranks, torch's allreduce_hook (a division) gives other bits than
DDP's reducer (a multiplication by 1 / 3): HOOK=allreduce_hook shows it.
"""
import os

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

from repro_audit import collective

dist.init_process_group("gloo")
rank = dist.get_rank()


def model():
    torch.manual_seed(0)
    return torch.nn.parallel.DistributedDataParallel(
        torch.nn.Sequential(torch.nn.Linear(7, 13), torch.nn.Tanh(), torch.nn.Linear(13, 3)))


own, hooked = model(), model()
hook = (default_hooks.allreduce_hook if os.environ.get("HOOK") == "allreduce_hook"
        else collective._default_hook(hooked))
# The class's own method: under an audit repro_audit wraps register_comm_hook, not here.
torch.nn.parallel.DistributedDataParallel.register_comm_hook(hooked, None, hook)
data = torch.Generator().manual_seed(rank + 5)
same = True
for step in range(5):
    x = torch.randn(11, 7, generator=data)
    for m in (own, hooked):
        m.zero_grad()
        m(x).square().mean().backward()
    same &= all(torch.equal(a.grad, b.grad) for a, b in zip(own.parameters(), hooked.parameters()))
print(f"rank {rank}: same gradients: {same}", flush=True)
# No rank tears gloo down while another still talks to it, and the DDP modules (whose reducers
# hold gloo work) go before the group: once, under load, a rank aborted at exit ("terminate
# called without an active exception") after printing its result.
dist.barrier()
del own, hooked
dist.destroy_process_group()
