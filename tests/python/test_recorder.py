"""The PyTorch recorder (lib/python/repro_audit) against the C++ tool: its digests are the tool's
on the same bytes (snapshots of an engine audit, against the digests its trace recorded, several
64 KiB chunks included); its traces are read by `repro-audit compare`, which finds seeded runs
bitwise identical and unseeded ones apart from their initial weights; it does nothing when no
audit asked for a trace. The tool runs through conftest.py's `tool` (REPRO_AUDIT_BINARY names the
built binary; CTest sets it)."""
import json
import os
import struct
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
import repro_audit  # noqa: E402  (PYTHONPATH=lib/python)
from repro_audit import digest as digests  # noqa: E402
from repro_audit.trace import canonical_json  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))

# A seeded script: a conv, a dense layer, Adam, two epochs of four batches.
SCRIPT = r"""
import sys, torch, repro_audit
seed = repro_audit.seed_everything()
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                            torch.nn.Linear(2 * 4 * 4, 3))
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
rec = repro_audit.Recorder.from_env(model, optimizer)
data = torch.Generator().manual_seed(5)
x = torch.randn(32, 1, 6, 6, generator=data)
y = torch.randint(0, 3, (32,), generator=data)
for epoch in range(2):
    for i in range(0, 32, 8):
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x[i:i + 8]), y[i:i + 8])
        loss.backward()
        optimizer.step()
        rec.step(batch=(x[i:i + 8], y[i:i + 8]), loss=loss, epoch=epoch)
print("final", loss.item())
"""


@pytest.fixture
def run_script(tmp_path, audit_environment):
    """Runs SCRIPT as run `run` of an audit seeded `seed`, outside exec: the path of its trace."""
    def run_it(run, seed):
        script = tmp_path / "train.py"
        script.write_text(SCRIPT)
        trace = tmp_path / f"run-{run:03d}.trace.jsonl"
        seeded = {"REPRO_AUDIT_SEED": seed} if seed is not None else {}
        env = audit_environment(REPRO_AUDIT_TRACE=trace, REPRO_AUDIT_RUN=run, **seeded)
        subprocess.run([sys.executable, str(script)], env=env, check=True, capture_output=True)
        return trace
    return run_it


def compare(tool, *traces):
    return tool("compare", "--expect", "identical", "--json", "-", *traces)


def read_safetensors(path):
    """{name: (shape, raw little-endian F32 bytes)} of a safetensors file."""
    data = path.read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        out[name] = (tuple(info["shape"]), data[8 + length + begin:8 + length + end])
    return out


def test_digests_are_the_tools_on_the_same_bytes(tmp_path, tool):
    """An engine audit's final weights (safetensors) hash in Python to the digests its trace
    recorded: a dense layer of 256 x 256 floats spans four 64 KiB chunks."""
    spec = {"name": "py-digest", "seed": 1, "threads": 1, "device": "cpu",
            "data": {"train": {"format": "random", "samples": 8, "shape": [1, 16, 16],
                               "classes": 4}, "batch_size": 4},
            "model": {"input": [1, 16, 16], "layers": [
                {"type": "flatten"}, {"type": "dense", "units": 256, "activation": "relu"},
                {"type": "dense", "units": 4}]},
            "optimizer": {"type": "sgd", "lr": 0.05}, "train": {"epochs": 1}}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    out = tmp_path / "out"
    done = tool("-q", "run", tmp_path / "spec.json", "--runs", 2, "--out", out)
    assert done.returncode == 0, done.stderr
    lines = (out / "run-000.trace.jsonl").read_text().splitlines()
    header, end = json.loads(lines[0]), json.loads(lines[-1])
    snapshot = read_safetensors(out / "run-000" / "weights-final.safetensors")
    assert len(header["params"]) == 4
    for param, recorded in zip(header["params"], end["weights"]):
        shape, raw = snapshot[param["name"]]
        assert digests.digest_bytes(digests.F32, shape, raw) == recorded, param["name"]
        tensor = torch.frombuffer(bytearray(raw), dtype=torch.float32).reshape(shape)
        assert digests.tensor_digest(tensor) == recorded
    # The spec's digest: its canonical JSON, as the tool dumps it.
    assert digests.text_digest(canonical_json(header["spec"])) == header["spec_digest"]


def test_digest_definition_by_hand():
    """The definition written out once more with the xxhash library, on an empty, a 0-d and a
    multi-chunk tensor: any drift of digest_bytes from docs/trace-format.md shows here."""
    import xxhash

    def by_hand(tag, shape, data):
        message = struct.pack("<BQ", tag, len(shape)) + b"".join(struct.pack("<q", d)
                                                                for d in shape)
        for begin in range(0, len(data), 65536):
            h = xxhash.xxh3_128(data[begin:begin + 65536]).intdigest()
            message += struct.pack("<QQ", h & (2**64 - 1), h >> 64)
        h = xxhash.xxh3_128(message).intdigest()
        return "%016x%016x" % (h >> 64, h & (2**64 - 1))

    big = torch.arange(70000, dtype=torch.float32)  # 280000 bytes: 5 chunks
    for tensor in (torch.zeros(0), torch.tensor(1.5), big, big.to(torch.int64)[:3],
                   torch.tensor([1, 2, 3], dtype=torch.uint8)):
        tag = {torch.float32: 1, torch.int32: 2, torch.int64: 3, torch.uint8: 4}[tensor.dtype]
        data = tensor.numpy().tobytes()
        assert digests.tensor_digest(tensor) == by_hand(tag, tuple(tensor.shape), data)
    # Every other dtype: its raw bytes under a tag of its own (docs/trace-format.md, "Digests").
    half = torch.tensor([[1.5, -2.0]], dtype=torch.bfloat16)
    assert digests.tensor_digest(half) == by_hand(6, (1, 2), b"\xc0\x3f\x00\xc0")
    wide = torch.tensor(0.1, dtype=torch.float64)
    assert digests.tensor_digest(wide) == by_hand(7, (), struct.pack("<d", 0.1))
    flags = torch.tensor([True, False])
    assert digests.tensor_digest(flags) == by_hand(10, (2,), b"\x01\x00")
    # The same bytes under another dtype are another digest.
    assert digests.tensor_digest(torch.tensor([1, 0], dtype=torch.int8)) != \
        digests.tensor_digest(flags)
    assert digests.dtype_name(half) == "bf16"


def test_seeded_runs_are_bitwise_identical_for_compare(tool, run_script):
    traces = [run_script(run, seed=3) for run in range(3)]
    done = compare(tool, *traces)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["verdict"]["identical"]
    assert report["spec"]["name"] == "train"
    assert len(report["runs"]) == 3
    header = json.loads(traces[0].read_text().splitlines()[0])
    assert header["source"]["kind"] == "pytorch"
    assert header["environment"]["torch"] == torch.__version__
    assert set(header["rng_states"]) >= {"torch", "python_random", "numpy"}
    assert header["optimizer_state"][0] == "exp_avg:0.weight"


def test_differently_seeded_runs_part_at_their_initial_weights(tool, run_script):
    traces = [run_script(run, seed) for run, seed in ((0, 3), (1, 4))]
    done = compare(tool, *traces)
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["first_divergence"]["category"] == "initial_weights"
    assert report["first_divergence"]["step"] is None


def test_no_audit_no_trace(tmp_path):
    model = torch.nn.Linear(2, 2)
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPRO_AUDIT_")}
    old = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        rec = repro_audit.Recorder.from_env(model, None)
    finally:
        os.environ.clear()
        os.environ.update(old)
    assert isinstance(rec, repro_audit.NoOpRecorder)
    assert not rec.enabled
    rec.step(batch=(torch.zeros(1, 2),), loss=torch.tensor(1.0))
    rec.finish()
    assert list(tmp_path.iterdir()) == []


def test_determinism_switches_set_differently_are_a_warning(tmp_path, tool, audit_environment):
    """One run with torch.use_deterministic_algorithms(True), one without: the report says they
    are different configurations (the verdict itself is the digests')."""
    script = tmp_path / "flags.py"
    script.write_text(SCRIPT.replace("torch.set_num_threads(1)",
                                     "torch.set_num_threads(1)\nimport os\n"
                                     "torch.use_deterministic_algorithms(bool(os.environ.get('DET')))"))
    traces = []
    for run, det in ((0, ""), (1, "1")):
        trace = tmp_path / f"run-{run:03d}.trace.jsonl"
        env = audit_environment(REPRO_AUDIT_TRACE=trace, REPRO_AUDIT_RUN=run,
                                REPRO_AUDIT_SEED="3", DET=det)
        subprocess.run([sys.executable, str(script)], env=env, check=True, capture_output=True)
        traces.append(trace)
    done = compare(tool, *traces)
    report = json.loads(done.stdout)
    assert any("deterministic_algorithms: false (run 0), true (run 1)" in w
               for w in report["warnings"]), report["warnings"]
