"""The numerical-truth cross-check of batch normalisation and residual blocks (issue 65): the
engine's run of a small pre-activation ResNet on Fashion-MNIST (a v2 block with an identity
shortcut, one that halves the image through a stride-2 conv and a 1x1 projection, batchnorm with
Keras' momentum and epsilon, global average pooling) replayed in PyTorch from the engine's initial
weights and batch order: the first 3 steps' losses agree within 1e-6 relative on the CPU (the
running statistics enter the losses of no training step; batchnorm's batch statistics, its
backward and the residual adds enter all three).

PyTorch's modules are built here as the spec describes them, the parameters in the engine's order
(a block's body, then its projection). TensorFlow's "same" padding of a stride-2 3x3 conv on 28
pixels pads 0 before and 1 after (docs/spec.md): PyTorch's padding is symmetric, so that conv pads
explicitly."""
import gzip
import json
import struct

import numpy
import pytest

torch = pytest.importorskip("torch")
from repro_audit.engine_run import EngineRun  # noqa: E402

IMAGES = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"
LABELS = "/usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz"
BN = {"type": "batchnorm", "momentum": 0.01, "epsilon": 0.001}


def resnet_spec():
    conv = {"type": "conv2d", "kernel": 3, "padding": "same"}
    return {
        "name": "resnet-crosscheck", "seed": 3, "device": "cpu", "threads": 1,
        "data": {"train": {"format": "idx", "images": IMAGES, "labels": LABELS, "limit": 256},
                 "scale": 0.00392156862745098, "batch_size": 32, "shuffle": True},
        "model": {"input": [1, 28, 28], "layers": [
            dict(conv, filters=4), dict(BN), {"type": "relu"},
            {"type": "residual", "name": "a", "layers": [
                dict(BN), {"type": "relu"}, dict(conv, filters=4)]},
            {"type": "residual", "name": "b", "layers": [
                dict(BN), {"type": "relu"}, dict(conv, filters=8, stride=2)],
             "shortcut": {"filters": 8, "stride": 2}},
            dict(BN), {"type": "relu"}, {"type": "global_avgpool"},
            {"type": "dense", "units": 10}]},
        "loss": "softmax_cross_entropy",
        "optimizer": {"type": "sgd", "lr": 0.1, "momentum": 0.9},
        "train": {"epochs": 1, "max_steps": 3}}


def batchnorm(channels):
    return torch.nn.BatchNorm2d(channels, eps=0.001, momentum=0.01)


class Residual(torch.nn.Module):
    def __init__(self, body, projection=None):
        super().__init__()
        self.body = torch.nn.Sequential(*body)
        self.projection = projection

    def forward(self, x):
        return self.body(x) + (x if self.projection is None else self.projection(x))


class PadAfter(torch.nn.Module):
    """TensorFlow's "same" pads of a stride-2 3x3 conv on an even image: 0 before, 1 after."""

    def forward(self, x):
        return torch.nn.functional.pad(x, (0, 1, 0, 1))


def resnet_model():
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 4, 3, padding=1), batchnorm(4), torch.nn.ReLU(),
        Residual([batchnorm(4), torch.nn.ReLU(), torch.nn.Conv2d(4, 4, 3, padding=1)]),
        Residual([batchnorm(4), torch.nn.ReLU(), PadAfter(), torch.nn.Conv2d(4, 8, 3, stride=2)],
                 torch.nn.Conv2d(4, 8, 1, stride=2)),
        batchnorm(8), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
        torch.nn.Linear(8, 10))


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    rank = data[3]
    dims = struct.unpack(">" + "I" * rank, data[4:4 + 4 * rank])
    return numpy.frombuffer(data, dtype=numpy.uint8, offset=4 + 4 * rank).reshape(dims)


def step_losses(trace):
    losses = []
    for line in trace.read_text().splitlines():
        record = json.loads(line)
        if record.get("record") == "step":
            losses.append(struct.unpack("<f", struct.pack("<I", int(record["loss_bits"], 16)))[0])
    return losses


@pytest.fixture(scope="module")
def replay(engine_audit):
    engine = engine_audit(resnet_spec())
    run = EngineRun(str(engine))
    torch.set_num_threads(1)
    net = resnet_model()
    run.load_initial_weights(net)
    scale = torch.tensor(0.00392156862745098, dtype=torch.float32)
    images = (torch.from_numpy(read_idx(IMAGES)[:256].astype(numpy.float32)) * scale).unsqueeze(1)
    labels = torch.from_numpy(read_idx(LABELS)[:256].astype(numpy.int64))
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for record in run.steps[:3]:
        indices = torch.tensor(record["indices"], dtype=torch.int64)
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(net(images[indices]), labels[indices])
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return engine, net, losses


def test_the_first_three_losses_agree(replay):
    engine, _, losses = replay
    engine_losses = step_losses(engine / "run-000.trace.jsonl")
    assert len(engine_losses) == 3
    for step, (mine, theirs) in enumerate(zip(engine_losses, losses)):
        assert abs(mine - theirs) <= 1e-6 * abs(theirs), f"step {step}: {mine} vs {theirs}"


def test_the_parameters_are_named_as_the_engine_orders_them(replay):
    engine, _, _ = replay
    names = EngineRun(str(engine)).param_names
    assert names[:2] == ["conv2d_0.weight", "conv2d_0.bias"]
    assert "a.batchnorm_0.weight" in names and "b.shortcut.weight" in names
    assert names.index("b.conv2d_0.weight") < names.index("b.shortcut.weight")
