#!/usr/bin/env python3
"""scripts/check-autotune-report (gpu-verify's reading of the autotune audits): passes on reports
that explain what they saw, and fails on each defect it is there to catch (an algorithm
difference called a kernel's race, raw ledger strings, a line over 300 characters, another machine
blamed; pinned deterministic algorithms that did not give identical runs)."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "check-autotune-report")

CHOICE = {"step": 0, "op": "conv2d.backward_data", "layer": "conv2d_1", "cause": "algorithm_choice",
          "algorithms": [{"runs": [0, 2], "algorithm": "CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING"},
                         {"runs": [1], "algorithm": "CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT"}]}
RACE = {"step": 0, "op": "conv2d.backward_filter", "layer": "conv2d_0",
        "cause": "nondeterministic_kernel",
        "algorithms": [{"runs": [0, 1, 2], "algorithm": "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0"}]}
LEDGER = [{"layer": "conv 128x32x26x26 k64 3x3 s1 p0", "direction": "backward_data",
           "groups": CHOICE["algorithms"]}]
TEXT = "repro-audit: keras12, 3 runs, mode autotune\n[info] a log line\nroot cause: ...\n"


def statistics(ms):
    return {"same": {"median_step_ms": {"mean": ms}}}


class CheckAutotuneReport(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, name, content):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(content if isinstance(content, str) else json.dumps(content))
        return path

    def run_script(self, *args):
        return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)

    def report(self, causes=(CHOICE, RACE), ledger=LEDGER, machines=(), text=TEXT):
        return (self.write("r.json", {"root_causes": list(causes), "ledger_differences": ledger,
                                      "divergent_machines": list(machines)}),
                self.write("r.log", text))

    def test_a_report_that_explains_passes(self):
        done = self.run_script(*self.report())
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertIn("algorithm_choice", done.stdout)
        self.assertIn("the widest", done.stdout)

    def test_each_defect_fails(self):
        wrong_class = dict(CHOICE, cause="nondeterministic_kernel")
        cases = {
            "called nondeterministic": self.report(causes=[wrong_class]),
            "one algorithm": self.report(causes=[dict(RACE, cause="algorithm_choice")]),
            "not structured": self.report(ledger=["run 1: [{...}] vs run 0: [...]"]),
            "other machines": self.report(machines=[{"run": 1}]),
            "characters": self.report(text="x" * 301 + "\n"),
            "another machine": self.report(text="run 1 ran on another machine or build\n"),
        }
        for what, paths in cases.items():
            done = self.run_script(*paths)
            self.assertEqual(done.returncode, 1, what)
            self.assertIn("FAILED", done.stdout, what)

    def test_pinned(self):
        algorithms = {"algorithms": [
            {"layer": "conv 128x1x28x28 k32 3x3 s1 p0", "direction": "forward",
             "algorithm": "CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM", "deterministic": True},
            {"layer": "dense 128x9216->128", "direction": "backward_weight",
             "algorithm": "cublasSgemm", "deterministic": True}]}
        autotune = {"verdict": {"identical": False}, "statistics": statistics(1.0)}
        same = {"verdict": {"identical": True}, "statistics": statistics(1.05)}
        differ = {"verdict": {"identical": False}, "statistics": statistics(1.05)}
        files = [self.write("a.json", algorithms), self.write("t.json", autotune)]
        done = self.run_script("--pinned", self.write("p.json", same), *files)
        self.assertEqual(done.returncode, 0, done.stdout)
        self.assertIn("ratio 1.050", done.stdout)
        done = self.run_script("--pinned", self.write("p.json", differ), *files)
        self.assertEqual(done.returncode, 1, done.stdout)
        # With an atomic algorithm pinned, differing runs are what it says, not a failure.
        algorithms["algorithms"][0]["deterministic"] = False
        files[0] = self.write("a.json", algorithms)
        done = self.run_script("--pinned", self.write("p.json", differ), *files)
        self.assertEqual(done.returncode, 0, done.stdout)
        self.assertIn("not deterministic: ['conv 128x1x28x28", done.stdout)

    def test_usage(self):
        self.assertEqual(self.run_script().returncode, 2)


if __name__ == "__main__":
    unittest.main()
