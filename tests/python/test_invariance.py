"""The PyTorch side of a batch-invariance sweep (lib/python/repro_audit/invariance_sweep.py; the
file in docs/trace-format.md, "Invariance sweeps"): what it finds on real models, checked against
forward passes run here without it (nn.Linear's output for a sample changes with the batch's size
on this CPU's BLAS, in addmm; LayerNorm and elementwise ops do not, and the control is seen), the
rows it digests (batch_dim 1, a batch folded into another dimension, a reduction over the batch),
the plan's precedence, the file's lines (and `repro-audit exec --invariance` reading them back to
the same verdict), padding (a masked mean over the sequence is invariant to it, an unmasked one
is not, first in aten.mean; rows cut back to the anchor's own positions), and the refusals, none
of which leaves a file."""
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


def test_linear_is_judged_as_its_plain_forward_passes_are():
    """Whether nn.Linear's row depends on its batch is the BLAS's doing (on the CI machine's CPU,
    OpenBLAS gives other bits from batch size 13 on, first in addmm; another CPU may not): the
    sweep must say exactly what plain forward passes without it say, and where they differ name
    the matrix product with the reference's inputs."""
    torch.manual_seed(0)
    model = torch.nn.Linear(512, 512)
    batch = torch.randn(299, 512)
    result = repro_audit.invariance(model, batch, anchor=5)
    alone = anchor_alone(model, batch, 5)
    assert result.reference.output_digest == tensor_digest(alone)
    plain = set()
    for probe in result.probes:
        if probe.config.control:
            continue
        with torch.no_grad():
            mine = model(probe_batch(batch, 5, probe.config))[probe.config.anchor_row]
        if not torch.equal(mine, alone):
            plain.add(probe.config)
            values = torch.frombuffer(bytearray(probe.output_values), dtype=torch.float32)
            assert torch.equal(values, mine)
            i = result.first_difference(probe)
            assert probe.ops[i].op == "aten.addmm.default"
            assert probe.ops[i].inputs == result.reference.ops[i].inputs
            assert [op.op for op in probe.ops[:i]] == ["aten.t.default"]
    assert set(result.differing) == plain
    assert result.control.op == "aten.addmm.default" and result.control_seen


class PowerOfBatchSize(torch.nn.Module):
    """x ** batch_size: a batch-dependent op by construction (the exponent a scalar argument, not
    a tensor input), whatever the CPU: the anchor alone gives x, a batch of 2 gives x * x."""

    def forward(self, x):
        return torch.relu(x).pow(x.shape[0])


def test_an_op_made_batch_dependent_is_found_and_named():
    torch.manual_seed(0)
    batch = torch.rand(8, 16) + 0.5
    result = repro_audit.invariance(PowerOfBatchSize(), batch, anchor=1, sizes=[1, 2, 3])
    assert not result.invariant
    assert {c.batch_size for c in result.differing} == {2, 3}
    probe = next(p for p in result.probes if p.config in result.differing)
    i = result.first_difference(probe)
    assert probe.ops[i].op == "aten.pow.Tensor_Scalar"
    assert probe.ops[i].inputs == result.reference.ops[i].inputs


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
class PowerOfBatchSize(torch.nn.Module):  # batch-dependent by construction, on any CPU
    def forward(self, x):
        return torch.relu(x).pow(x.shape[0])
model = {"linear": torch.nn.Linear(512, 512),
         "power": PowerOfBatchSize(),
         "layer_norm": torch.nn.Sequential(torch.nn.LayerNorm(512), torch.nn.ReLU())}[sys.argv[1]]
result = repro_audit.invariance(model, torch.rand(64, 512) + 0.5, anchor=5)
print(result.path, min([c.batch_size for c in result.differing], default=0))
"""


def test_the_tools_exec_reads_the_sweep_the_script_wrote(tool, tmp_path):
    """`repro-audit exec --invariance` (conftest.py's `tool`: REPRO_AUDIT_BINARY, as CTest sets
    it) reads the file back whole and comes to the verdict the sweep's own result holds. The
    caller's sweep variable is left out: exec sets the runs' own."""
    import sys
    script = tmp_path / "swept.py"
    script.write_text(SWEPT_SCRIPT)
    verdicts = {}
    for name in ("linear", "power", "layer_norm"):
        folder = tmp_path / name
        done = tool("exec", "--invariance", "--sizes", "1-4,13-17", "--json", "-", "--out",
                    folder, "--", sys.executable, script, name, timeout=300,
                    without=(inv.ENVIRONMENT,))
        assert done.returncode in (0, 1), done.stderr
        report = json.loads(done.stdout)["findings"]["invariance"]["data"]
        with open(folder / "invariance-command.log", encoding="utf-8") as f:
            written, first = f.read().split()[-2:]
        assert written == str(folder / "invariance.jsonl")
        assert report["control"]["detected"] is True
        verdicts[name] = (done.returncode, report, int(first))
    code, report, first = verdicts["power"]
    assert code == 1 and report["first_failing"]["batch_size"] == first == 2
    assert report["first_failing"]["first_break"]["op"] == "aten.pow.Tensor_Scalar"
    # nn.Linear's verdict is the BLAS's (see above): the tool says what the sweep's result says.
    code, report, first = verdicts["linear"]
    assert code == (1 if first else 0) and report["invariant"] is (first == 0)
    if first:
        assert report["first_failing"]["batch_size"] == first
        assert report["first_failing"]["first_break"]["op"] == "aten.addmm.default"
    code, report, first = verdicts["layer_norm"]
    assert code == 0 and report["invariant"] is True and first == 0


class MeanOverSequence(torch.nn.Module):
    """LayerNorm over features, then the mean over the sequence (dimension 1 of [S, T, F]):
    `masked` over each sample's own positions (the mask from the sweep: True at them), else
    over the padded length, the classic padding bug. `pooled`: the mean, one row a sample; else
    a sequence output, each position less the mean."""

    def __init__(self, masked, pooled=True, features=16):
        super().__init__()
        self.norm = torch.nn.LayerNorm(features)
        self.masked, self.pooled = masked, pooled

    def forward(self, x, mask):
        h = self.norm(x)
        if self.masked:
            m = mask.unsqueeze(-1).to(h.dtype)
            mean = (h * m).sum(1, keepdim=True) / m.sum(1, keepdim=True)
        else:
            mean = h.mean(1, keepdim=True)
        return (mean.squeeze(1) if self.pooled else h - mean) * 2.0


def ragged_batch(seed=5, lengths=(5, 7, 3, 9, 5, 6), features=16):
    torch.manual_seed(seed)
    return [torch.randn(n, features) for n in lengths]


def padded_forward(model, batch, anchor, config):
    """The probe's anchor output as the sweep documents it, run here plainly: the anchor and the
    other samples in order, cycling, each padded with zeros or cut to the probe's length, the
    mask True at each one's own positions; the anchor's row cut to its own positions."""
    length = config.padded_length or batch[anchor].shape[0]
    others = [i for i in range(len(batch)) if i != anchor]
    fill = [others[k % len(others)] for k in range(config.batch_size - 1)]
    order = fill[:config.anchor_row] + [anchor] + fill[config.anchor_row:]
    rows = [torch.nn.functional.pad(batch[i][:length], (0, 0, 0, length - min(
        length, batch[i].shape[0]))) for i in order]
    own = torch.tensor([min(length, batch[i].shape[0]) for i in order])
    mask = torch.arange(length)[None, :] < own[:, None]
    with torch.no_grad():
        row = model(torch.stack(rows), mask=mask)[config.anchor_row]
    return row if row.dim() == 1 else row[:batch[anchor].shape[0]]


@pytest.mark.parametrize("pooled", [True, False])
def test_padding_a_masked_mean_is_invariant_and_every_ops_rows_are_the_anchors(pooled):
    batch = ragged_batch()
    model = MeanOverSequence(masked=True, pooled=pooled)
    result = repro_audit.invariance(model, batch, anchor=0, sizes=[1, 2, 3, 5],
                                    neighbours=("batch", "noise"),
                                    padding=repro_audit.Padding(dim=0, mask_arg="mask"))
    # The anchor's length is 5: 6 and 10 by default, 7 and 9 the batch's own longer lengths.
    padded = [p for p in result.probes if p.config.padded_length]
    assert sorted({p.config.padded_length for p in padded}) == [6, 7, 9, 10]
    assert {p.config.neighbours for p in padded} == \
        {f"{way}+pad:{n}" for way in ("batch", "noise") for n in (6, 7, 9, 10)}
    assert result.invariant and result.control_seen is True
    assert result.control.op == "aten.native_layer_norm.default"
    for probe in result.probes[:-1]:  # every op's rows cut back to the anchor's 5 positions
        assert probe.ops == result.reference.ops, probe.config
    alone = padded_forward(model, batch, 0, inv.ProbeConfig(1, 0, "first", ""))
    assert result.reference.output_digest == tensor_digest(alone)
    for probe in padded:  # the verdict is the forward pass's: rerun here, no dispatch mode
        if probe.config.neighbours.startswith("batch"):
            assert torch.equal(padded_forward(model, batch, 0, probe.config), alone)
    assert len(result.reference.output_values) == 4 * (16 if pooled else 5 * 16)


@pytest.mark.parametrize("pooled", [True, False])
def test_padding_an_unmasked_mean_depends_on_the_padding_first_in_the_mean(pooled):
    batch = ragged_batch()
    model = MeanOverSequence(masked=False, pooled=pooled)
    result = repro_audit.invariance(model, batch, anchor=0, sizes=[1, 2, 3],
                                    padding=repro_audit.Padding(dim=0, mask_arg="mask",
                                                                lengths=[6, 12]))
    assert set(result.differing) == {p.config for p in result.probes
                                     if p.config.padded_length and not p.config.control}
    assert len(result.differing) == 2 * 5  # 5 configurations (sizes 2 and 3) x 2 lengths
    alone = padded_forward(model, batch, 0, inv.ProbeConfig(1, 0, "first", ""))
    for probe in result.probes[:-1]:  # the control's is moved by one ULP
        if probe.config.padded_length is None:
            assert probe.output_digest == result.reference.output_digest, probe.config
            continue
        mine = padded_forward(model, batch, 0, probe.config)
        assert not torch.equal(mine, alone)
        values = torch.frombuffer(bytearray(probe.output_values), dtype=torch.float32)
        assert torch.equal(values, mine.flatten())
        # The first op to part read the anchor's own positions as the reference did.
        i = result.first_difference(probe)
        assert probe.ops[i].op == "aten.mean.dim" and probe.ops[i].module == ""
        assert probe.ops[i].inputs == result.reference.ops[i].inputs
    assert result.control_seen is True


def test_padding_cuts_a_folded_batch_and_two_length_dimensions_back_to_the_anchor():
    class Scores(torch.nn.Module):  # nn.Linear folds [S, L, F] into [S * L, F]; scores [S, L, L]
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(8, 8)

        def forward(self, x, keep):
            h = self.proj(x)
            scores = torch.bmm(h, h.transpose(1, 2))
            scores = scores.masked_fill(~keep[:, None, :], float("-inf"))
            return torch.softmax(scores, -1).sum(1)  # [S, L]: a sequence output

    torch.manual_seed(6)
    model = Scores()
    batch = torch.randn(4, 3, 8)  # a tensor batch: every sample of length 3
    made = []

    def make_inputs(x, lengths):
        made.append(lengths.tolist())
        return (x,), {"keep": torch.arange(x.shape[1])[None, :] < lengths[:, None]}

    result = repro_audit.invariance(model, batch, anchor=2, sizes=[1, 2, 3], control=False,
                                    padding=repro_audit.Padding(dim=0, make_inputs=make_inputs))
    # A tensor batch: every sample is its own 3 long, padded (default lengths: 4 and 6).
    assert made[0] == [3] and all(set(lengths) == {3} for lengths in made)
    assert sorted({p.config.padded_length for p in result.probes} - {None}) == [4, 6]
    names = [op.op for op in result.reference.ops]
    addmm, bmm = names.index("aten.addmm.default"), names.index("aten.bmm.default")
    proj = model.proj
    for probe in result.probes:
        # [S * L, 8]: the anchor's chunk of L rows, its first 3: the reference's input row.
        assert probe.ops[addmm].inputs[1] == result.reference.ops[addmm].inputs[1], probe.config
        if not probe.config.padded_length:
            continue
        # bmm's output [S, L, L]: the anchor's row cut to 3 x 3, computed here without the sweep.
        x = torch.nn.functional.pad(batch[2], (0, 0, 0, probe.config.padded_length - 3))
        others = [0, 1, 3]
        fill = [others[k % 3] for k in range(probe.config.batch_size - 1)]
        rows = [torch.nn.functional.pad(batch[i], (0, 0, 0, probe.config.padded_length - 3))
                for i in fill]
        rows.insert(probe.config.anchor_row, x)
        with torch.no_grad():
            h = proj(torch.stack(rows))
            scores = torch.bmm(h, h.transpose(1, 2))[probe.config.anchor_row, :3, :3]
        assert probe.ops[bmm].output.digest == tensor_digest(scores), probe.config
        assert not probe.ops[bmm].output.whole
        assert len(probe.output_values) == 4 * 3  # the [L] output cut to the anchor's 3


def padding_refused(**overrides):
    arguments = dict(model=MeanOverSequence(masked=True), batch=ragged_batch(),
                     padding=repro_audit.Padding(dim=0, mask_arg="mask"), sizes=[1, 2])
    arguments.update(overrides)
    return arguments


class Flattened(torch.nn.Module):
    def forward(self, x):
        return x.flatten(1) * 2.0


@pytest.mark.parametrize("arguments, error, words", [
    (padding_refused(padding=repro_audit.Padding(dim=2, mask_arg="mask")), ValueError,
     "padding.dim 2 is out of range for a sample of shape [5, 16]"),
    (padding_refused(padding=repro_audit.Padding(dim=0, mask_arg="mask", lengths=[8, 4])),
     ValueError, "padding.lengths: 4 is not longer than the anchor's length 5"),
    (padding_refused(padding=repro_audit.Padding(dim=0, mask_arg="mask", lengths=[5])),
     ValueError, "padding.lengths: 5 is not longer than the anchor's length 5"),
    (padding_refused(padding=repro_audit.Padding(dim=0, mask_arg="mask", lengths=[0])),
     ValueError, "a batch size of 0"),
    (padding_refused(padding=repro_audit.Padding(dim=0, mask_arg="mask",
                                                 make_inputs=lambda x, n: ((x,), {}))),
     ValueError, "both mask_arg and make_inputs"),
    (padding_refused(batch=[torch.randn(5, 16), torch.randn(6, 8)]), ValueError,
     "sample 1 ([6, 8], torch.float32) differs from sample 0"),
    (padding_refused(padding=repro_audit.Padding(dim=0, make_inputs=lambda x, n: x)),
     TypeError, "padding.make_inputs must return (args, kwargs)"),
    (padding_refused(batch=[torch.ones(4, dtype=torch.long)] * 2,
                     padding=repro_audit.Padding(dim=0, value=0.5)), ValueError,
     "padding.value 0.5 is not a torch.int64"),
    (padding_refused(padding={"dim": 0}), TypeError, "padding must be a repro_audit.Padding"),
    (padding_refused(padding=None), TypeError, "batch must be a tensor"),
    (padding_refused(model=Flattened(), batch=torch.randn(3, 4, 2),
                     padding=repro_audit.Padding(dim=0)), ValueError,
     "padded to length 5, the model's output row of the anchor has shape [10]"),
])
def test_bad_padding_is_refused_and_no_file_is_written(tmp_path, arguments, error, words):
    with pytest.raises(error) as caught:
        repro_audit.invariance(out=tmp_path / "sweep.jsonl", **arguments)
    assert words in str(caught.value)
    assert os.listdir(tmp_path) == []


PADDED_SCRIPT = r"""
import sys, torch, repro_audit
sys.path.insert(0, sys.argv[2])
from test_invariance import MeanOverSequence, ragged_batch
result = repro_audit.invariance(MeanOverSequence(masked=sys.argv[1] == "masked"), ragged_batch(),
                                padding=repro_audit.Padding(dim=0, mask_arg="mask"))
print(result.path, len(result.differing))
"""


def test_the_tools_exec_reads_a_padded_sweep_to_the_same_verdict(tool, tmp_path):
    """`repro-audit exec --invariance` on the padded sweeps: the masked mean invariant with its
    control seen, the unmasked one not, first at a padded probe of size 2 and in aten.mean.dim."""
    import sys
    script = tmp_path / "padded.py"
    script.write_text(PADDED_SCRIPT)
    reports = {}
    for name in ("masked", "unmasked"):
        folder = tmp_path / name
        done = tool("exec", "--invariance", "--sizes", "1-3", "--json", "-", "--out", folder,
                    "--", sys.executable, script, name,
                    os.path.dirname(os.path.abspath(__file__)), timeout=300,
                    without=(inv.ENVIRONMENT,))
        with open(folder / "invariance-command.log", encoding="utf-8") as f:
            differing = int(f.read().split()[-1])
        report = json.loads(done.stdout)["findings"]["invariance"]["data"]
        assert report["control"]["detected"] is True
        reports[name] = (done.returncode, report, differing)
    code, report, differing = reports["masked"]
    assert code == 0 and report["invariant"] is True and differing == 0
    neighbours = {p["neighbours"] for p in report["probes"]}
    assert neighbours == {"batch"} | {f"batch+pad:{n}" for n in (6, 7, 9, 10)}
    code, report, differing = reports["unmasked"]
    failing = [p for p in report["probes"] if not p["equal"]]
    assert code == 1 and len(failing) == differing == 5 * 4  # sizes 2, 3 x 4 lengths
    assert all("+pad:" in p["neighbours"] for p in failing)
    first = report["first_failing"]
    assert (first["batch_size"], first["anchor_row"], first["neighbours"]) == \
        (2, 0, "batch+pad:6")
    assert first["first_break"]["op"] == "aten.mean.dim"
    assert first["first_break"]["kind"] == "output_differs"
