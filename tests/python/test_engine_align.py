"""The engine against PyTorch, op by op (`repro-audit compare A B --align`, docs/equivalence.md
"The engine against PyTorch"; issue 63, case (d)). The engine runs the Keras convnet of the
cross-check (tests/python/test_engine_crosscheck.py: Fashion-MNIST, dropout rates 0, batch 64),
one step with op records; the example script replays it in PyTorch from the engine's initial
weights and batch order (`--from-engine`), recording its modules under the engine's layer names
(`layers=`), with op records; a second replay flips one bit of one initial weight (the perturbed
group's flip), the control. `compare PYTORCH ENGINE CONTROL --align` reads PyTorch's records as
the engine's ops (a convolution and its relu as one conv2d.forward, convolution_backward as the
engine's three backward ops, Adadelta's ops on a parameter as one optimizer.update), pairs every
engine op of the step but the batch, and names the first where the two part.

Where they part is what the two frameworks' kernels compute, which neither promises (tests/
README.md): on the machine this was written on (Debian's torch 1.13, the engine at avx2-fma),
at conv2d_1's conv2d.forward, an op that read equal inputs (the batch, the weights and conv2d_0's
output, bit for bit) and wrote another output: its 288 products per output element are summed in
another order by the engine's kernel than by ATen's, and the first conv's 9 agree. With the engine
at REPRO_AUDIT_ISA=portable, where each product is rounded before it is added, it is conv2d_0's
already; on machines where the forward passes agree bit for bit (docs/pytorch.md "Cross-check
with the engine"), an op of the backward. So the test takes the truth from the two traces' own
records (the first engine forward op whose output is not PyTorch's at the end of the same layer)
and asserts that the alignment names exactly it, as an op whose inputs agreed: a wrong wiring of
the families would part at an op's inputs instead. The control parts at the first op that reads
the flipped weight, whichever the draw flips: that is exact on every machine.

The tool runs through conftest.py's `tool` (REPRO_AUDIT_BINARY names the built binary)."""
import json
import os
import subprocess
import sys

import pytest

from keras_replay import keras_replay_spec

pytest.importorskip("torch")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "docs", "examples", "pytorch", "train_fashion_mnist.py")


def one_step_spec():
    return keras_replay_spec("keras-align", steps=1, limit=256)


def replay(audit_environment, engine, trace, **perturbed):
    """The example's replay of the engine's run, one step, recording step 0's ops into `trace`."""
    trace.parent.mkdir()
    env = audit_environment(REPRO_AUDIT_TRACE=trace, REPRO_AUDIT_TRACE_OPS="0",
                            REPRO_AUDIT_RUN=perturbed.pop("run", 1), **perturbed)
    done = subprocess.run([sys.executable, EXAMPLE, "--from-engine", str(engine), "--steps", "1",
                           "--threads", "1"], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return trace


@pytest.fixture(scope="module")
def runs(tmp_path_factory, tool, audit_environment):
    folder = tmp_path_factory.mktemp("engine_align")
    (folder / "spec.json").write_text(json.dumps(one_step_spec()))
    done = tool("-q", "run", folder / "spec.json", "--runs", "1", "--save-batches",
                "--allow-empty", "--trace-ops", "0", "--out", folder / "engine")
    assert done.returncode == 0, done.stderr
    engine = folder / "engine"
    pytorch = replay(audit_environment, engine, folder / "pytorch" / "run-000.trace.jsonl")
    control = replay(audit_environment, engine, folder / "control" / "run-002.trace.jsonl",
                     run=2, REPRO_AUDIT_SEED_GROUP="perturbed", REPRO_AUDIT_PERTURB=2)
    return {"engine": engine / "run-000.trace.jsonl", "pytorch": pytorch, "control": control}


def step_ops(trace):
    """The header and step 0's op records of a trace file."""
    lines = [json.loads(line) for line in trace.read_text().splitlines()]
    step = next(r for r in lines if r.get("record") == "step" and r["step"] == 0)
    return lines[0], step["ops"]


def first_forward_difference(engine_ops, pytorch_ops):
    """(layer, op) of the first engine forward op whose output is not PyTorch's at the end of the
    same layer's forward (its last record there before the loss: the relu after a convolution, a
    detach of it digests alike), or None where every forward op agrees."""
    ends = {}
    for record in pytorch_ops:
        if record["layer"] == "loss":
            break
        ends[record["layer"]] = record["out"][0]
    for record in engine_ops:
        if record["op"].endswith(".forward") and ends.get(record["layer"]) != record["out"][0]:
            return record["layer"], record["op"]
    return None


def align(tool, *traces):
    done = tool("compare", *traces, "--align", "--json", "-")
    return done.returncode, json.loads(done.stdout) if done.stdout else None, done.stderr


def test_the_engine_and_pytorch_part_at_the_op_their_records_say(tool, runs):
    code, report, stderr = align(tool, runs["pytorch"], runs["engine"], runs["control"])
    assert code == 1, stderr
    finding = report["findings"]["op_alignment"]
    data = finding["data"]
    assert data["reading"] == ["pytorch", "engine"]
    _, engine_ops = step_ops(runs["engine"])
    _, pytorch_ops = step_ops(runs["pytorch"])
    # Every engine op of the step pairs with PyTorch's but the batch (PyTorch indexes its own
    # tensors in the script); its softmax_cross_entropy is two ops, the loss and its gradient.
    (step,) = data["steps"]
    assert step["aligned"] == len(engine_ops) + 1 - 1, data
    assert all(s["b"]["ops"] in ([], ["batch"]) for s in data["stretches"]), data["stretches"]
    assert data["fused"] >= 10 and data["left_out"] > 0, data
    parting = data["parting"]
    assert parting["kind"] == "op" and parting["step"] == 0, parting  # its inputs agreed
    expected = first_forward_difference(engine_ops, pytorch_ops)
    if expected is not None:
        assert (parting["layer"], parting["op"]) == expected, (parting, expected)
        assert f"in {expected[0]}: its 1st {expected[1]}" in finding["summary"]
    else:  # the forward passes agree: a backward op parts (or the loss's gradient)
        assert not parting["op"].endswith(".forward"), parting
    engine_record = engine_ops[parting["record_b"]]
    assert engine_record["op"] == parting["op"] and engine_record["layer"] == parting["layer"]
    if parting["op"] == "conv2d.forward":  # PyTorch's run: the convolution, then its relu
        assert parting["run_a"] == ["aten.convolution.default", "aten.relu.default"], parting
        assert pytorch_ops[parting["record_a"]]["op"] == "aten.relu.default"
    # The engine keeps no op outputs beside its trace: the magnitude says so.
    assert "B, the engine's run, keeps no op outputs" in parting["magnitude"]["note"]


def test_the_control_parts_at_the_first_op_reading_the_flipped_weight(tool, runs):
    code, report, stderr = align(tool, runs["pytorch"], runs["engine"], runs["control"])
    assert code == 1, stderr
    finding = report["findings"]["op_alignment"]
    assert finding["data"]["control"]["parted"] and finding["data"]["control"]["step"] == 0
    _, control_ops = step_ops(runs["control"])
    _, pytorch_ops = step_ops(runs["pytorch"])
    # One program twice, one weight apart: the records are one sequence, and the first whose
    # inputs differ is the first to read the flipped weight (the one the header names).
    first_reader = next(c for c, p in zip(control_ops, pytorch_ops) if c["in"] != p["in"])
    control = finding["data"]["control"]
    assert control["op"] == first_reader["op"], control
    assert control["layer"] == first_reader["layer"], control


def test_modules_not_named_as_the_engine_names_its_layers_are_refused(tool, runs, tmp_path):
    """The replay's trace with its convolutions' modules named by their Sequential index (as a
    model recorded without `layers=` names them): no engine conv would pair, and the alignment
    refuses, naming the engine's layers it cannot find and the modules it found."""
    renamed = tmp_path / "renamed.trace.jsonl"
    text = runs["pytorch"].read_text()
    for index, layer in enumerate(["conv2d_0", "conv2d_1"]):
        text = text.replace(f'"layer":"{layer}"', f'"layer":"model.{2 * index}"')
    renamed.write_text(text)
    code, report, stderr = align(tool, renamed, runs["engine"])
    assert code == 2 and report is None, stderr
    assert "only in the engine (B): conv2d_0, conv2d_1;" in stderr, stderr
    assert "the PyTorch run's modules (A): model.0, model.2, maxpool2d_0" in stderr, stderr
    assert "layers={" in stderr, stderr
