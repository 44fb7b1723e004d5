"""DataLoader workers and their random streams (lib/python/repro_audit/workers.py): a dataset
that keeps a numpy Generator gives every forked worker the same stream, which the trace records
and `repro-audit compare` names; seeded per worker in worker_init_fn, the streams differ and
nothing is flagged; unseeded too, the same-seed runs' batches part and the report's next step is
the loader. The loader's own worker_init_fn still runs when the recorder installs its own."""
import json
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("numpy")

# Two passes over a dataset of 16 samples with 2 workers; `FIX` seeds the dataset's Generator
# per worker the way docs/pytorch.md shows; `OWN_INIT` gives the loader a worker_init_fn of its
# own, which must still run (it writes a file per worker).
SCRIPT = r"""
import os, sys, numpy as np, torch, repro_audit
repro_audit.seed_everything(default=1)
torch.set_num_threads(1)

class Augmented(torch.utils.data.Dataset):
    def __init__(self):
        # Copied into every worker as it is; UNSEEDED: another state in every run too.
        self.rng = np.random.default_rng(None if os.environ.get("UNSEEDED") else 0)
        self.x = torch.randn(16, 4, generator=torch.Generator().manual_seed(2))
        self.y = torch.arange(16) % 3
    def __len__(self):
        return 16
    def __getitem__(self, i):
        noise = torch.from_numpy(self.rng.normal(size=4).astype(np.float32))
        return self.x[i] + noise, self.y[i]

def own_init(worker_id):
    info = torch.utils.data.get_worker_info()
    if os.environ.get("FIX"):
        info.dataset.rng = np.random.default_rng(info.seed)
    if os.environ.get("OWN_INIT"):
        open(os.path.join(os.environ["OWN_INIT"], f"worker-{worker_id}"), "w").close()

model = torch.nn.Linear(4, 3)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
rec = repro_audit.Recorder.from_env(model, optimizer)
loader = torch.utils.data.DataLoader(Augmented(), batch_size=4, num_workers=2,
                                     worker_init_fn=own_init,
                                     generator=torch.Generator().manual_seed(3))
rec.watch_loader(loader)
for epoch in range(2):
    for x, y in loader:
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        rec.step(batch=(x, y), loss=loss, epoch=epoch)
"""


@pytest.fixture
def run_script(tmp_path, audit_environment):
    """Runs SCRIPT as run `run` of an audit, outside exec, the keywords in its environment: the
    path of its trace."""
    def run_it(run, **env_extra):
        script = tmp_path / "train.py"
        script.write_text(SCRIPT)
        trace = tmp_path / f"run-{run:03d}.trace.jsonl"
        env = audit_environment(REPRO_AUDIT_TRACE=trace, REPRO_AUDIT_RUN=run, **env_extra)
        done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                              text=True)
        assert done.returncode == 0, done.stderr
        return trace
    return run_it


def end_record(trace):
    return json.loads(trace.read_text().splitlines()[-1])


def test_workers_sharing_a_generator_are_recorded_alike(run_script):
    trace = run_script(0)
    workers = end_record(trace)["loader_workers"]
    assert sorted((w["loader_pass"], w["worker"]) for w in workers) == sorted(
        (p, w) for p in {x["loader_pass"] for x in workers} for w in (0, 1))
    passes = {w["loader_pass"] for w in workers}
    assert len(passes) == 2  # a new base seed per pass over the data
    for p in passes:
        both = [w["streams"] for w in workers if w["loader_pass"] == p]
        # The dataset's Generator is the same state in both workers; PyTorch's own streams are
        # reseeded per worker and differ.
        assert both[0]["dataset.rng"] == both[1]["dataset.rng"]
        assert both[0]["torch"] != both[1]["torch"]
        assert both[0]["numpy"] != both[1]["numpy"]
    assert not os.path.exists(str(trace) + ".workers")  # the side file is gone


def test_seeded_per_worker_the_streams_differ(tmp_path, run_script):
    """The script's own worker_init_fn runs first (here it reseeds dataset.rng per worker), and
    the record shows what the worker then draws from."""
    own = tmp_path / "own"
    own.mkdir()
    trace = run_script(0, FIX="1", OWN_INIT=str(own))
    assert sorted(os.listdir(own)) == ["worker-0", "worker-1"]  # the loader's own init ran
    workers = end_record(trace)["loader_workers"]
    for p in {w["loader_pass"] for w in workers}:
        both = [w["streams"] for w in workers if w["loader_pass"] == p]
        assert both[0]["dataset.rng"] != both[1]["dataset.rng"]


def test_compare_names_the_shared_generator(tool, run_script):
    traces = [run_script(run) for run in range(2)]
    done = tool("compare", "--json", "-", *traces)
    assert done.returncode == 0, done.stderr  # the runs agree: the bug is in each of them
    report = json.loads(done.stdout)
    shared = report["loader_workers"]["shared_streams"]
    assert [(s["stream"], s["workers"]) for s in shared] == [("dataset.rng", [0, 1])]
    assert shared[0]["runs"] == [0, 1] and shared[0]["passes"] == 2
    text = tool("compare", *traces).stdout
    assert "workers 0-1 start from the same state of the random stream dataset.rng" in text
    assert "unless it is reseeded per sample or never drawn from" in text


def test_a_killed_runs_leftovers_do_not_stop_the_next(tmp_path, run_script):
    """A worker killed mid-write leaves a cut line in the side file; the next run of the same
    trace starts anyway and records only its own workers."""
    trace = tmp_path / "run-000.trace.jsonl"
    (tmp_path / "run-000.trace.jsonl.workers").write_text('{"worker": 0, "loader_pa')
    run_script(0)
    workers = end_record(trace)["loader_workers"]
    assert len(workers) == 4  # 2 passes of 2 workers: this run's, nothing left over


def test_op_records_leave_out_how_batches_arrive_from_workers(tool, run_script):
    """Batches reach the main process in whatever order the workers finish, and each is rebuilt
    from shared memory when it arrives: those ops are not recorded, so the records of runs whose
    workers finished in another order still pair op for op."""
    traces = [run_script(run, REPRO_AUDIT_TRACE_OPS="all") for run in range(3)]
    records = [json.loads(line).get("ops") for line in traces[0].read_text().splitlines()
               if json.loads(line)["record"] == "step"]
    assert all(ops for ops in records)
    assert not any(r["op"].startswith("aten.set_") for ops in records for r in ops)
    done = tool("compare", "--expect", "identical", "--json", "-", *traces)
    assert done.returncode == 0, done.stdout[-2000:]
    assert json.loads(done.stdout)["root_causes"] == []


def test_batches_that_part_send_the_next_step_to_the_loader(tmp_path, tool, run_script):
    """The first-hour case of issue 40: a dataset generator shared by the workers and unseeded,
    so the same-seed runs' batches part at step 0. The next step is the loader, in text, JSON and
    HTML, naming both faults of the stream; --trace-ops would only say that no op is blamed."""
    traces = [str(run_script(run, UNSEEDED="1")) for run in range(2)]
    html = tmp_path / "report.html"
    done = tool("compare", "--expect", "identical", "--json", "-", "--html", html, *traces)
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["first_divergence"]["category"] == "batches"
    assert report["first_divergence"]["step"] == 0
    shared = report["loader_workers"]["shared_streams"]
    assert [(s["stream"], s["differs_between_runs"]) for s in shared] == [("dataset.rng", True)]
    step = report["next_step"]
    assert step["kind"] == "watch_loader" and step["trace_ops"] is None
    assert step["advice"][0].startswith("the batches part at step 0 (their inputs): watch the "
                                        "loader")
    assert any("indices=" in line for line in step["advice"])  # the script passes none
    assert not any("rec.watch_loader" in line for line in step["advice"])  # it watches already
    assert any(line.startswith("the workers share the stream dataset.rng, and its starting state "
                               "differs between runs") for line in step["advice"])
    text = tool("compare", *traces).stdout
    assert "next step: the batches part at step 0 (their inputs)" in text
    assert "--trace-ops" not in text
    assert "also differs between the runs" in text
    assert "next step: the batches part at step 0" in html.read_text()

