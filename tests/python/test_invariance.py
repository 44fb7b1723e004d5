"""The PyTorch side of a batch-invariance sweep (lib/python/repro_audit/invariance_sweep.py; the
file in docs/trace-format.md, "Invariance sweeps"): what it finds on real models, checked against
forward passes run here without it (nn.Linear's output for a sample changes with the batch's size
on this CPU's BLAS, in addmm; LayerNorm and elementwise ops do not, and the control is seen), the
rows it digests (batch_dim 1, a batch folded into another dimension, a reduction over the batch),
the plan's precedence, the file's lines (and `repro-audit exec --invariance` reading them back to
the same verdict), and the refusals, none of which leaves a file."""
import base64
import json
import os
import re

import pytest

torch = pytest.importorskip("torch")
import repro_audit  # noqa: E402  (PYTHONPATH=lib/python)
from repro_audit import invariance_sweep as inv  # noqa: E402
from repro_audit.digest import tensor_digest  # noqa: E402
from repro_audit.invariance_ops import one_ulp_up  # noqa: E402

HEX32 = re.compile(r"^[0-9a-f]{32}$")


@pytest.fixture(autouse=True)
def no_audit_plan(monkeypatch):
    monkeypatch.delenv(inv.ENVIRONMENT, raising=False)


class Scale(torch.nn.Module):
    def forward(self, x):
        return x * 1.75 + 0.5


def layer_norm_model(features=512):
    return torch.nn.Sequential(torch.nn.LayerNorm(features), torch.nn.ReLU(), Scale())


def anchor_alone(model, batch, anchor, batch_dim=0):
    with torch.no_grad():
        return model(batch.narrow(batch_dim, anchor, 1)).select(batch_dim, 0)


def probe_batch(batch, anchor, config):
    """The probe's input as the sweep documents it: the other samples in order, cycling."""
    others = [i for i in range(batch.shape[0]) if i != anchor]
    fill = [others[k % len(others)] for k in range(config.batch_size - 1)]
    order = fill[:config.anchor_row] + [anchor] + fill[config.anchor_row:]
    return batch[order]


def test_linear_differs_from_a_batch_size_on_first_in_addmm():
    torch.manual_seed(0)
    model = torch.nn.Linear(512, 512)
    batch = torch.randn(299, 512)
    result = repro_audit.invariance(model, batch, anchor=5)
    assert result.differing, "nn.Linear(512, 512) gave every batch size the same bits"
    first = min(c.batch_size for c in result.differing)
    assert first > 1
    for probe in result.probes:
        if probe.config.batch_size < first and not probe.config.control:  # the reference's bits
            assert probe.output_digest == result.reference.output_digest, probe.config
    # The verdict is the forward pass's, not the sweep's: rerun here without any dispatch mode.
    alone = anchor_alone(model, batch, 5)
    assert result.reference.output_digest == tensor_digest(alone)
    config = next(c for c in result.differing if c.batch_size == first)
    with torch.no_grad():
        mine = model(probe_batch(batch, 5, config))[config.anchor_row]
    assert not torch.equal(mine, alone)
    # The first op whose anchor row differs is the matrix product, its inputs the reference's.
    probe = next(p for p in result.probes if p.config == config)
    i = result.first_difference(probe)
    assert probe.ops[i].op == "aten.addmm.default"
    assert probe.ops[i].inputs == result.reference.ops[i].inputs
    assert [op.op for op in probe.ops[:i]] == ["aten.t.default"]
    values = torch.frombuffer(bytearray(probe.output_values), dtype=torch.float32)
    assert torch.equal(values, mine)
    assert result.control.op == "aten.addmm.default" and result.control_seen


def test_layer_norm_and_elementwise_ops_are_invariant_and_the_control_is_seen():
    torch.manual_seed(1)
    model = layer_norm_model()
    batch = torch.randn(40, 512)
    result = repro_audit.invariance(model, batch, anchor=7, neighbours=("batch", "noise"))
    assert result.invariant and result.differing == []
    assert {p.config.neighbours for p in result.probes} == {"batch", "noise"}
    control = result.probes[-1]
    assert control.config.control and result.probes[0].config.batch_size == 2
    for probe in result.probes[:-1]:  # every op's rows are the reference's, inputs and outputs
        assert probe.ops == result.reference.ops, probe.config
    assert result.control == inv.ControlOp(0, "aten.native_layer_norm.default", "0")
    assert control.config == inv.ProbeConfig(2, 0, "first", "batch", control=True)
    changed = control.ops[0]
    assert changed.inputs == result.reference.ops[0].inputs
    assert changed.output != result.reference.ops[0].output
    assert result.control_seen is True
    assert result.first_difference(control) == 0


def test_a_conv_net_reads_the_same_anchor_rows_and_weights_at_every_size():
    torch.manual_seed(2)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(),
                                torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                                torch.nn.Linear(8, 4))
    batch = torch.randn(20, 3, 12, 12)
    result = repro_audit.invariance(model, batch, anchor=3, sizes=[1, 2, 3, 8, 16])
    conv = result.reference.ops[0]
    assert conv.op == "aten.convolution.default" and conv.module == "0"
    assert [r.whole for r in conv.inputs] == [False, True, True]  # the anchor's image; weights
    assert conv.inputs[0].digest == tensor_digest(batch[3])
    for probe in result.probes:
        assert probe.ops[0].inputs == conv.inputs, probe.config
    assert result.reference.output_digest == tensor_digest(anchor_alone(model, batch, 3))


def test_a_reduction_over_the_batch_has_no_row_and_makes_the_sample_depend_on_its_batch():
    class Centre(torch.nn.Module):
        def forward(self, x):
            return x - x.mean(0, keepdim=True)

    batch = torch.randn(10, 6)
    result = repro_audit.invariance(Centre(), batch, sizes=[1, 2, 3], positions=["first"])
    mean = [op for op in result.reference.ops if op.op == "aten.mean.dim"][0]
    assert mean.output is None
    for probe in result.probes:
        assert [op.output is None for op in probe.ops] == \
            [op.output is None for op in result.reference.ops]
    assert [c.batch_size for c in result.differing] == [2, 3]


class SequenceFirst(torch.nn.Module):
    """(seq, batch, feature) in and out: the batch along dimension 1."""

    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(16)

    def forward(self, x):
        return (self.norm(x.permute(1, 0, 2)) * 2.0).permute(1, 0, 2)


def test_batch_dim_1_takes_rows_along_it_in_input_and_output(tmp_path):
    torch.manual_seed(3)
    batch = torch.randn(5, 12, 16)
    out = tmp_path / "sweep.jsonl"
    result = repro_audit.invariance(SequenceFirst(), batch, anchor=4, batch_dim=1,
                                    sizes=[1, 2, 3, 7, 12], out=out)
    assert result.invariant
    for probe in result.probes[:-1]:
        assert probe.ops == result.reference.ops, probe.config
    assert result.reference.ops[0].inputs[0].digest == tensor_digest(batch[:, 4])
    alone = anchor_alone(SequenceFirst(), batch, 4, batch_dim=1)
    assert result.reference.output_digest == tensor_digest(alone)
    header = json.loads(out.read_text().splitlines()[0])
    assert (header["batch_dim"], header["sample_shape"], header["output_shape"]) == \
        (1, [5, 16], [5, 16])


def test_a_batch_folded_into_another_dimension_keeps_the_anchors_chunk():
    class Folded(torch.nn.Module):
        def forward(self, x):  # (batch, seq, feature) -> (batch * seq, feature) and back
            b, t, f = x.shape
            return torch.relu(x.reshape(b * t, f) * 3.0).reshape(b, t, f)

    batch = torch.randn(9, 4, 5)
    result = repro_audit.invariance(Folded(), batch, anchor=2, sizes=[1, 2, 5])
    mul = [op for op in result.reference.ops if op.op == "aten.mul.Tensor"][0]
    assert mul.output is not None and not mul.output.whole
    assert mul.output.digest == tensor_digest(batch[2] * 3.0)
    for probe in result.probes[:-1]:
        assert probe.ops == result.reference.ops, probe.config


def test_the_file_is_the_documented_lines_and_nothing_else_is_left(tmp_path):
    torch.manual_seed(4)
    out = tmp_path / "sweep.jsonl"
    result = repro_audit.invariance(layer_norm_model(32), torch.randn(6, 32), sizes=[1, 2, 4, 5],
                                    out=str(out))
    assert result.path == str(out) and os.listdir(tmp_path) == ["sweep.jsonl"]
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    header, reference, probes, end = lines[0], lines[1], lines[2:-1], lines[-1]
    assert set(header) == {"kind", "version", "source", "model", "mode", "device", "dtype",
                           "batch_dim", "sample_shape", "output_shape", "control"}
    assert (header["kind"], header["version"], header["source"], header["model"]) == \
        ("repro-audit invariance sweep", 1, "pytorch", "Sequential")
    assert (header["mode"], header["device"], header["dtype"]) == ("", "cpu", "torch.float32")
    assert end == {"end": {"probes": len(probes)}} and len(probes) == result.probe_count
    assert reference["probe"] == {"batch_size": 1, "anchor_row": 0, "position": "first",
                                  "neighbours": "", "control": False}
    rows = {(p["probe"]["batch_size"], p["probe"]["anchor_row"]) for p in probes[:-1]}
    assert rows == {(2, 0), (2, 1), (4, 0), (4, 2), (4, 3), (5, 0), (5, 2), (5, 4)}
    assert [p["probe"]["control"] for p in probes] == [False] * (len(probes) - 1) + [True]
    for line in [reference] + probes:
        assert set(line) == {"probe", "output", "ops"}
        assert HEX32.match(line["output"]["digest"])
        assert len(base64.b64decode(line["output"]["values"])) == 4 * 32
        for op in line["ops"]:
            assert set(op) == {"op", "module", "inputs", "output"}
            for row in op["inputs"] + ([op["output"]] if op["output"] else []):
                assert set(row) == {"digest", "whole"} and HEX32.match(row["digest"])
    control = header["control"]
    assert reference["ops"][control["op_index"]]["op"] == control["op"]
    assert control == {"op_index": 0, "op": "aten.native_layer_norm.default", "module": "0"}


def test_the_audits_plan_wins_and_sizes_are_merged(tmp_path, monkeypatch):
    planned = tmp_path / "planned.jsonl"
    monkeypatch.setenv(inv.ENVIRONMENT, json.dumps({
        "out": str(planned), "sizes": [1, 2, 5], "positions": ["last"], "neighbours": ["noise"],
        "control": False}))
    result = repro_audit.invariance(layer_norm_model(8), torch.randn(4, 8), sizes=[3],
                                    out=tmp_path / "mine.jsonl")
    assert result.path == str(planned) and os.listdir(tmp_path) == ["planned.jsonl"]
    assert [(p.config.batch_size, p.config.anchor_row, p.config.neighbours)
            for p in result.probes] == [(2, 1, "noise"), (3, 2, "noise"), (5, 4, "noise")]
    assert result.control is None and result.control_seen is None
    assert json.loads(planned.read_text().splitlines()[0])["control"] is None


def test_without_a_plan_or_out_the_sweep_runs_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = repro_audit.invariance(layer_norm_model(8), torch.randn(3, 8))
    assert result.path is None and os.listdir(tmp_path) == []
    assert [p.config.batch_size for p in result.probes if p.config.position == "first"] == \
        inv.default_sizes()[1:] + [2]  # and the control, which repeats the first probe
    assert inv.default_sizes() == list(range(1, 18)) + [31, 32, 33, 63, 64]


class Pair(torch.nn.Module):
    def forward(self, x):
        return x, x


class FirstRow(torch.nn.Module):
    def forward(self, x):
        return x[:1] * 2.0


def refused(**overrides):
    arguments = dict(model=layer_norm_model(8), batch=torch.randn(4, 8))
    arguments.update(overrides)
    return arguments


@pytest.mark.parametrize("arguments, error, words", [
    (refused(sizes=[1, 0, 4]), ValueError, "a batch size of 0"),
    (refused(sizes=[-3]), ValueError, "a batch size of -3"),
    (refused(sizes=[2.5]), TypeError, "not a whole number"),
    (refused(anchor=4), ValueError, "anchor 4 is out of range"),
    (refused(batch_dim=2), ValueError, "batch_dim 2 is out of range"),
    (refused(batch=[[1.0] * 8] * 4), TypeError, "batch must be a tensor"),
    (refused(model=Pair()), TypeError, "returned a tuple"),
    (refused(model=FirstRow()), ValueError, "returned shape [1, 8]"),
    (refused(positions=["centre"]), ValueError, "'centre' is not one of"),
    (refused(batch=torch.randn(1, 8)), ValueError, "holds the anchor alone"),
    (refused(batch=torch.ones(4, 8, dtype=torch.long), neighbours=["noise"]), ValueError,
     "needs a floating batch"),
    (refused(model=torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.BatchNorm1d(8))),
     ValueError, "model.eval()"),
])
def test_bad_input_is_refused_and_no_file_is_written(tmp_path, arguments, error, words):
    with pytest.raises(error) as caught:
        repro_audit.invariance(out=tmp_path / "sweep.jsonl", **arguments)
    assert words in str(caught.value)
    assert os.listdir(tmp_path) == []


def test_a_plan_in_the_environment_that_is_not_the_documented_json_is_refused(monkeypatch):
    for text, words in (("{", "is not JSON"), ('{"sizes": [2], "max": 3}', "unknown keys max"),
                        ('{"control": "yes"}', "control must be true or false")):
        monkeypatch.setenv(inv.ENVIRONMENT, text)
        with pytest.raises(ValueError, match=re.escape(words)):
            repro_audit.invariance(layer_norm_model(8), torch.randn(4, 8))


def test_the_models_modes_and_hooks_are_restored_even_when_a_probe_fails(tmp_path):
    class FailsAtFive(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.drop = torch.nn.Dropout(0.5)
            self.frozen = torch.nn.Linear(8, 8)

        def forward(self, x):
            if x.shape[0] == 5:
                raise RuntimeError("five")
            return self.frozen(self.drop(x))

    model = FailsAtFive()
    model.frozen.eval()  # a submodule the script froze stays frozen, the others in train mode
    flags = [m.training for m in model.modules()]
    # In train mode dropout would change the sample with its batch: the sweep runs in eval mode.
    result = repro_audit.invariance(model, torch.randn(6, 8), sizes=[1, 2, 3, 4])
    assert result.reference.ops[0].op == "aten.t.default"  # no dropout op: eval mode
    assert [m.training for m in model.modules()] == flags
    with pytest.raises(RuntimeError, match="five"):
        repro_audit.invariance(model, torch.randn(6, 8), sizes=[1, 5], out=tmp_path / "s.jsonl")
    assert [m.training for m in model.modules()] == flags and os.listdir(tmp_path) == []
    for m in model.modules():
        assert not m._forward_hooks and not m._forward_pre_hooks


def test_one_ulp_up_moves_every_float_toward_plus_infinity():
    values = [0.0, -0.0, 1.0, -1.0, 3.0e-39, float("inf"), float("-inf"), 65504.0]
    for dtype in (torch.float32, torch.float64):
        x = torch.tensor(values, dtype=dtype)
        expected = torch.nextafter(x, torch.full_like(x, float("inf")))
        expected[5] = torch.finfo(dtype).max  # +inf itself: toward zero
        assert torch.equal(one_ulp_up(torch, x), expected)
    half = torch.tensor([0.0, -0.0, 1.0, -1.0, float("inf")], dtype=torch.float16)
    moved = one_ulp_up(torch, half).view(torch.int16).tolist()
    assert moved == [0x0001, 0x0001, 0x3C01, 0xBBFF - 0x10000, 0x7BFF]  # -1.0 is 0xBC00
    assert torch.isnan(one_ulp_up(torch, torch.tensor([float("nan")]))).all()


SWEPT_SCRIPT = r"""
import sys, torch, repro_audit
torch.manual_seed(0)
model = {"linear": torch.nn.Linear(512, 512),
         "layer_norm": torch.nn.Sequential(torch.nn.LayerNorm(512), torch.nn.ReLU())}[sys.argv[1]]
result = repro_audit.invariance(model, torch.randn(64, 512), anchor=5)
print(result.path, min([c.batch_size for c in result.differing], default=0))
"""


def test_the_tools_exec_reads_the_sweep_the_script_wrote(tmp_path):
    """`repro-audit exec --invariance` (the built binary: REPRO_AUDIT_BINARY, as CTest sets it)
    reads the file back whole and comes to the verdict the sweep's own result holds."""
    import subprocess
    import sys
    binary = os.environ.get("REPRO_AUDIT_BINARY", "")
    if not binary or not os.access(binary, os.X_OK):
        pytest.skip("REPRO_AUDIT_BINARY does not name the built repro-audit binary")
    script = tmp_path / "swept.py"
    script.write_text(SWEPT_SCRIPT)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    env.pop(inv.ENVIRONMENT, None)
    verdicts = {}
    for name in ("linear", "layer_norm"):
        folder = tmp_path / name
        done = subprocess.run([binary, "exec", "--invariance", "--sizes", "1-4,13-17", "--json",
                               "-", "--out", str(folder), "--", sys.executable, str(script),
                               name], env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode in (0, 1), done.stderr
        report = json.loads(done.stdout)["findings"]["invariance"]["data"]
        with open(folder / "invariance-command.log", encoding="utf-8") as f:
            written, first = f.read().split()[-2:]
        assert written == str(folder / "invariance.jsonl")
        assert report["control"]["detected"] is True
        verdicts[name] = (done.returncode, report, int(first))
    code, report, first = verdicts["linear"]
    assert code == 1 and report["first_failing"]["batch_size"] == first
    assert report["first_failing"]["first_break"]["op"] == "aten.addmm.default"
    code, report, first = verdicts["layer_norm"]
    assert code == 0 and report["invariant"] is True and first == 0
