"""pytorch/examples' mnist (mnist/main.py) on synthetic data, with the checkpoint a real script has:
it saves at each epoch's end, after its evaluation and its scheduler.step(), and resumes with its
own `--resume FILE`. The lines marked "repro-audit" are all the audit needs, and nothing in the
script saves or loads for the tool (docs/resume.md, "PyTorch"):

    repro-audit exec --runs 2 --interrupt-at 5 --resume-arg='--resume {checkpoint}' -- \\
        python3 docs/examples/pytorch/train_mnist_resumable.py          # resumes exactly: exit 0
    repro-audit exec --runs 2 --interrupt-at 5 --resume-arg='--resume {checkpoint}' -- \\
        python3 docs/examples/pytorch/train_mnist_resumable.py --buggy  # two pieces: exit 1

Each run trains EPOCHS epochs of STEPS_PER_EPOCH batches. Under `--interrupt-at 5` the first save
at or after step 5 is the end of epoch 1 (after step 8): every run but run 0 ends there, inside
rec.saved(), after its test() and scheduler.step() have run, and exec starts it again with
`--resume <its file>`; the resumed run must be run 0 from that point on, bit for bit. Without
--resume-arg the script reads REPRO_AUDIT_RESUME_FROM itself (the default of --resume).

What a resume needs here, and what --buggy leaves out: the model and the optimizer (Adadelta's
moving averages), the LR scheduler (StepLR, the learning rate decays every second epoch), and
torch's RNG state: dropout draws from it, and so do the shuffling DataLoaders (train and test),
whose every iter() draws the epoch's order from torch's generator. --forget PIECES (any of
`scheduler`, `torch_rng`, comma-separated) leaves out one; --buggy is both.
"""
import argparse
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

import repro_audit  # repro-audit

TRAIN_SAMPLES, TEST_SAMPLES, BATCH, EPOCHS = 256, 96, 32, 3
STEPS_PER_EPOCH = TRAIN_SAMPLES // BATCH


class Net(nn.Module):
    """mnist/main.py's Net, for 12x12 images: two convolutions, max pooling, two dropouts."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.conv2 = nn.Conv2d(8, 16, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(16 * 4 * 4, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.dropout2(x)
        return F.log_softmax(self.fc2(x), dim=1)


def synthetic_mnist(samples, generator):
    """Images whose class shows in their brightest quadrant, so the net has something to learn."""
    labels = torch.randint(0, 10, (samples,), generator=generator)
    images = torch.randn(samples, 1, 12, 12, generator=generator) * 0.3
    for i, label in enumerate(labels.tolist()):
        row, column = divmod(label % 4, 2)
        images[i, 0, row * 6:row * 6 + 6, column * 6:column * 6 + 6] += 0.1 * (1 + label)
    return torch.utils.data.TensorDataset(images, labels)


def train(model, loader, optimizer, epoch, rec):
    model.train()
    for data, target in loader:
        optimizer.zero_grad()
        loss = F.nll_loss(model(data), target)
        loss.backward()
        optimizer.step()
        rec.step(batch=(data, target), loss=loss, epoch=epoch - 1)  # repro-audit


def test(model, loader):
    model.eval()
    loss, correct = 0.0, 0
    with torch.no_grad():
        for data, target in loader:
            output = model(data)
            loss += F.nll_loss(output, target, reduction="sum").item()
            correct += output.argmax(dim=1).eq(target).sum().item()
    return loss / len(loader.dataset), correct


def main():
    parser = argparse.ArgumentParser(description="mnist-shaped training, resumable")
    parser.add_argument("--lr", type=float, default=1.0)
    parser.add_argument("--gamma", type=float, default=0.7)
    parser.add_argument("--save-dir", default=os.environ.get("REPRO_AUDIT_CHECKPOINT_DIR", "."),
                        help="where the checkpoints go (under an audit: the run's folder)")
    parser.add_argument("--resume", metavar="FILE",
                        default=os.environ.get("REPRO_AUDIT_RESUME_FROM") or None,
                        help="a checkpoint to go on from (default: REPRO_AUDIT_RESUME_FROM)")
    parser.add_argument("--buggy", action="store_true",
                        help="leave torch's RNG state and the scheduler out of the checkpoint")
    parser.add_argument("--forget", default="", help="pieces to leave out, comma-separated")
    args = parser.parse_args()
    forget = set(filter(None, args.forget.split(","))) | (
        {"torch_rng", "scheduler"} if args.buggy else set())
    repro_audit.seed_everything(default=1)  # repro-audit: torch.manual_seed(REPRO_AUDIT_SEED)
    torch.set_num_threads(1)
    data = torch.Generator().manual_seed(0)  # the same data set in every run
    train_loader = torch.utils.data.DataLoader(synthetic_mnist(TRAIN_SAMPLES, data),
                                               batch_size=BATCH, shuffle=True)
    test_loader = torch.utils.data.DataLoader(synthetic_mnist(TEST_SAMPLES, data),
                                              batch_size=BATCH, shuffle=True)
    model = Net()
    optimizer = torch.optim.Adadelta(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=args.gamma)
    start_epoch = 1
    if args.resume:
        state = torch.load(args.resume)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        if "scheduler" not in forget:
            scheduler.load_state_dict(state["scheduler"])
        if "torch_rng" not in forget:
            torch.set_rng_state(state["torch_rng"])
        start_epoch = state["epoch"] + 1
        print(f"resuming after epoch {state['epoch']} from {args.resume}", flush=True)

    # repro-audit: the scheduler's state is compared at a resume too.
    with repro_audit.record(model, optimizer, scheduler=scheduler) as rec:
        for epoch in range(start_epoch, EPOCHS + 1):
            train(model, train_loader, optimizer, epoch, rec)
            loss, correct = test(model, test_loader)
            print(f"epoch {epoch}: test loss {loss:.4f}, accuracy {correct}/{TEST_SAMPLES}",
                  flush=True)
            scheduler.step()
            path = os.path.join(args.save_dir, f"checkpoint-epoch-{epoch}.pt")
            torch.save({"epoch": epoch, "model": model.state_dict(),
                        "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                        "torch_rng": torch.get_rng_state()}, path)
            rec.saved(path)  # repro-audit: the script's own save, its resume point


if __name__ == "__main__":
    main()
