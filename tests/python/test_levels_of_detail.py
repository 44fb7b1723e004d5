"""Levels of detail in the PyTorch recorder (lib/python/repro_audit/detail.py, docs/trace-format.md
"Levels of detail"): with REPRO_AUDIT_TENSOR_DIGESTS (`exec --tensor-digests`) the steps outside
the plan record one digest per category, the trace is version 4, the C++ reader takes it, and
`compare` finds a divergence at such a step as one, with a next step that names the tensor.
The tool runs through conftest.py's `tool` (REPRO_AUDIT_BINARY names the built binary)."""
import json
import os
import shlex
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "lib", "python"))
from repro_audit import detail  # noqa: E402
from repro_audit.settings import Settings  # noqa: E402
from repro_audit.digest import digest_of_digests  # noqa: E402



def test_plans_read_as_the_cli_writes_them():
    plan = detail.TensorDigestPlan.parse("every:1000,5000:5100,7")
    assert plan.every == 1000 and plan.windows == [(5000, 5100), (7, 8)]
    assert plan.at(0) and plan.at(2000) and not plan.at(1)
    assert plan.at(5099) and not plan.at(5100) and plan.at(7) and not plan.at(8)
    assert plan.header() == {"every": 1000, "windows": [{"first": 5000, "last": 5100},
                                                        {"first": 7, "last": 8}]}
    assert detail.TensorDigestPlan.parse("10:").windows == [(10, None)]
    assert detail.TensorDigestPlan.parse("all").all()
    assert detail.TensorDigestPlan.parse("every:1").all()
    assert not detail.TensorDigestPlan.parse("none").at(0)
    trace = {"REPRO_AUDIT_TRACE": "run-000.trace.jsonl"}  # the variables of a run of an audit
    assert Settings.from_environment(trace).tensor_digests is None
    assert Settings.from_environment(dict(trace, **{detail.ENVIRONMENT: "all"})).tensor_digests \
        is None
    assert Settings.from_environment(dict(trace, **{detail.ENVIRONMENT: "every:9"})
                                     ).tensor_digests.every == 9
    for bad, says in (("every:0", "period"), ("5:5", "holds no step"), ("often", "not a level"),
                      ("none,3", "excludes"), ("every:2,every:3", "period")):
        with pytest.raises(ValueError, match=says):
            detail.TensorDigestPlan.parse(bad)


SCRIPT = r"""
import os, torch, repro_audit
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3), torch.nn.Linear(3, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
bump = int(os.environ.get("BUMP_AT", "-1"))
with repro_audit.record(model, optimizer) as rec:
    for step in range(8):
        x = torch.randn(8, 4)
        optimizer.zero_grad()
        loss = model(x).square().mean()
        loss.backward()
        if step == bump and os.environ["REPRO_AUDIT_RUN"] == "1":
            with torch.no_grad():  # a changed last bit: what a nondeterministic kernel does
                w = model[2].weight.view(-1)
                w[0] = torch.nextafter(w[0], torch.tensor(10.0))
        optimizer.step()
        rec.step(batch=(x,), loss=loss, epoch=step // 4)
"""


def run_exec(tool, tmp_path, *options, bump=None):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    bumped = {"BUMP_AT": bump} if bump is not None else {}
    out = tmp_path / "audit"
    done = tool("exec", "--runs", 2, "--out", out, "--json", tmp_path / "report.json", *options,
                "--", sys.executable, script, timeout=300, **bumped)
    return done, out


def records(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def test_exec_records_the_plan_and_the_reader_takes_it(tool, tmp_path):
    pytest.importorskip("torch")
    done, out = run_exec(tool, tmp_path, "--tensor-digests", "every:3")
    assert done.returncode == 0, done.stderr
    lines = records(out / "run-000.trace.jsonl")
    header, steps = lines[0], [r for r in lines if r["record"] == "step"]
    assert header["format_version"] == 4
    assert header["tensor_digests"] == {"every": 3, "windows": []}
    assert [("grads" in s) for s in steps] == [s["step"] % 3 == 0 for s in steps]
    coarse = steps[1]
    assert set(coarse) >= {"grads_digest", "weights_digest", "buffers_digest"}
    assert not {"grads", "weights", "buffers"} & set(coarse)
    # The end record keeps the final tensors; combined, they are the last (per category) step's.
    end = lines[-1]
    assert steps[-1]["step"] == 7 and "weights_digest" in steps[-1]
    assert digest_of_digests(end["weights"]) == steps[-1]["weights_digest"]
    assert digest_of_digests(end["buffers"]) == steps[-1]["buffers_digest"]
    with open(out / "audit.json", encoding="utf-8") as f:
        assert json.load(f)["tensor_digests"] == "every:3"


def test_a_divergence_at_a_per_category_step_is_found_and_the_rerun_names_the_tensor(
        tool, tmp_path):
    pytest.importorskip("torch")
    done, _ = run_exec(tool, tmp_path, "--tensor-digests", "every:3", bump=4)
    assert done.returncode == 1, done.stderr
    with open(tmp_path / "report.json", encoding="utf-8") as f:
        report = json.load(f)
    first = report["first_divergence"]
    assert first["step"] == 4 and first["category"] == "weights" and first["per_category"]
    assert first["tensor"] is None
    assert report["next_step"]["tensor_digests"] == "4:5"
    assert "--tensor-digests every:3" in report["next_step"]["command"]
    assert "--tensor-digests 4:5" in report["next_step"]["command"]
    assert "one digest for all of them at this step" in done.stdout
    # The printed next step, run word for word (issue 61: every next step is a command the tool
    # accepts), records step 4 per tensor in a folder of its own and names the weight.
    words = shlex.split(report["next_step"]["command"])
    assert words[0] == "repro-audit"
    done = tool(words[1], "--json", tmp_path / "rerun.json", *words[2:], timeout=300, BUMP_AT=4)
    assert done.returncode == 1, done.stderr
    with open(tmp_path / "rerun.json", encoding="utf-8") as f:
        first = json.load(f)["first_divergence"]
    assert first["step"] == 4 and first["tensor"] == "2.weight" and "per_category" not in first
