"""The Keras MNIST convnet (conv32-conv64-maxpool-dropout-dense128-dropout-dense10, Adadelta,
batch 128) on Debian's Fashion-MNIST (dataset-fashion-mnist), recording its runs for
`repro-audit exec` with the five lines of docs/pytorch.md (marked "repro-audit").

    repro-audit exec --runs 3 -- python3 docs/examples/pytorch/train_fashion_mnist.py --steps 20

Options: --steps N (default 50), --threads T (default 2), --samples N (default 6000),
--loader-bug (the DataLoader variant whose workers share one augmentation generator).
"""
import argparse
import gzip
import struct
import time

import numpy
import torch

import repro_audit  # repro-audit

FOLDER = "/usr/share/datasets/fashion-mnist"


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    _, _, kind, rank = struct.unpack(">BBBB", data[:4])
    dims = struct.unpack(">" + "I" * rank, data[4:4 + 4 * rank])
    return numpy.frombuffer(data, dtype=numpy.uint8, offset=4 + 4 * rank).reshape(dims)


def model():
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 32, 3), torch.nn.ReLU(), torch.nn.Conv2d(32, 64, 3), torch.nn.ReLU(),
        torch.nn.MaxPool2d(2), torch.nn.Dropout(0.25), torch.nn.Flatten(),
        torch.nn.Linear(9216, 128), torch.nn.ReLU(), torch.nn.Dropout(0.5), torch.nn.Linear(128, 10))


class Augmented(torch.utils.data.Dataset):
    """A random shift of each image by one pixel, drawn from the dataset's own numpy Generator:
    the classic DataLoader bug, since every worker process gets a copy of the same Generator and
    draws the same "random" shifts (the dataset's rng state is never reseeded per worker)."""

    def __init__(self, images, labels):
        self.images, self.labels = images, labels
        self.rng = numpy.random.default_rng(0)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        shift = int(self.rng.integers(-1, 2))
        return torch.roll(self.images[i], shift, dims=2), self.labels[i]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--samples", type=int, default=6000)
    parser.add_argument("--loader-bug", action="store_true")
    args = parser.parse_args()

    repro_audit.seed_everything(default=1337)  # repro-audit: REPRO_AUDIT_SEED when exec sets it
    torch.set_num_threads(args.threads)
    images = torch.from_numpy(read_idx(f"{FOLDER}/train-images-idx3-ubyte.gz")[:args.samples]
                              .astype(numpy.float32) / 255.0).unsqueeze(1)
    labels = torch.from_numpy(read_idx(f"{FOLDER}/train-labels-idx1-ubyte.gz")[:args.samples]
                              .astype(numpy.int64))
    net = model()
    optimizer = torch.optim.Adadelta(net.parameters(), lr=1.0, rho=0.95, eps=1e-7)
    rec = repro_audit.Recorder.from_env(net, optimizer)  # repro-audit
    if args.loader_bug:
        loader = torch.utils.data.DataLoader(Augmented(images, labels), batch_size=128,
                                             shuffle=True, num_workers=2,
                                             generator=torch.Generator().manual_seed(1))
        rec.watch_loader(loader)  # repro-audit: records what each worker's streams start from
    else:
        loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(images, labels),
                                             batch_size=128, shuffle=True,
                                             generator=torch.Generator().manual_seed(1))
    step, started = 0, time.perf_counter()
    while step < args.steps:
        for x, y in loader:
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(net(x), y)
            loss.backward()
            optimizer.step()
            rec.step(batch=(x, y), loss=loss)  # repro-audit
            step += 1
            if step == args.steps:
                break
    seconds = time.perf_counter() - started
    rec.finish()  # repro-audit
    finish_seconds = time.perf_counter() - started - seconds
    print(f"final loss={loss.item():.8f} steps={step} seconds_per_step={seconds / step:.4f} "
          f"finish_seconds={finish_seconds:.4f}")


if __name__ == "__main__":
    main()
