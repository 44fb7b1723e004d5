"""The writer-reader contract (docs/trace-format.md, "What the recorder writes"): every trace the
recorder can write passes the C++ tool's reader, and what the reader would refuse the recorder
refuses when it is made, naming the variable or argument, never after the training.

A property test over the edges: losses finite, NaN, +-Inf, -0.0 and subnormal; parameters 0-dim,
empty and of every dtype a model holds (f16, bf16, f32, f64, integers, bool); buffers; optimizer
state 0-dim (Adam's step) and lists (LBFGS); seeds and op windows at their limits. Each trace is
compared with itself by the built binary (conftest.py's `tool`: REPRO_AUDIT_BINARY), which reads
it whole or refuses it.
"""
import itertools
import json
import os

import pytest

torch = pytest.importorskip("torch")
import repro_audit  # noqa: E402  (PYTHONPATH=lib/python)
from repro_audit import recorder as recorders  # noqa: E402


LOSSES = [1.5, float("nan"), float("inf"), float("-inf"), -0.0, 1e-45]
SEEDS = ["0", str(2**64 - 1)]
WINDOWS = [None, (0, 1), (0, None), (1, 2**63 - 1)]


class EdgeModel(torch.nn.Module):
    """Parameters at the edges of what a header can say, and buffers."""

    def __init__(self, dtype_params):
        super().__init__()
        self.linear = torch.nn.Linear(3, 2)
        self.norm = torch.nn.BatchNorm1d(2)
        self.temperature = torch.nn.Parameter(torch.tensor(1.0))  # 0-dim
        self.empty = torch.nn.Parameter(torch.zeros(0, 4))  # zero-size
        if dtype_params:
            for dtype in (torch.float16, torch.bfloat16, torch.float64):
                name = "p_" + str(dtype).replace("torch.", "")
                self.register_parameter(name, torch.nn.Parameter(torch.ones(2, dtype=dtype)))
            self.register_parameter("counts", torch.nn.Parameter(
                torch.arange(3, dtype=torch.int32), requires_grad=False))
            self.register_buffer("mask", torch.tensor([True, False]))
            self.register_buffer("scale", torch.tensor(0.5, dtype=torch.float64))

    def forward(self, x):
        return self.norm(self.linear(x)) * self.temperature


def make_optimizer(kind, model):
    params = [p for p in model.parameters() if p.requires_grad and p.dtype == torch.float32]
    if kind == "adam":
        return torch.optim.Adam(params, lr=0.01)
    if kind == "lbfgs":
        return torch.optim.LBFGS(params, lr=0.1, history_size=3, max_iter=2)
    return torch.optim.SGD(params, lr=0.1, momentum=0.9)


def record_run(path, loss_value, optimizer_kind, dtype_params, window, steps=3):
    """Records `steps` steps of a small model into `path`; the loss recorded at step 1 is
    `loss_value` (the others the model's own)."""
    torch.manual_seed(0)
    model = EdgeModel(dtype_params)
    optimizer = make_optimizer(optimizer_kind, model)
    x = torch.randn(8, 3)
    with repro_audit.Recorder(model, optimizer, str(path), ops=window) as rec:
        for step in range(steps):
            def closure():
                optimizer.zero_grad()
                loss = model(x).square().mean()
                loss.backward()
                return loss
            loss = optimizer.step(closure) if optimizer_kind == "lbfgs" else None
            if loss is None:
                loss = closure()
                optimizer.step()
            rec.step(batch=(x,), loss=loss_value if step == 1 else loss, epoch=step // 2)
    return path


def read_by_tool(tool, *traces):
    return tool("compare", "--json", "-", "--no-magnitude", *traces)


def lines_of(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


CASES = list(itertools.product(LOSSES, ["adam", "lbfgs", "sgd"], [False, True]))


@pytest.mark.parametrize("loss_value,optimizer_kind,dtype_params", CASES)
def test_every_trace_the_recorder_writes_the_reader_reads(tool, tmp_path, monkeypatch, loss_value,
                                                          optimizer_kind, dtype_params):
    case = CASES.index((loss_value, optimizer_kind, dtype_params))
    monkeypatch.setenv("REPRO_AUDIT_SEED", SEEDS[case % len(SEEDS)])
    window = WINDOWS[case % len(WINDOWS)]
    trace = record_run(tmp_path / "run-000.trace.jsonl", loss_value, optimizer_kind,
                       dtype_params, window)
    done = read_by_tool(tool, trace, trace)  # a trace against itself: read whole, or refused
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["verdict"]["identical"]
    records = lines_of(trace)
    header, step1, end = records[0], [r for r in records if r.get("step") == 1][0], records[-1]
    assert header["format_version"] == 3
    assert end["status"] == "completed"
    # JSON has no NaN: a loss that is not finite is null beside its exact bits.
    import math
    assert (step1["loss"] is None) == (not math.isfinite(loss_value))
    names = {p["name"]: p for p in header["params"]}
    assert names["temperature"]["shape"] == [] and names["empty"]["shape"] == [0, 4]
    if dtype_params:
        assert names["p_bfloat16"]["dtype"] == "bf16" and names["counts"]["dtype"] == "i32"
    buffers = {b["name"]: b for b in header["buffers"]}
    assert buffers["norm.num_batches_tracked"] == {"name": "norm.num_batches_tracked",
                                                   "shape": [], "dtype": "i64"}
    assert "buffers" in report["categories"]
    if optimizer_kind == "adam":
        assert "step:temperature" in header["optimizer_state"]  # 0-dim state is recorded
    if optimizer_kind == "lbfgs":
        assert "old_dirs:temperature" in header["optimizer_state"]  # a list of tensors


def test_seeds_and_windows_past_their_limits_are_refused_at_the_start(tmp_path, monkeypatch):
    model = torch.nn.Linear(2, 2)
    monkeypatch.setenv("REPRO_AUDIT_TRACE", str(tmp_path / "run-000.trace.jsonl"))
    for variable, value in (("REPRO_AUDIT_SEED", "-1"), ("REPRO_AUDIT_SEED", str(2**64)),
                            ("REPRO_AUDIT_SEED", "1e23"), ("REPRO_AUDIT_RUN", "-1"),
                            ("REPRO_AUDIT_KEEP_BYTES", "-5"), ("REPRO_AUDIT_KEEP_BYTES", "lots"),
                            ("REPRO_AUDIT_TRACE_OPS", "0:%d" % 2**63),
                            ("REPRO_AUDIT_SEED_GROUP", "other"), ("REPRO_AUDIT_ID", "XYZ")):
        with monkeypatch.context() as m:
            m.setenv(variable, value)
            with pytest.raises(ValueError, match=variable):
                repro_audit.record(model)
            if variable == "REPRO_AUDIT_SEED":
                with pytest.raises(ValueError, match=variable):
                    repro_audit.seed_everything()
    assert not list(tmp_path.iterdir())


def test_a_name_the_trace_cannot_hold_fails_at_the_start(tmp_path):
    model = torch.nn.Linear(2, 2)
    with pytest.raises(ValueError, match="parameter name"):
        repro_audit.Recorder(model, None, str(tmp_path / "t.trace.jsonl"),
                             names=["ok", "bad\udc80"])
    assert not list(tmp_path.iterdir())


@pytest.mark.skipif(not os.path.exists("/dev/null"), reason="needs /dev/null")
def test_the_trace_is_never_renamed_over_a_device_or_a_link(tmp_path):
    model = torch.nn.Linear(2, 2)
    with pytest.raises(ValueError, match="not a trace file"):
        repro_audit.Recorder(model, None, "/dev/null")
    target = tmp_path / "elsewhere"
    target.write_text("keep me")
    (tmp_path / "link.trace.jsonl").symlink_to(target)
    with pytest.raises(ValueError, match="symbolic link"):
        repro_audit.Recorder(model, None, str(tmp_path / "link.trace.jsonl"))
    with pytest.raises(ValueError, match="does not exist"):
        repro_audit.Recorder(model, None, str(tmp_path / "no-such-folder" / "t.trace.jsonl"))
    assert target.read_text() == "keep me"


def test_epochs_only_go_forward_and_a_skipped_epoch_is_an_empty_one(tool, tmp_path):
    model = torch.nn.Linear(2, 2)
    trace = tmp_path / "run-000.trace.jsonl"
    with repro_audit.Recorder(model, None, str(trace)) as rec:
        rec.step(loss=1.0, epoch=0)
        rec.step(loss=2.0, epoch=2)
        with pytest.raises(ValueError, match="epochs only go forward"):
            rec.step(loss=3.0, epoch=1)
    assert [r["steps"] for r in lines_of(trace) if r["record"] == "epoch"] == [1, 0, 1]
    done = read_by_tool(tool, trace, trace)
    assert done.returncode == 0, done.stderr


def test_step_needs_its_loss_with_or_without_an_audit(tmp_path):
    model = torch.nn.Linear(2, 2)
    for rec in (recorders.NoOpRecorder(),
                repro_audit.Recorder(model, None, str(tmp_path / "t.trace.jsonl"))):
        with pytest.raises(TypeError, match="loss="):
            rec.step(batch=(torch.zeros(1, 2),))
        with pytest.raises(TypeError):
            rec.step(batch=(torch.zeros(1, 2),), los=1.0)  # a typo fails without an audit too
        with pytest.raises(ValueError, match="epoch"):
            rec.step(loss=1.0, epoch=-1)
        rec.close()
