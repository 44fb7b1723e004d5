"""The cross-check (docs/pytorch.md): the engine's run of the Keras convnet (Fashion-MNIST, dropout
rates 0, 3 steps of 64) and the example script replaying it in PyTorch from the engine's initial
weights and batch order (`--from-engine`), recorded under the engine's names and spec, line up in
`repro-audit compare`: they start from the same weights, see the same batches, and the report
names where the two implementations part. The tool runs through conftest.py's `tool`
(REPRO_AUDIT_BINARY names the built binary)."""
import json
import os
import struct
import subprocess
import sys

import pytest

from keras_replay import keras_replay_spec

torch = pytest.importorskip("torch")
from repro_audit.engine_run import EngineRun, read_safetensors  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "docs", "examples", "pytorch", "train_fashion_mnist.py")


def crosscheck_spec():
    return keras_replay_spec("keras-crosscheck", steps=3, limit=512)


@pytest.fixture(scope="module")
def crosscheck(tmp_path_factory, engine_audit, audit_environment, tool):
    engine = engine_audit(crosscheck_spec())
    trace = tmp_path_factory.mktemp("crosscheck") / "pytorch.trace.jsonl"
    env = audit_environment(REPRO_AUDIT_TRACE=trace, REPRO_AUDIT_RUN="1")
    done = subprocess.run([sys.executable, EXAMPLE, "--from-engine", str(engine), "--steps", "3",
                           "--threads", "1"], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    report = tool("compare", "--expect", "identical", "--json", "-",
                  engine / "run-000.trace.jsonl", trace)
    return engine, trace, report


def test_the_two_implementations_line_up(crosscheck):
    engine, trace, report = crosscheck
    assert report.returncode in (0, 1), report.stderr  # compared: identical or diverged
    result = json.loads(report.stdout)
    categories = result["categories"]
    # The same start and the same data, bit for bit: what the replay must carry over.
    assert categories["initial_weights"]["identical"]
    assert categories["batches"]["identical"]
    # The same spec (its digest) and the same parameter names: compare lined them up.
    assert result["spec"]["name"] == "keras-crosscheck"
    first = result["first_divergence"]
    if first is not None:  # where they part, if they do: a step of the run, not its start
        assert first["category"] not in ("initial_weights", "batches")
        assert first["step"] is not None
    # The determinism switches are the framework's, not a setting the engine's run lacks.
    assert not any("determinism switches" in w for w in result["warnings"])


def test_step_zero_losses_agree(crosscheck):
    """On the CPU the forward pass of step 0 (convolutions, pool, dense layers, softmax
    cross-entropy from identical weights and batch) gives the engine's loss within 1e-5 relative.
    Not bit for bit, though it was on every machine measured (docs/pytorch.md): each side's bits
    are its kernels' (PyTorch's follow the CPU, the engine's its instruction set), and neither
    promises the other's summation order. A replay that carried the weights or the batch over
    wrongly misses by far more (losses near 2.3 apart by 1e-2 and up)."""
    engine, trace, _ = crosscheck

    def step_zero_loss(path):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            if record.get("record") == "step" and record["step"] == 0:
                return struct.unpack("<f", struct.pack("<I", int(record["loss_bits"], 16)))[0]
    engine_loss = step_zero_loss(engine / "run-000.trace.jsonl")
    assert abs(step_zero_loss(trace) - engine_loss) <= 1e-5 * abs(engine_loss)


def test_engine_run_is_read_whole(crosscheck, tmp_path):
    engine, _, _ = crosscheck
    run = EngineRun(str(engine))
    assert run.param_names[0] == "conv2d_0.weight" and len(run.param_names) == 8
    assert [len(s["indices"]) for s in run.steps] == [64, 64, 64]
    assert run.dropout_rates() == [0.0, 0.0]
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{}")
    with pytest.raises(ValueError, match="runs past the end"):
        read_safetensors(str(bad))


def test_engine_layer_names_follow_the_spec():
    """EngineRun.layer_names: each spec layer's module, and the activation module after a layer
    with an activation (the engine fuses it into the layer's op), by the engine's layer name; a
    model not built as the spec's layers is refused, naming the first module out of place."""
    run = EngineRun.__new__(EngineRun)  # the spec alone: no engine folder
    run.spec = {"model": {"layers": [
        {"type": "conv2d", "name": "c", "activation": "relu"},
        {"type": "flatten", "name": "flatten_0"},
        {"type": "dense", "name": "head", "activation": "none"}]}}
    net = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                              torch.nn.Linear(8, 3))
    assert run.layer_names(net, "model.net") == {
        "model.net.0": "c", "model.net.1": "c", "model.net.2": "flatten_0", "model.net.3": "head"}
    with pytest.raises(ValueError, match="model.2: ReLU where the spec's layer flatten_0 is a Fl"):
        run.layer_names(torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.ReLU(),
                                            torch.nn.ReLU(), torch.nn.Linear(8, 3)))
    with pytest.raises(ValueError, match="model.4: a module after the spec's last layer"):
        run.layer_names(torch.nn.Sequential(*net, torch.nn.ReLU()))
