"""Op records from PyTorch (lib/python/repro_audit/op_records.py) through `repro-audit exec --trace-ops`:
a script whose one run-dependent op is a sum computed in one thread or two, built to part by one
ULP at step 1 on every machine (scripts/one_op_depends_on_run.py), is localised to that aten op,
in its module, at that step, with its magnitude from the outputs the runs kept; a seeded script
has no root cause; each op's place (module, autograd, optimizer, script) is where it ran, under
the layer name `layers=` gives its module;
a random op run from another seed is explained by its generator state; the kept outputs are used
only whole and only for their own run. The tool runs through conftest.py's `tool`
(REPRO_AUDIT_BINARY names the built binary; CTest sets it)."""
import json
import os
import re
import sys

import pytest

torch = pytest.importorskip("torch")
from repro_audit import op_records  # noqa: E402  (PYTHONPATH=lib/python)

HERE = os.path.dirname(os.path.abspath(__file__))
ONE_OP = os.path.join(HERE, "scripts", "one_op_depends_on_run.py")
GOLDEN = os.path.join(HERE, "golden", "one_op_root_cause.txt")

# A seeded script: a conv, a dense layer, dropout, Adam; the data order from the seed.
SEEDED = r"""
import os, torch, repro_audit
torch.manual_seed(0)  # the weights: the same in every run
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                            torch.nn.Dropout(0.5), torch.nn.Linear(2 * 4 * 4, 3))
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
rec = repro_audit.Recorder.from_env(model, optimizer)
repro_audit.seed_everything()  # the dropout masks: from the run's seed
data = torch.Generator().manual_seed(5)
x = torch.randn(32, 1, 6, 6, generator=data)
y = torch.randint(0, 3, (32,), generator=data)
for i in range(0, 32, 8):
    optimizer.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x[i:i + 8]), y[i:i + 8])
    loss.backward()
    optimizer.step()
    rec.step(batch=(x[i:i + 8], y[i:i + 8]), loss=loss)
"""


def audit(tool, tmp_path, script, *options, **env):
    """`repro-audit exec` of `script` into tmp_path/out, the keywords in its environment; (exit
    code, JSON report, stderr). The caller's ATEN_CPU_CAPABILITY, OPENBLAS_CORETYPE and thread
    counts pass through: nothing here may depend on them (tests/README.md), and CI runs these
    tests under several (tests/python/run_under_cpu_settings.sh)."""
    if not os.path.isabs(script):
        path = tmp_path / "train.py"
        path.write_text(script)
        script = str(path)
    done = tool("exec", "--out", tmp_path / "out", "--json", "-", *options, "--", sys.executable,
                script, **env)
    return done.returncode, json.loads(done.stdout) if done.stdout else None, done.stderr


def steps(trace):
    return [json.loads(line) for line in trace.read_text().splitlines()
            if json.loads(line)["record"] == "step"]


def test_the_one_run_dependent_op_is_the_root_cause(tool, tmp_path):
    code, report, stderr = audit(tool, tmp_path, ONE_OP, "--runs", "3", "--trace-ops", "0:2",
                                 "--expect", "any")
    assert code == 0, stderr
    assert not report["verdict"]["identical"]
    causes = report["root_causes"]
    assert len(causes) == 1, causes  # run 2 sums in one thread, as run 0: identical to it
    cause = causes[0]
    assert cause["kind"] == "op" and cause["runs"] == [1]
    assert (cause["op"], cause["layer"]) == ("aten.sum.default", "model.norm")
    # Step 1, where run 1 first sums in two threads (by construction, on every machine), is the
    # first whose gradients differ: the division by the sum moves every nonzero activation.
    assert cause["step"] == 1 == report["first_divergence"]["step"]
    assert cause["differing_inputs"] == [] and cause["differing_outputs"] == ["output 0 (f32[])"]
    assert (cause["chain"][0]["op"], cause["chain"][0]["layer"]) == ("aten.div.Tensor",
                                                                     "model.norm")
    magnitude = cause["magnitude"]
    assert magnitude["kept"] == 2
    (measured,) = magnitude["runs"]
    (output,) = measured["outputs"]
    assert output["elements"] == 1 and output["differing"] == 1 and output["max_ulp"] == 1
    # The kept values are the runs' own: their digests are the ones the traces recorded.
    assert (tmp_path / "out" / "run-000" / "kept-outputs.bin").exists()


# The one line of the root cause that PyTorch's kernels decide, not the tool: how many of the
# step's later ops the one-ULP change reaches, and which after the first (the division by the sum,
# whose every nonzero output moves by construction). Its count and the ops it names depend on
# the bits of the Linear layers on this CPU; the number of later ops does not.
LATER_OPS = re.compile(r"^  then (\d+) of the (\d+) later ops of the step differ: "
                       r"aten\.div\.Tensor \(model\.norm\)(.*)$", re.M)


def machine_independent(section):
    """The root-cause section with the chain's kernel-decided part checked for its structure (at
    least the division differs, at most every later op) and replaced by placeholders."""
    later = LATER_OPS.search(section)
    assert later, section
    assert 1 <= int(later.group(1)) <= int(later.group(2)), later.group(0)
    return LATER_OPS.sub(r"  then <n> of the \2 later ops of the step differ: "
                         r"aten.div.Tensor (model.norm)<...>", section)


def test_golden_root_cause_text(tool, tmp_path):
    """Everything the golden text holds is exact on every machine: the step and op where the sum
    parts, its place, the sums' one ULP (1 against 1 + 2^-23: max |difference| and relative both
    2^-23), the runs whose kept values measured it; the chain line is checked for its structure."""
    code, _, stderr = audit(tool, tmp_path, ONE_OP, "--runs", "2", "--trace-ops", "0:2",
                            "--expect", "any")
    assert code == 0, stderr
    text = tool("compare", "--expect", "any", tmp_path / "out").stdout
    section = text[text.index("root cause:"):]
    section = machine_independent(section[:section.index("\n\n") + 1])
    if os.environ.get("REPRO_AUDIT_UPDATE_GOLDEN"):
        with open(GOLDEN, "w") as f:
            f.write(section)
    with open(GOLDEN) as f:
        assert section == f.read()


def test_a_seeded_script_has_no_root_cause_and_its_records_round_trip(tool, tmp_path):
    code, report, stderr = audit(tool, tmp_path, SEEDED, "--runs", "2", "--trace-ops", "1:3")
    assert code == 0, stderr
    assert report["verdict"]["identical"] and report["root_causes"] == []
    assert report["op_window"] == "1:3"
    trace = tmp_path / "out" / "run-000.trace.jsonl"
    header = json.loads(trace.read_text().splitlines()[0])
    assert header["format_version"] == 3 and header["trace_ops"] == {"first": 1, "last": 3}
    recorded = [("ops" in s) for s in steps(trace)]
    assert recorded == [False, True, True, False]
    ops = steps(trace)[1]["ops"]
    for record in ops:
        assert len(record["in"]) == len(record["in_types"])
        assert len(record["out"]) == len(record["out_types"])
    # The same records in both runs: digests of values, never of addresses or fresh memory.
    other = steps(tmp_path / "out" / "run-001.trace.jsonl")[1]["ops"]
    assert ops == other


def places(ops):
    return {(r["op"], r["layer"]) for r in ops}


def test_each_op_is_placed_where_it_ran(tool, tmp_path):
    code, _, stderr = audit(tool, tmp_path, SEEDED, "--runs", "1", "--trace-ops", "0:1",
                            "--allow-empty")
    assert code == 0, stderr
    ops = steps(tmp_path / "out" / "run-000.trace.jsonl")[0]["ops"]
    seen = places(ops)
    assert ("aten.convolution.default", "model.0") in seen
    assert ("aten.convolution_backward.default", "model.0") in seen
    assert ("aten.threshold_backward.default", "model.1") in seen
    assert ("aten.addmm.default", "model.4") in seen
    assert ("aten.mm.default", "model.4") in seen  # the dense layer's backward
    assert ("aten.nll_loss_forward.default", "script") in seen  # F.cross_entropy: no module
    assert ("aten.nll_loss_backward.default", "autograd") in seen
    assert any(layer == "optimizer" and op.startswith("aten.addcdiv_") for op, layer in seen)
    # Dropout draws from the generator: its state is an input of the record.
    (bernoulli,) = [r for r in ops if r["op"].startswith("aten.bernoulli_")]
    assert bernoulli["layer"] == "model.3" and bernoulli["in_types"][-1] == "generator"
    # torch.empty_like's memory is unwritten: recorded as such, not by its bits.
    (empty,) = [r for r in ops if r["op"] == "aten.empty_like.default"]
    assert empty["out_types"] == ["f32[8,32]"]
    assert not any(r["op"].startswith("profiler.") for r in ops)


def test_modules_renamed_by_layers_are_recorded_under_their_new_names(tool, tmp_path):
    """`layers=` names a module's ops as another program names its layers (the engine's: its
    conv2d_0 is a convolution and the ReLU after it), forward and backward; modules it does not
    name keep their paths. A path that is no module of the model is refused before any record."""
    script = SEEDED.replace(
        "repro_audit.Recorder.from_env(model, optimizer)",
        "repro_audit.Recorder.from_env(model, optimizer, layers={'model.0': 'conv', "
        "'model.1': 'conv', 'model.4': 'head'})")
    code, _, stderr = audit(tool, tmp_path, script, "--runs", "1", "--trace-ops", "0:1",
                            "--allow-empty")
    assert code == 0, stderr
    seen = places(steps(tmp_path / "out" / "run-000.trace.jsonl")[0]["ops"])
    for op, layer in [("aten.convolution.default", "conv"), ("aten.relu.default", "conv"),
                      ("aten.convolution_backward.default", "conv"),
                      ("aten.threshold_backward.default", "conv"), ("aten.addmm.default", "head"),
                      ("aten.mm.default", "head"), ("aten.nll_loss_forward.default", "script")]:
        assert (op, layer) in seen, (op, layer)
    assert not {layer for _, layer in seen} & {"model.0", "model.1", "model.4"}, seen
    assert any(layer == "model.3" for _, layer in seen)  # the dropout: not renamed
    import repro_audit
    with pytest.raises(ValueError, match="layers= renames model.9, not a module of the model"):
        repro_audit.record(torch.nn.Linear(2, 2), trace=str(tmp_path / "bad.trace.jsonl"),
                           layers={"model.9": "head"})
    assert not (tmp_path / "bad.trace.jsonl").exists()


def test_another_seed_is_told_by_the_generator_state(tool, tmp_path):
    # The weights made alike, the dropout masks drawn from a seed of the run's own.
    script = SEEDED.replace("repro_audit.seed_everything()",
                            "torch.manual_seed(int(os.environ['REPRO_AUDIT_RUN']))")
    code, report, stderr = audit(tool, tmp_path, script, "--runs", "2", "--trace-ops", "0:1",
                                 "--expect", "any")
    assert code == 0, stderr
    (cause,) = report["root_causes"]
    assert cause["kind"] == "outside_ops" and cause["step"] == 0
    assert cause["op"].startswith("aten.bernoulli_") and cause["layer"] == "model.3"
    assert cause["differing_inputs"] == ["the generator state"]
    assert "seeded differently" in cause["detail"]


def test_kept_outputs_only_whole_and_only_their_runs(tool, tmp_path):
    code, _, stderr = audit(tool, tmp_path, ONE_OP, "--runs", "2", "--trace-ops", "0:2",
                            "--expect", "any")
    assert code == 0, stderr
    out = tmp_path / "out"
    kept = out / "run-001" / "kept-outputs.bin"

    def compared():
        done = tool("compare", "--expect", "any", "--json", "-", out)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    whole = kept.read_bytes()
    kept.write_bytes(whole[:-3])  # cut short
    report = compared()
    assert any("kept-outputs.bin: damaged" in f for f in report["ignored_snapshots"])
    magnitude = report["root_causes"][0]["magnitude"]
    assert magnitude["runs"] == [] and "run 1" in magnitude["note"]
    # Another run's file (run 0's, copied over run 1's): named, not used.
    kept.write_bytes((out / "run-000" / "kept-outputs.bin").read_bytes())
    report = compared()
    assert any("kept by another run" in f for f in report["ignored_snapshots"])
    kept.write_bytes(whole)
    assert compared()["root_causes"][0]["magnitude"]["runs"]


def test_no_budget_no_magnitude_and_the_note_says_why(tool, tmp_path):
    code, report, stderr = audit(tool, tmp_path, ONE_OP, "--runs", "2", "--trace-ops", "0:2",
                                 "--expect", "any",
                                 REPRO_AUDIT_KEEP_BYTES="0")
    assert code == 0, stderr
    magnitude = report["root_causes"][0]["magnitude"]
    assert magnitude["runs"] == [] and "not kept" in magnitude["note"]
    assert not (tmp_path / "out" / "run-000" / "kept-outputs.bin").exists()


def test_a_window_in_the_callers_environment_is_not_the_audits(tool, tmp_path):
    code, report, stderr = audit(tool, tmp_path, SEEDED, "--runs", "2",
                                 REPRO_AUDIT_TRACE_OPS="0:2")
    assert code == 0, stderr
    header = json.loads((tmp_path / "out" / "run-000.trace.jsonl").read_text().splitlines()[0])
    assert header["format_version"] == 3 and "trace_ops" not in header


def test_window_parsing():
    assert op_records.parse_window("0:2") == (0, 2)
    assert op_records.parse_window("3:") == (3, None)
    assert op_records.parse_window("all") == (0, None)
    assert op_records.parse_window("5") == (5, 6)  # step 5 alone, as --trace-ops 5
    for bad in ("2:2", "x", "1-3", ":3", "-1:2", str(op_records.MAX_STEP)):
        with pytest.raises(ValueError, match="REPRO_AUDIT_TRACE_OPS"):
            op_records.parse_window(bad)


def test_the_suggested_rerun_keeps_the_command_after_the_double_dash(tool, tmp_path):
    code, report, stderr = audit(tool, tmp_path, ONE_OP, "--runs", "2", "--expect", "any")
    assert code == 0, stderr
    text = tool("compare", "--expect", "any", tmp_path / "out").stdout
    step = report["first_divergence"]["step"]
    done = tool("exec", "--out", tmp_path / "again", "--runs", 2, "--expect", "any", "--",
                sys.executable, ONE_OP)
    line = [l for l in done.stdout.splitlines() + done.stderr.splitlines() if "--trace-ops" in l]
    assert line, done.stdout + text
    window = "%d:%d" % (step, step + 1)
    assert re.search(r"--trace-ops %s --out \S*again-ops -- \S*python\S* \S*one_op" % window,
                     line[0]), line[0]


def test_a_digest_is_reused_only_while_nothing_wrote_the_bytes():
    """A view of digested bytes reuses their digest; after an op writes through another view,
    every tensor on that storage is digested again."""
    from repro_audit import op_digests
    recording = op_records.OpRecording(torch, torch.nn.Linear(1, 1), None, (0, None))
    aten = torch.ops.aten
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    flat = recording.call(aten.view.default, (base, [12]), {})
    recording.call(aten.add_.Scalar, (flat, 1.0), {})  # writes base's bytes through the view
    recording.call(aten.clone.default, (base,), {})
    view, add, clone = recording._records
    assert view["out"][0] == view["in"][0]  # the same bytes, flat: the same digest
    assert add["out"][0] == op_digests.flat_digest(torch, base)
    assert clone["in"][0] == op_digests.flat_digest(torch, base) != view["in"][0]
