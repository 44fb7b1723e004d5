"""A training script that saves and loads its own checkpoint, for `repro-audit exec
--interrupt-at` (docs/resume.md, "PyTorch"): the audit stops every run but run 0 after a step,
through the script's save(), starts it again, and checks that the script's load() put back every
piece of state, so that the resumed run is the uninterrupted one bit for bit.

    repro-audit exec --runs 2 --interrupt-at 5 --interrupt-at 12 -- \\
        python3 docs/examples/pytorch/train_checkpointed.py

A tiny model (dense, BatchNorm, dropout) on a fixed random data set with a random augmentation
(numpy's noise, a sign flip by Python's `random`), SGD with momentum and a StepLR schedule, 3 epochs
of 8 batches. It resumes exactly: the checkpoint holds the model's
state_dict (BatchNorm's running statistics with it), the optimizer's and the scheduler's, the
torch, numpy and `random` RNG states, and the sampler's epoch and position (ResumableSampler);
the DataLoader has a generator of its own, since each iter(loader) draws a seed from it (from
torch's global generator without one: a resumed epoch would draw once more than the uninterrupted
run).

--buggy leaves out what issue trackers find missing most: torch's RNG state and the sampler's
position (the DataLoader shuffles with torch's generator, and a resumed epoch starts again from
its first batch). The report names both, as their fix. --forget PIECES leaves out any of
`buffers` (only the parameters loaded), `optimizer`, `scheduler`, `torch_rng`, `numpy_rng`,
`python_rng`, `sampler` (comma-separated; --buggy is `torch_rng,sampler`), for the tests that
prove each of the report's words.
"""
import argparse
import random

import numpy
import torch

import repro_audit  # repro-audit

SAMPLES, BATCH, FEATURES, CLASSES, EPOCHS, STEPS = 64, 8, 16, 4, 3, 24


class ResumableSampler(torch.utils.data.Sampler):
    """A shuffling sampler that goes on mid-epoch: epoch e's order comes from a generator seeded
    with (seed, e), and the epoch and position are its state_dict."""

    def __init__(self, size, seed):
        self.size, self.seed, self.epoch, self.position = size, seed, 0, 0

    def __iter__(self):
        if self.position >= self.size:  # the last epoch was taken whole: the next one
            self.epoch, self.position = self.epoch + 1, 0
        # Within a generator's 64 bits whatever the seed (exec --seeds different gives 64-bit ones).
        order = torch.randperm(self.size, generator=torch.Generator().manual_seed(
            (self.seed * 1000 + self.epoch) % 2**63)).tolist()
        while self.position < self.size:
            self.position += 1
            yield order[self.position - 1]

    def __len__(self):
        return self.size

    def state_dict(self):
        return {"epoch": self.epoch, "position": self.position}

    def load_state_dict(self, state):
        self.epoch, self.position = state["epoch"], state["position"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--buggy", action="store_true",
                        help="leave torch's RNG state and the sampler's position out")
    parser.add_argument("--forget", default="", help="pieces to leave out, comma-separated")
    args = parser.parse_args()
    forget = set(filter(None, args.forget.split(","))) | (
        {"torch_rng", "sampler"} if args.buggy else set())
    seed = repro_audit.seed_everything(default=7)  # repro-audit: REPRO_AUDIT_SEED under exec
    torch.set_num_threads(1)
    data = torch.Generator().manual_seed(0)  # the same data set in every run
    dataset = torch.utils.data.TensorDataset(torch.randn(SAMPLES, FEATURES, generator=data),
                                             torch.randint(0, CLASSES, (SAMPLES,), generator=data))
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, 32), torch.nn.BatchNorm1d(32),
                                torch.nn.ReLU(), torch.nn.Dropout(0.3), torch.nn.Linear(32, CLASSES))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=10, gamma=0.5)
    if "sampler" in forget:  # shuffled by torch's generator, started again on a resume
        sampler = None
        loader = torch.utils.data.DataLoader(dataset, batch_size=BATCH, shuffle=True)
    else:
        sampler = ResumableSampler(SAMPLES, seed)
        loader = torch.utils.data.DataLoader(dataset, batch_size=BATCH, sampler=sampler,
                                             generator=torch.Generator().manual_seed(seed))

    def save(path):
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "scheduler": scheduler.state_dict(), "torch_rng": torch.get_rng_state(),
                    "numpy_rng": numpy.random.get_state(), "python_rng": random.getstate(),
                    "sampler": sampler.state_dict() if sampler else None}, path)

    def load(path):
        state = torch.load(path)
        if "buffers" in forget:
            parameters = dict(model.named_parameters())
            model.load_state_dict({k: v for k, v in state["model"].items() if k in parameters},
                                  strict=False)
        else:
            model.load_state_dict(state["model"])
        restore = {"optimizer": lambda s: optimizer.load_state_dict(s),
                   "scheduler": lambda s: scheduler.load_state_dict(s),
                   "torch_rng": torch.set_rng_state, "numpy_rng": numpy.random.set_state,
                   "python_rng": random.setstate, "sampler": lambda s: sampler.load_state_dict(s)}
        for piece, put_back in restore.items():
            if piece not in forget:
                put_back(state[piece])

    checkpoint = repro_audit.Checkpoint(save, load, scheduler=scheduler)  # repro-audit
    with repro_audit.record(model, optimizer, checkpoint=checkpoint) as rec:  # repro-audit
        step = rec.start_step  # repro-audit: the steps done before this process (0, or a resume)
        for epoch in range(step // len(loader), EPOCHS):
            for x, y in loader:
                noisy = x + 0.01 * torch.from_numpy(numpy.random.standard_normal(x.shape)).float()
                noisy = -noisy if random.random() < 0.5 else noisy
                optimizer.zero_grad()
                loss = torch.nn.functional.cross_entropy(model(noisy), y)
                loss.backward()
                optimizer.step()
                scheduler.step()
                rec.step(batch=(x, y), loss=loss, epoch=epoch)  # repro-audit: the loader's batch
                step += 1
                if step == STEPS:
                    break
            if step == STEPS:
                break
    print(f"final loss={loss.item():.8f} steps={step}")


if __name__ == "__main__":
    main()
