"""A seeded data-parallel script for the tests (tests/python/test_distributed.py): a tiny model
under DistributedDataParallel on gloo, each rank its own slice of the global batch, STEPS steps.
Without a process group (WORLD_SIZE unset) it trains the whole global batch in one process.

    PERTURB_AT=k   rank 1 adds 1e-3 to its first parameter's gradient after the all-reduce of
                   step k (its replica parts from rank 0's)
    KILL_AT=k      rank 1 kills itself (SIGKILL) at step k, unless the file KILL_ONCE exists
    WIDTH=n        the hidden layer's width (default 5; scripts/bench-ddp-recorder uses more)
    BUCKET_CAP_MB=x  DDP's bucket_cap_mb (default DDP's own)
    EPSILON_BUCKET=b  a test-only communication hook: DDP's all-reduce, then, in run r (of the
                   audit) its result in bucket b plus r * 1e-6 on every rank: identical inputs to
                   the collective, a run-dependent result
    GLOBAL_LOSS=1  the loss recorded is the global batch's (the ranks' losses averaged by an
                   all-reduce), as one process on the whole batch records it (docs/equivalence.md:
                   data-parallel ranks against one process)
    CHECKPOINT=1   gives the recorder save and load functions (exec --interrupt-at): each rank
                   saves its model, optimizer and data generator to the path the recorder names
    CHECKPOINT=saved  each rank saves the same after every second step with its own code, to
                   rank-R.step-S.pt in REPRO_AUDIT_CHECKPOINT_DIR, and calls rec.saved(path);
                   --resume FILE (rank 0's file: each rank reads its own beside it) goes on
Rank 0 prints `seconds_per_step=S` over the training loop, the recorder's end included.
"""
import os
import re
import signal
import sys
import time

import torch
import torch.distributed as dist

import repro_audit

GLOBAL_BATCH = 8
world = int(os.environ.get("WORLD_SIZE", "1"))
if world > 1:
    dist.init_process_group("gloo")
rank = dist.get_rank() if world > 1 else 0
repro_audit.seed_everything(default=7)
torch.set_num_threads(1)
width = int(os.environ.get("WIDTH", "5"))
model = torch.nn.Sequential(torch.nn.Linear(6, width), torch.nn.Tanh(),
                            torch.nn.Linear(width, 2))
if world > 1:
    cap = os.environ.get("BUCKET_CAP_MB")
    model = torch.nn.parallel.DistributedDataParallel(
        model, **({"bucket_cap_mb": float(cap)} if cap else {}))
if world > 1 and os.environ.get("EPSILON_BUCKET"):
    epsilon_bucket = int(os.environ["EPSILON_BUCKET"])
    epsilon = 1e-6 * int(os.environ.get("REPRO_AUDIT_RUN", "0"))

    def allreduce_plus_epsilon(state, bucket):
        buffer = bucket.buffer().div_(world)
        done = dist.all_reduce(buffer, async_op=True).get_future()
        if bucket.index() != epsilon_bucket:
            return done.then(lambda f: f.value()[0])
        return done.then(lambda f: f.value()[0].add_(epsilon))

    model.register_comm_hook(None, allreduce_plus_epsilon)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
perturb_at = int(os.environ.get("PERTURB_AT", "-1"))
kill_at = int(os.environ.get("KILL_AT", "-1"))
once = os.environ.get("KILL_ONCE")
data = torch.Generator().manual_seed(11)
steps = int(os.environ.get("STEPS", "4"))


def save(path):
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "data": data.get_state(), "torch_rng": torch.get_rng_state()}, path)


def load(path):
    state = torch.load(path)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    data.set_state(state["data"])
    torch.set_rng_state(state["torch_rng"])


checkpoint = (save, load) if os.environ.get("CHECKPOINT") == "1" else None
own_saves = os.environ.get("CHECKPOINT") == "saved"
start = None
if own_saves and "--resume" in sys.argv:
    # exec --resume-arg names rank 0's file; this rank's is beside it.
    path = sys.argv[sys.argv.index("--resume") + 1]
    load(re.sub(r"rank-0\.step-", "rank-%d.step-" % rank, path))
    start = int(re.search(r"step-(\d+)\.pt$", path).group(1))
started = time.perf_counter()
with repro_audit.record(model, optimizer, checkpoint=checkpoint) as rec:
    for step in range(rec.start_step if start is None else start, steps):
        x = torch.randn(GLOBAL_BATCH, 6, generator=data)
        y = torch.randn(GLOBAL_BATCH, 2, generator=data)
        share = GLOBAL_BATCH // world
        x, y = x[rank * share:(rank + 1) * share], y[rank * share:(rank + 1) * share]
        optimizer.zero_grad()
        # The mean over the global batch: a rank's share of it, summed by the all-reduce's mean.
        loss = (model(x) - y).square().mean()
        loss.backward()
        if step == perturb_at and rank == 1:
            next(model.parameters()).grad.add_(1e-3)
        if step == kill_at and rank == 1 and not (once and os.path.exists(once)):
            if once:
                open(once, "w").close()
            os.kill(os.getpid(), signal.SIGKILL)
        optimizer.step()
        if world > 1 and os.environ.get("GLOBAL_LOSS") == "1":
            loss = loss.detach().clone()
            dist.all_reduce(loss)
            loss /= world
        rec.step(batch=(x, y), loss=loss)
        if own_saves and (step + 1) % 2 == 0:
            mine = os.path.join(os.environ["REPRO_AUDIT_CHECKPOINT_DIR"],
                                "rank-%d.step-%d.pt" % (rank, step + 1))
            save(mine)
            rec.saved(mine)
if rank == 0:
    print("seconds_per_step=%.6f" % ((time.perf_counter() - started) / steps), flush=True)
if world > 1:
    dist.destroy_process_group()
