"""The recorder's weight snapshots (lib/python/repro_audit/snapshots.py; REPRO_AUDIT_SNAPSHOT_STEPS,
which `exec --versus` sets): each file read back by an independent reader (engine_run's
read_safetensors, which reads the engine's files) holds the float32 parameters bit for bit, in
order, with the engine's metadata; a float64 parameter is left out; a trace named otherwise has
no snapshot folder; the variable's bad values are refused naming it. The C++ reader reads them
in tests/python/test_equivalence.py (the floor per parameter)."""
import json
import struct

import pytest

torch = pytest.importorskip("torch")

from repro_audit import settings, snapshots  # noqa: E402
from repro_audit.engine_run import read_safetensors  # noqa: E402


def test_a_snapshot_reads_back_bit_for_bit(tmp_path):
    trace = str(tmp_path / "run-003.trace.jsonl")
    weight = torch.tensor([[1.0, -2.5], [float("inf"), -0.0]])
    bias = torch.tensor([3.0e-38, 1.0e-45])  # a normal and a subnormal: their bits must survive
    wide = torch.zeros(2, dtype=torch.float64)
    path = snapshots.write_snapshot(trace, 7, [("dense.weight", weight), ("dense.bias", bias),
                                               ("wide", wide)], "ab" * 16)
    assert path == str(tmp_path / "run-003" / "weights-step-7.safetensors")
    tensors = read_safetensors(path)
    assert list(tensors) == ["dense.weight", "dense.bias"]  # float64 left out, order kept
    assert tensors["dense.weight"].tobytes() == weight.numpy().tobytes()
    assert tensors["dense.bias"].tobytes() == bias.numpy().tobytes()
    with open(path, "rb") as f:
        length = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(length))
    assert header["__metadata__"] == {"audit_id": "ab" * 16, "point": "step-7"}
    assert length % 8 == 0
    assert not (tmp_path / "run-003" / "weights-step-7.safetensors.tmp").exists()


def test_an_empty_model_and_a_trace_named_otherwise(tmp_path):
    path = snapshots.write_snapshot(str(tmp_path / "r.trace.jsonl"), 0, [], None)
    assert read_safetensors(path) == {}
    assert snapshots.write_snapshot(str(tmp_path / "trace.txt"), 0, [], None) is None


@pytest.mark.parametrize("text", ["-1", "1,x", "1.5", " 2", "99999999999999999999"])
def test_bad_snapshot_steps_are_refused_naming_the_variable(text):
    environment = {settings.TRACE: "t.trace.jsonl", settings.SNAPSHOT_STEPS: text}
    with pytest.raises(ValueError, match="REPRO_AUDIT_SNAPSHOT_STEPS"):
        settings.Settings.from_environment(environment)


def test_snapshot_steps_are_read_sorted_and_unique():
    environment = {settings.TRACE: "t.trace.jsonl", settings.SNAPSHOT_STEPS: "8,0,2,2"}
    assert settings.Settings.from_environment(environment).snapshot_steps == (0, 2, 8)
