"""The recorder's settings (lib/python/repro_audit/settings.py; docs/pytorch.md, "Settings"): every
variable read in one place, keyword > environment > default, the audit's own window over a
script's keyword, errors naming the variable or keyword, misspelt variables warned about."""
import json
import warnings

import pytest

torch = pytest.importorskip("torch")

import repro_audit  # noqa: E402  (PYTHONPATH=lib/python)
from repro_audit import settings  # noqa: E402
from repro_audit.settings import Settings, SettingsWarning  # noqa: E402

AUDIT_ID = "0123456789abcdef0123456789abcdef"


def run_environment(tmp_path, **variables):
    """The variables of a run of an audit, as exec sets them, and `variables`."""
    environment = {"REPRO_AUDIT_TRACE": str(tmp_path / "run-000.trace.jsonl"),
                   "REPRO_AUDIT_RUN": "0", "REPRO_AUDIT_SEED": "7",
                   "REPRO_AUDIT_SEED_GROUP": "same", "REPRO_AUDIT_ID": AUDIT_ID,
                   "REPRO_AUDIT_TRACE_OPS": "", "REPRO_AUDIT_TENSOR_DIGESTS": ""}
    environment.update(variables)
    return environment


def test_keyword_over_environment_over_default(tmp_path):
    by_hand = {"REPRO_AUDIT_TRACE": str(tmp_path / "t.trace.jsonl"),
               "REPRO_AUDIT_TRACE_OPS": "2:4", "REPRO_AUDIT_KEEP_BYTES": "100"}
    assert Settings.from_environment({}).ops is None  # default
    assert Settings.from_environment({"REPRO_AUDIT_TRACE_OPS": "2:4"}).ops is None  # no trace
    read = Settings.from_environment(by_hand)
    assert (read.ops, read.keep_bytes, read.replays) == ((2, 4), 100, 10)
    read = Settings.from_environment(by_hand, ops="0:1", keep_bytes=5, replays=3)
    assert (read.ops, read.keep_bytes, read.replays) == ((0, 1), 5, 3)
    assert read.given == ("keep_bytes", "ops", "replays")
    assert Settings.from_environment(by_hand, ops=(1, None)).ops == (1, None)
    assert Settings.from_environment({}, trace=tmp_path / "k.trace.jsonl").trace == str(
        tmp_path / "k.trace.jsonl")


def test_a_bad_keyword_fails_with_or_without_an_audit_naming_it():
    for keywords, says in (({"ops": "2:1"}, "ops='2:1': the window is empty"),
                           ({"keep_op": "3"}, "keep_op='3': expected STEP:INDEX"),
                           ({"tensor_digests": "often"}, "tensor_digests='often'"),
                           ({"keep_bytes": -1}, r"keep_bytes=-1: expected an integer"),
                           ({"replays": 0}, r"replays=0: expected an integer in \[1, 1000\]")):
        with pytest.raises(ValueError, match=says):
            Settings.from_environment({}, **keywords)
    with pytest.raises(TypeError, match="no setting 'opps'; did you mean ops"):
        Settings.from_environment({}, opps="0:1")
    with pytest.raises(TypeError, match="ops=1.5"):
        Settings.from_environment({}, ops=1.5)


def test_the_audits_window_wins_over_a_keyword_with_a_warning(tmp_path):
    asked = run_environment(tmp_path, REPRO_AUDIT_TRACE_OPS="5:6")
    with pytest.warns(SettingsWarning, match=r"record\(ops='0:2'\) is not applied: this audit "
                      r"asked for REPRO_AUDIT_TRACE_OPS='5:6' \(exec --trace-ops\)"):
        assert Settings.from_environment(asked, ops="0:2").ops == (5, 6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert Settings.from_environment(asked, ops="5:6").ops == (5, 6)  # the same: quiet
        # exec without --trace-ops sets the variable empty: the script's window applies.
        assert Settings.from_environment(run_environment(tmp_path), ops="0:2").ops == (0, 2)
    planned = run_environment(tmp_path, REPRO_AUDIT_TENSOR_DIGESTS="every:10",
                              REPRO_AUDIT_KEEP_OP="1:2")
    with pytest.warns(SettingsWarning) as caught:
        read = Settings.from_environment(planned, tensor_digests="every:5", keep_op=(0, 3))
    assert read.tensor_digests.every == 10 and read.keep_op == (1, 2)
    assert len(caught) == 2
    interrupted = run_environment(tmp_path, REPRO_AUDIT_INTERRUPT_AT="2",
                                  REPRO_AUDIT_CHECKPOINT_DIR=str(tmp_path))
    with pytest.warns(SettingsWarning, match="--interrupt-at"):
        assert Settings.from_environment(interrupted, ops="0:1").ops is None


def test_without_a_trace_the_audits_variables_are_not_read():
    stale = {"REPRO_AUDIT_RUN": "x", "REPRO_AUDIT_KEEP_BYTES": "-1", "WORLD_SIZE": "0"}
    assert Settings.from_environment(stale).run == 0
    with pytest.raises(ValueError, match="REPRO_AUDIT_RUN='x'"):
        Settings.from_environment(dict(stale, REPRO_AUDIT_TRACE="t.trace.jsonl"))
    with pytest.raises(ValueError, match="REPRO_AUDIT_SEED='-1'"):  # read either way
        Settings.from_environment({"REPRO_AUDIT_SEED": "-1"})


def test_a_misspelt_variable_is_warned_about_once_with_the_nearest_name():
    with pytest.warns(SettingsWarning, match="REPRO_AUDIT_TRCE_OPS is not a variable repro_audit "
                      "reads; did you mean REPRO_AUDIT_TRACE_OPS?"):
        Settings.from_environment({"REPRO_AUDIT_TRCE_OPS": "0:1"})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Settings.from_environment({"REPRO_AUDIT_TRCE_OPS": "0:1"})  # once per process
        # The tool's and the scripts' own variables, and names near none, are no misspellings.
        Settings.from_environment({"REPRO_AUDIT_ISA": "avx2", "REPRO_AUDIT_BINARY": "x",
                                   "REPRO_AUDIT_SOMETHING_ELSE_ENTIRELY": "1"})


def test_a_keyword_nothing_uses_is_warned_about(tmp_path):
    model = torch.nn.Linear(2, 2)
    with pytest.warns(SettingsWarning, match=r"record\(keep_bytes=...\) has no effect"):
        repro_audit.record(model, trace=str(tmp_path / "a.trace.jsonl"), keep_bytes=10).close()
    with pytest.warns(SettingsWarning, match=r"record\(replays=...\) has no effect"):
        repro_audit.record(model, trace=str(tmp_path / "b.trace.jsonl"), replays=3).close()


def test_record_takes_the_settings_as_keywords(tmp_path, monkeypatch):
    for name in [n for n in __import__("os").environ if n.startswith("REPRO_AUDIT_")]:
        monkeypatch.delenv(name)
    model = torch.nn.Linear(3, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    path = tmp_path / "run-000.trace.jsonl"
    # No trace: a no-op recorder, though its keywords are checked.
    assert not repro_audit.record(model, optimizer, ops="0:1").enabled
    with pytest.raises(ValueError, match="ops="):
        repro_audit.record(model, optimizer, ops="1:0")
    with repro_audit.record(model, optimizer, trace=str(path), ops="1",
                            tensor_digests="every:2") as rec:
        for _ in range(3):
            optimizer.zero_grad()
            loss = model(torch.ones(4, 3)).sum()
            loss.backward()
            optimizer.step()
            rec.step(loss=loss)
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert records[0]["trace_ops"] == {"first": 1, "last": 2}
    assert records[0]["tensor_digests"] == {"every": 2, "windows": []}
    steps = [r for r in records if r.get("record") == "step"]
    assert ["ops" in s for s in steps] == [False, True, False]


def test_the_child_environment_is_this_ones_changed(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/a")
    monkeypatch.setenv("REPRO_AUDIT_TRACE_OPS", "0:1")
    child = settings.child_environment(drop=["REPRO_AUDIT_TRACE_OPS"], python_path="/p", X="1")
    assert child["PYTHONPATH"] == "/p:/a" and child["X"] == "1"
    assert "REPRO_AUDIT_TRACE_OPS" not in child
    last = settings.child_environment(python_path="/p", path_first=False)
    assert last["PYTHONPATH"] == "/a:/p"
    assert settings.child_environment(python_path="/a", path_first=False)["PYTHONPATH"] == "/a"
