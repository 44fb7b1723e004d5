"""The perturbed group and prediction churn through the recorder (lib/python/repro_audit/
perturb.py, docs/statistics.md): the flipped bit is the only difference at the start, the header
names it, rec.eval's predictions reach the end record and predictions.npy whole, and `exec
--seeds all` reports the perturbed runs parted by design with the instability finding.
The tool runs through conftest.py's `tool` (REPRO_AUDIT_BINARY names the built binary; CTest sets
it)."""
import json
import struct
import sys

import pytest

torch = pytest.importorskip("torch")
numpy = pytest.importorskip("numpy")

from repro_audit import perturb  # noqa: E402
from repro_audit import digest as digests  # noqa: E402
from repro_audit.recorder import Recorder  # noqa: E402
from repro_audit.settings import Settings  # noqa: E402

SCRIPT = r"""
import torch, repro_audit
repro_audit.seed_everything()
torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
data = torch.Generator().manual_seed(1)
x_eval = torch.randn(64, 4, generator=data)
y_eval = (x_eval[:, 0] > 0).long() + (x_eval[:, 1] > 0.5).long()
with repro_audit.record(model, optimizer) as rec:
    for step in range(6):
        x = torch.randn(16, 4, generator=data)
        y = (x[:, 0] > 0).long() + (x[:, 1] > 0.5).long()
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        rec.step(batch=(x, y), loss=loss)
    with torch.no_grad():
        rec.eval(predictions=model(x_eval), labels=y_eval)
"""


def bits(t):
    return [struct.unpack("<I", struct.pack("<f", v))[0] for v in t.detach().reshape(-1).tolist()]


def test_choose_is_a_pure_function_of_seed_and_draw():
    sizes = [12, 3, 40]
    assert perturb.choose(sizes, 7, 0) == perturb.choose(sizes, 7, 0)
    picks = {perturb.choose(sizes, 7, draw) for draw in range(20)}
    assert len(picks) > 1
    for position, element in picks:
        assert 0 <= element < sizes[position]
    def draw(text=None):
        environment = {"REPRO_AUDIT_TRACE": "run-000.trace.jsonl"}
        if text is not None:
            environment["REPRO_AUDIT_PERTURB"] = text
        return Settings.from_environment(environment).perturb
    assert draw() is None
    assert draw("") is None
    assert draw("5") == 5
    with pytest.raises(ValueError, match="REPRO_AUDIT_PERTURB"):
        draw("-1")
    assert perturb.wanted("perturbed", 3) and not perturb.wanted("same", None)
    for group, draw in (("perturbed", None), ("same", 3)):
        with pytest.raises(ValueError, match="only it, flips a weight"):
            perturb.wanted(group, draw)


def test_one_bit_of_one_weight_differs_and_the_header_names_it(tmp_path):
    torch.manual_seed(3)
    plain = torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.Linear(4, 2))
    model = torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.Linear(4, 2))
    model.load_state_dict(plain.state_dict())
    trace = str(tmp_path / "run-004.trace.jsonl")
    rec = Recorder(model, None, settings=Settings(trace=trace, run=4, seed_group="perturbed",
                                                  perturb=4))
    rec.close()
    header = json.loads((tmp_path / "run-004.trace.jsonl").read_text().splitlines()[0])
    p = header["perturbation"]
    differing = []
    for (name, a), (_, b) in zip(plain.named_parameters(), model.named_parameters()):
        for i, (x, y) in enumerate(zip(bits(a), bits(b))):
            if x != y:
                differing.append((name, i, x ^ y, x, y))
    assert len(differing) == 1
    name, element, flipped, before, after = differing[0]
    assert (name, element, flipped) == (p["tensor"], p["element"], 1)
    assert (p["before_bits"], p["after_bits"]) == ("0x%08x" % before, "0x%08x" % after)


def test_eval_predictions_are_written_whole_beside_the_trace(tmp_path):
    record = perturb.EvalRecord()
    scores = torch.tensor([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]])
    record.eval(scores, labels=torch.tensor([1, 1, 1]), loss=torch.tensor(0.5))
    fields = record.end_fields(str(tmp_path / "run-002.trace.jsonl"))
    assert fields["eval_accuracy"] == pytest.approx(2 / 3)
    assert fields["eval_loss"] == 0.5
    p = fields["predictions"]
    assert (p["file"], p["samples"]) == ("run-002/predictions.npy", 3)
    values = numpy.load(tmp_path / "run-002" / "predictions.npy")
    assert values.dtype == numpy.int64 and values.tolist() == [1, 0, 1]
    assert p["digest"] == digests.tensor_digest(torch.tensor([1, 0, 1], dtype=torch.int64))


def test_exec_seeds_all_reports_the_perturbed_group_by_design(tool, tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    out = tmp_path / "out"
    done = tool("exec", "--runs", 2, "--seeds", "all", "--out", out, "--json", "-",
                "--", sys.executable, script)
    assert done.returncode == 0, done.stderr  # the same-seed runs agree; the others by design
    report = json.loads(done.stdout)
    assert report["verdict"]["compared_runs"] == [0, 1]
    found = report["instability"]
    assert [r["run"] for r in found["perturbed_runs"]] == [4, 5]
    for run in found["perturbed_runs"]:
        assert run["parts_at_perturbation"], run
        assert run["differing_initial_tensors"] == [run["tensor"]]
    metrics = {m["metric"]: m for m in found["metrics"]}
    assert set(metrics) == {"final_loss", "eval_accuracy", "disagreement"}
    # Deterministic same-seed runs agree bitwise: no spread, no churn among them.
    assert metrics["disagreement"]["groups"]["same"]["spread"] == 0
    assert metrics["final_loss"]["groups"]["same"]["spread"] == 0
    assert metrics["final_loss"]["verdict"] in ("repeatable", "no_spread")
    for run in range(6):
        end = json.loads((out / ("run-%03d.trace.jsonl" % run)).read_text().splitlines()[-1])
        assert end["predictions"]["samples"] == 64
        assert 0 <= end["eval_accuracy"] <= 1
    # The control (compare/perturbation_control.cpp): each flip was seen, so the verdict stands.
    control = report["findings"]["perturbation_control"]
    assert control["outcome"] == "passed"
    assert [r["run"] for r in control["data"]["runs"]] == [4, 5]
    assert all(r["seen"] for r in control["data"]["runs"])


def test_a_model_without_a_float32_weight_fails_at_the_first_run(tool, tmp_path):
    """Issue 61: --seeds all on a float64 model failed only when its perturbed runs started, after
    the other groups trained; every run now checks first, so run 0 fails at its start, named."""
    script = tmp_path / "train.py"
    script.write_text(SCRIPT.replace("model = torch.nn.Sequential(",
                                     "torch.set_default_dtype(torch.float64)\n"
                                     "model = torch.nn.Sequential("))
    out = tmp_path / "out"
    done = tool("exec", "--runs", 2, "--seeds", "all", "--jobs", 1, "--out", out,
                "--", sys.executable, script)
    assert done.returncode == 3, done.stderr
    assert "run 0:" in done.stderr and "has none (its parameters: float64)" in done.stderr
    assert "--seeds both" in done.stderr
    assert not (out / "run-001.trace.jsonl").exists()  # nothing trained after it


def test_without_a_perturbed_group_a_float64_model_is_not_checked(monkeypatch):
    params = [("w", torch.zeros(3, dtype=torch.float64))]
    def planned(text):
        return Settings.from_environment({"REPRO_AUDIT_TRACE": "run-000.trace.jsonl",
                                          perturb.PLANNED: text}).perturb_planned
    perturb.check_perturbable(torch, params, planned(""))
    with pytest.raises(ValueError, match="float64"):
        perturb.check_perturbable(torch, params, planned("1"))
    perturb.check_perturbable(torch, [("w", torch.zeros(3))], planned("1"))
