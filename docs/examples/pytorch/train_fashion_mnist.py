"""The Keras MNIST convnet (conv32-conv64-maxpool-dropout-dense128-dropout-dense10, Adadelta,
batch 128) on Debian's Fashion-MNIST (dataset-fashion-mnist), recording its runs for
`repro-audit exec` with the five lines of docs/pytorch.md (marked "repro-audit").

    repro-audit exec --runs 3 -- python3 docs/examples/pytorch/train_fashion_mnist.py --steps 20

Options: --steps N (default 50), --threads T (default 2), --samples N (default 6000),
--loader-bug (the DataLoader variant whose workers share one augmentation generator),
--from-engine AUDIT_DIR (the cross-check: start from the initial weights and follow the batch
order of run 0 of an engine audit of the same model, made with `repro-audit run --save-batches`,
and record with its parameter names, layer names and spec, so that `repro-audit compare` lines
the two up: docs/pytorch.md, "Cross-check with the engine", and `compare --align` their ops:
docs/equivalence.md, "The engine against PyTorch"), --device cuda (the model and each batch on the
GPU), --benchmark (torch.backends.cudnn.benchmark = True: cuDNN times its candidates per
geometry and runs the fastest), --deterministic (torch.use_deterministic_algorithms(True) and
cudnn.deterministic, with CUBLAS_WORKSPACE_CONFIG=:4096:8 unless set), --data FOLDER (where the
IDX files are; default Debian's).
"""
import argparse
import gzip
import os
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


def model(rates=(0.25, 0.5)):
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 32, 3), torch.nn.ReLU(), torch.nn.Conv2d(32, 64, 3), torch.nn.ReLU(),
        torch.nn.MaxPool2d(2), torch.nn.Dropout(rates[0]), torch.nn.Flatten(),
        torch.nn.Linear(9216, 128), torch.nn.ReLU(), torch.nn.Dropout(rates[1]),
        torch.nn.Linear(128, 10))


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


class WithLoss(torch.nn.Module):
    """The model and its loss as one module, so that the loss's ops run in a module the recorder
    can name as the engine names them (`loss`), not in the script."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x, y):
        return torch.nn.functional.cross_entropy(self.net(x), y)


def from_engine(folder, steps, threads):
    """The cross-check: the engine's run 0 of this model, replayed in PyTorch from its initial
    weights and batch order, recorded under its parameter names, layer names and spec, so that
    `compare --align` pairs its ops with the engine's (docs/equivalence.md, "The engine against
    PyTorch"). Dropout follows the spec's rates (PyTorch draws its own masks: with rates above 0
    the runs part there)."""
    from repro_audit.engine_run import EngineRun

    engine = EngineRun(folder)
    data = engine.spec["data"]
    limit = data["train"].get("limit", 0) or None
    scale = torch.tensor(data["scale"], dtype=torch.float32)  # float(byte) * scale, as the engine
    images = torch.from_numpy(read_idx(data["train"]["images"])[:limit].astype(numpy.float32))
    images = (images * scale).unsqueeze(1)
    labels = torch.from_numpy(read_idx(data["train"]["labels"])[:limit].astype(numpy.int64))
    torch.set_num_threads(threads)
    net = model(engine.dropout_rates())
    names = engine.load_initial_weights(net)
    o = engine.spec["optimizer"]
    optimizer = torch.optim.Adadelta(net.parameters(), lr=o["lr"], rho=o["rho"], eps=o["eps"])
    model_and_loss = WithLoss(net)
    layers = {"model": "loss", **engine.layer_names(net, "model.net")}
    rec = repro_audit.record(model_and_loss, optimizer, names=names, layers=layers,
                             spec=engine.spec)
    started = time.perf_counter()
    for record in engine.steps[:steps]:
        indices = torch.tensor(record["indices"], dtype=torch.int64)
        x, y = images[indices], labels[indices]
        optimizer.zero_grad()
        loss = model_and_loss(x, y)
        loss.backward()
        optimizer.step()
        rec.step(batch=(x, y), loss=loss, epoch=record["epoch"], indices=indices)
    seconds = time.perf_counter() - started
    rec.close()
    n = min(steps, len(engine.steps))
    print(f"final loss={loss.item():.8f} steps={n} seconds_per_step={seconds / n:.4f} "
          f"finish_seconds=0")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--samples", type=int, default=6000)
    parser.add_argument("--loader-bug", action="store_true")
    parser.add_argument("--from-engine", metavar="AUDIT_DIR")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--benchmark", action="store_true")
    parser.add_argument("--deterministic", action="store_true")
    parser.add_argument("--data", default=FOLDER)
    args = parser.parse_args()
    if args.deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # before cuBLAS starts
        torch.use_deterministic_algorithms(True)
        torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = args.benchmark
    if args.from_engine:
        from_engine(args.from_engine, args.steps, args.threads)
        return

    repro_audit.seed_everything(default=1337)  # repro-audit: REPRO_AUDIT_SEED when exec sets it
    torch.set_num_threads(args.threads)
    images = torch.from_numpy(read_idx(f"{args.data}/train-images-idx3-ubyte.gz")
                              [:args.samples].astype(numpy.float32) / 255.0).unsqueeze(1)
    labels = torch.from_numpy(read_idx(f"{args.data}/train-labels-idx1-ubyte.gz")[:args.samples]
                              .astype(numpy.int64))
    net = model().to(args.device)
    optimizer = torch.optim.Adadelta(net.parameters(), lr=1.0, rho=0.95, eps=1e-7)
    rec = repro_audit.record(net, optimizer)  # repro-audit
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
            x, y = x.to(args.device), y.to(args.device)
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(net(x), y)
            loss.backward()
            optimizer.step()
            rec.step(batch=(x, y), loss=loss)  # repro-audit
            step += 1
            if step == args.steps:
                break
    seconds = time.perf_counter() - started
    rec.close()  # repro-audit: the run completed (its trace is written)
    finish_seconds = time.perf_counter() - started - seconds
    print(f"final loss={loss.item():.8f} steps={step} seconds_per_step={seconds / step:.4f} "
          f"finish_seconds={finish_seconds:.4f}")


if __name__ == "__main__":
    main()
