#!/usr/bin/env python3
"""scripts/gpu-perf-table: every figure of the perf stage in one table, from the stage's logs.
Fed the H100 logs of 27 November 2026 (excerpts of /work/shared/fixtures/h100-2026-11-27's
summaries), it computes the ratios and judges them against issue 45's targets; fed nothing, it
says "not measured" and judges nothing."""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "gpu-perf-table")

BENCH = """device cuda (op times: device time, CUDA events)
  deterministic    median     1.185 ms/step    107997.0 samples/s   7823.85 GFLOP/s
  nondeterministic median     1.290 ms/step     99204.4 samples/s   7186.87 GFLOP/s
  op (ms/step)                  determ.   nondeterm.    ratio
  conv2d_forward                 0.3524       0.3526    1.000
  maxpool2d_backward             0.0708       0.0207    3.414
  (outside Ops)                  0.1251       0.1209
  step time deterministic / nondeterministic: 0.919
"""
PYTORCH = """                                 step ms  / ra det
pytorch deterministic              3.176      2.85
repro-audit deterministic          1.116      1.00
"""
AUDIT = """cost (same-seed runs): median step 1.37 ms (mean of per-run medians; range 1.37..1.37 ms)
recording the trace cost at most 95.19% of step time
"""


def table(files):
    with tempfile.TemporaryDirectory() as work:
        for name, text in files.items():
            with open(os.path.join(work, name), "w", encoding="utf-8") as f:
                f.write(text)
        done = subprocess.run([sys.executable, SCRIPT, work], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return {line.strip().split("  ")[0]: line for line in done.stdout.splitlines()}


class GpuPerfTableTest(unittest.TestCase):
    def test_h100_figures(self):
        rows = table({"bench-cuda.log": BENCH, "bench-pytorch-cuda.log": PYTORCH,
                      "train-deterministic.log": '"median_step_ms": 1.159316\n',
                      "audit-1-run.log": AUDIT,
                      "step-times.txt": "train-deterministic 21\naudit-1-run 29\n"})
        self.assertRegex(rows["deterministic step (bench, ms)"], r"1\.185 .*<= 0\.6.* no$")
        self.assertRegex(rows["deterministic / nondeterministic"], r"0\.919 .* yes$")
        self.assertRegex(rows["repro-audit det. / PyTorch det. (side by side)"], r"0\.351 .* no$")
        self.assertRegex(rows["conv2d_forward (0.3524 / 0.3526 ms)"], r"0\.999 .* yes$")
        self.assertRegex(rows["maxpool2d_backward (0.0708 / 0.0207 ms)"], r"3\.420 .* no$")
        self.assertNotIn("(outside Ops)", "".join(rows))
        self.assertRegex(rows["audit wall / train wall"], r"1\.381 .* no$")
        self.assertRegex(rows["report's recording figure"], r"95\.19% +within 2 pp of 38\.10% +no$")
        self.assertRegex(rows["audit median step / bench det. step"], r"1\.156 .* no$")

    def test_graph_rows(self):
        # Hand-written: no GPU has run --cuda-graphs on yet. The shape is train --json's.
        eager = '{"median_step_ms": 1.2, "weights_xxh3": "%s"}\n' % ("ab" * 16)
        graphs = ('{"median_step_ms": 0.6, "step_launch": {"capture": 1, "eager": 4, '
                  '"eager_reasons": {"x": 4}, "replay": 464}, "weights_xxh3": "%s"}\n')
        rows = table({"train-deterministic.log": eager, "train-graphs.log": graphs % ("ab" * 16)})
        self.assertRegex(rows["train median step, CUDA graphs (ms)"], r"0\.600")
        self.assertRegex(rows["graph step / eager step (train)"], r"0\.500")
        self.assertRegex(rows["graph run's weights = eager run's"], r"equal +equal +yes$")
        self.assertRegex(rows["graph launches"], r"capture 1 / replay 464 / eager 4")
        rows = table({"train-deterministic.log": eager, "train-graphs.log": graphs % ("cd" * 16)})
        self.assertRegex(rows["graph run's weights = eager run's"], r"differ +equal +no$")
        rows = table({"train-deterministic.log": eager})
        self.assertRegex(rows["graph run's weights = eager run's"], r"not measured .* -$")
        self.assertRegex(rows["graph launches"], r"not measured")

    def test_bench_graph_rows(self):
        # Hand-written in bench's text format (no GPU has run bench --cuda-graphs on yet).
        graphs = """device cuda (whole steps, each full one a CUDA graph: no op times)
  deterministic    median     0.550 ms/step    232727.3 samples/s  16858.18 GFLOP/s
                   steps launched: 1 captured, 57 replayed, 2 eager
  nondeterministic median     0.600 ms/step    213333.3 samples/s  15453.33 GFLOP/s
                   steps launched: 1 captured, 57 replayed, 2 eager
  step time deterministic / nondeterministic: 0.917
"""
        rows = table({"bench-cuda.log": BENCH, "bench-cuda-graphs.log": graphs})
        self.assertRegex(rows["deterministic step (bench, CUDA graphs, ms)"], r"0\.550 .* yes$")
        self.assertRegex(rows["det. / nondet. (CUDA graphs)"], r"0\.917 .* yes$")
        self.assertRegex(rows["graph det. step / eager det. step (bench)"], r"0\.464")
        self.assertRegex(rows["bench steps replayed (det. / nondet.)"], r"57 / 57")
        rows = table({"bench-cuda.log": BENCH})
        self.assertRegex(rows["deterministic step (bench, CUDA graphs, ms)"], r"not measured .* -$")

    def test_nothing_measured_is_said_and_not_judged(self):
        rows = table({})
        self.assertRegex(rows["deterministic step (bench, ms)"], r"not measured .* -$")
        self.assertRegex(rows["audit wall / train wall"], r"not measured .* -$")
        self.assertRegex(rows["per-op det. / nondet."], r"not measured")


if __name__ == "__main__":
    unittest.main()
