"""The pytest plugin (lib/python/repro_audit/pytest_plugin.py, docs/pytorch.md "Testing with
pytest") on a user's test file, run by pytest's own `pytester`: a seeded 5-step training test
marked `@pytest.mark.reproducible(runs=2)` passes, each run a real run of the recorder under
`repro-audit exec`; one with an unseeded generator fails with the report's verdict and first
divergence as its message, which `--junitxml` carries; a divergence at a later step names the
marker's `ops=` as the next step, and with it the root cause; a marker exec would refuse, and no
tool to run, are errors at setup that say what to change. REPRO_AUDIT_BINARY names the built
binary."""
import os
import xml.etree.ElementTree as ElementTree

import pytest

pytest.importorskip("torch")

pytest_plugins = ["pytester"]

PLUGIN = ["-p", "repro_audit.pytest_plugin", "-p", "no:cacheprovider"]

# What a user's test looks like: a body that trains 5 steps on the CPU and records them.
# `seeded` seeds through repro_audit; NUDGE_AT makes run 1 (REPRO_AUDIT_RUN, set by exec) scale
# its loss by 1 + 2^-20 at that step, as a racing kernel would change its last bits.
USER_TESTS = r"""
import os
import pytest
import repro_audit
import torch


def train(seeded, nudge_at=None):
    if seeded:
        repro_audit.seed_everything(default=0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with repro_audit.record(model, optimizer) as rec:
        for step in range(5):
            x = torch.randn(8, 4)
            optimizer.zero_grad()
            loss = model(x).square().mean()
            if step == nudge_at and os.environ.get("REPRO_AUDIT_RUN") == "1":
                loss = loss * (1 + 2**-20)
            loss.backward()
            optimizer.step()
            rec.step(batch=(x,), loss=loss)
"""


def user_file(pytester, *tests):
    return pytester.makepyfile(test_user=USER_TESTS + "\n\n" + "\n\n".join(tests))


@pytest.fixture
def binary(monkeypatch, repro_audit_binary):
    # An absolute path (the plugin's fixture takes a relative one from where pytest started:
    # pytester has moved into its own folder by now), named to the plugin in pytester's runs.
    named = repro_audit_binary
    monkeypatch.setenv("REPRO_AUDIT_BINARY", named)
    for name in [n for n in os.environ if n.startswith("REPRO_AUDIT_") and
                 n != "REPRO_AUDIT_BINARY"]:
        monkeypatch.delenv(name)  # this process is no run of an audit
    return named


def junit_case(path, name):
    cases = {case.get("name"): case for case in ElementTree.parse(path).iter("testcase")}
    return cases[name]


def test_a_seeded_test_passes_and_an_unseeded_one_fails_with_the_first_divergence(pytester,
                                                                                  binary):
    made = pytester.path / "made.txt"
    user_file(pytester,
              # A fixture is made in each run, not in the test's own process, which never calls
              # the body; tmp_path is each run's own.
              "@pytest.fixture\ndef data_set():\n"
              f"    with open({str(made)!r}, 'a') as f:\n"
              "        f.write(os.environ.get('REPRO_AUDIT_RUN', 'not a run') + '\\n')\n",
              "@pytest.mark.reproducible(runs=2)\ndef test_seeded(data_set, tmp_path):\n"
              "    (tmp_path / 'model.txt').write_text('trained')\n    train(seeded=True)",
              "@pytest.mark.reproducible(runs=2)\ndef test_unseeded():\n    train(seeded=False)")
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest(*PLUGIN, f"--junitxml={junit}")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*repro-audit exec: the runs are not bitwise identical (exit 1; runs=2*",
        "DIVERGED: 2 distinct outcomes among 2 same-seed runs*",
        "first divergence: before step 0, initial weights of 0.weight (runs 1 differ from run 0)",
        "*they are not seeded alike*",
        "report: */test_unseeded0/repro-audit *",
    ])
    failure = junit_case(junit, "test_unseeded").find("failure")
    assert failure is not None
    assert "first divergence: before step 0, initial weights of 0.weight" in failure.get(
        "message")
    assert failure.get("message").splitlines()[2].startswith("DIVERGED: ")
    passed = junit_case(junit, "test_seeded")
    assert passed.find("failure") is None and passed.find("error") is None
    properties = {p.get("name"): p.get("value") for p in passed.iter("property")}
    assert properties["repro_audit_verdict"] == "BITWISE IDENTICAL: all 2 same-seed runs"
    folder = properties["repro_audit_report"]
    assert folder.endswith(os.path.join("test_seeded0", "repro-audit"))
    # Two real runs of the recorder, each a trace, and the report exec wrote.
    assert os.path.exists(os.path.join(folder, "report.json"))
    for run in (0, 1):
        assert os.path.exists(os.path.join(folder, "audit", f"run-00{run}.trace.jsonl"))
        assert os.path.exists(os.path.join(folder, "runs-tmp", f"run-{run}", "test_seeded0",
                                           "model.txt"))
    assert sorted(made.read_text().split()) == ["0", "1"]


def test_a_later_divergence_names_the_ops_option_and_with_it_the_root_cause(pytester, binary):
    user_file(pytester,
              "@pytest.mark.reproducible(runs=2)\n"
              "def test_nudged():\n    train(seeded=True, nudge_at=2)",
              "@pytest.mark.reproducible(runs=2, ops='2:3')\n"
              "def test_nudged_with_ops():\n    train(seeded=True, nudge_at=2)")
    result = pytester.runpytest(*PLUGIN)
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines([
        "*_ test_nudged _*",
        "first divergence: step 2 (epoch 0, batch 2), losses of loss (runs 1 differ from run 0)",
        "next step: @pytest.mark.reproducible(..., ops='2:3') on this test",
        "  (records the ops of step 2, so that the report names the op where the runs part)",
        "*_ test_nudged_with_ops _*",
        "first divergence: step 2 (epoch 0, batch 2), losses of loss (runs 1 differ from run 0)",
        "root cause: *step 2 (epoch 0, batch 2)*",
    ])


def test_a_body_that_fails_records_nothing_or_skips_says_so(pytester, binary):
    user_file(pytester,
              "@pytest.mark.reproducible(runs=2)\ndef test_asserts():\n    assert 1 + 1 == 3",
              "@pytest.mark.reproducible(runs=2)\ndef test_records_nothing():\n    pass",
              "@pytest.mark.reproducible(runs=1)\ndef test_one_run():\n    train(seeded=True)",
              "@pytest.mark.reproducible(runs=1, allow_empty=True)\n"
              "def test_one_run_allowed():\n    train(seeded=True)",
              "@pytest.mark.reproducible(runs=2)\ndef test_skips():\n"
              "    pytest.importorskip('no_such_module_of_repro_audit')")
    result = pytester.runpytest(*PLUGIN, "-rs")
    result.assert_outcomes(passed=1, failed=3, skipped=1)
    result.stdout.fnmatch_lines([
        "*_ test_asserts _*",
        "repro-audit exec: a run failed (exit 3; runs=2*",
        "[[]error] run 0: the command ended with exit status 1; *assert (1 + 1) == 3*",
        "*_ test_records_nothing _*",
        "[[]error] run 0: the command wrote no trace run-000.trace.jsonl: does it record with "
        "repro_audit.record(model, optimizer)*",
        "*_ test_one_run _*",
        "repro-audit exec: nothing was compared (exit 5; runs=1*",
        "NO SAME-SEED PAIR to compare (1 run)*",
        "SKIPPED * skipped in the runs of repro-audit exec: could not import "
        "'no_such_module_of_repro_audit'*",
    ])


def test_repro_runs_overrides_the_marker_and_repro_out_keeps_the_audit(pytester, binary):
    user_file(pytester,
              "@pytest.mark.reproducible(runs=1)\ndef test_seeded():\n    train(seeded=True)")
    kept = pytester.path / "kept"
    result = pytester.runpytest(*PLUGIN, "--repro-runs=2", f"--repro-out={kept}")
    result.assert_outcomes(passed=1)
    (folder,) = kept.iterdir()
    assert folder.name.startswith("test_user.py_test_seeded-")
    assert sorted(p.name for p in (folder / "audit").glob("*.trace.jsonl")) == [
        "run-000.trace.jsonl", "run-001.trace.jsonl"]
    # Again into the same folder: this session's audit replaces the last one's.
    pytester.runpytest(*PLUGIN, "--repro-runs=2", f"--repro-out={kept}").assert_outcomes(
        passed=1)


@pytest.mark.parametrize("arguments,words", [
    ("runs=0", "reproducible(runs=0): expected an integer in [1, 10000]"),
    ("runs=2.5", "reproducible(runs=2.5): expected an integer in [1, 10000]"),
    ("rnus=2", "reproducible(rnus=...): no such option; did you mean runs?"),
    ("3", "reproducible(3,): the options are keywords, as in reproducible(runs=2)"),
    ("expect='same'", "reproducible(expect='same'): expected one of 'identical', 'any'"),
    ("ops='2-3'", "reproducible(ops='2-3'): expected an op window"),
    ("timeout=0", "reproducible(timeout=0): expected seconds, a number > 0, or None"),
])
def test_a_marker_exec_would_refuse_is_an_error_at_setup_that_names_it(pytester, binary,
                                                                       arguments, words):
    user_file(pytester, f"@pytest.mark.reproducible({arguments})\ndef test_it():\n"
                        "    raise AssertionError('the body must not run')")
    result = pytester.runpytest(*PLUGIN)
    result.assert_outcomes(errors=1)
    literal = words.replace("[", "[[]")  # fnmatch: "[" opens a class
    result.stdout.fnmatch_lines(["*ERROR at setup of test_it*", f"repro_audit: {literal}*"])
    result.stdout.no_fnmatch_line("*the body must not run*")
    result.stdout.no_fnmatch_line("*During handling*")


def test_without_the_tool_a_marked_test_errors_saying_how_to_name_it(pytester, binary,
                                                                    monkeypatch, tmp_path):
    user_file(pytester, "@pytest.mark.reproducible(runs=2)\ndef test_it():\n    pass",
              "def test_runs_the_tool(repro_audit_binary):\n    pass")
    monkeypatch.delenv("REPRO_AUDIT_BINARY")
    monkeypatch.setenv("PATH", str(tmp_path))  # no repro-audit on it
    result = pytester.runpytest(*PLUGIN)
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines([
        "repro_audit: @pytest.mark.reproducible needs the repro-audit tool: put repro-audit on "
        "PATH or set REPRO_AUDIT_BINARY=/path/to/repro-audit*",
        "repro_audit: the fixture repro_audit_binary needs the repro-audit tool*"])
    # On PATH, the fixture finds it.
    os.symlink(binary, tmp_path / "repro-audit")
    pytester.runpytest(*PLUGIN, "-k", "runs_the_tool").assert_outcomes(passed=1)
    monkeypatch.setenv("REPRO_AUDIT_BINARY", str(tmp_path / "nothing"))
    result = pytester.runpytest(*PLUGIN, "-k", "test_it")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["repro_audit: REPRO_AUDIT_BINARY=*nothing' is not an "
                                 "executable file*"])


def test_the_marker_is_registered_and_strict_markers_accept_it(pytester):
    pytester.makepyfile("import pytest\n\n@pytest.mark.reproducible(runs=2)\n"
                        "def test_it():\n    pass\n")
    result = pytester.runpytest(*PLUGIN, "--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.reproducible(runs=2, ops=None, expect='identical'*"])
    result = pytester.runpytest(*PLUGIN, "--strict-markers", "--collect-only", "-q")
    assert result.ret == 0, result.stdout.str()
