#!/usr/bin/env python3
"""scripts/bench_harness.py, what every benchmark's figures rest on: medians of odd and even
counts, the ABBA order of a round's arms, the ratio of two arms within each round (against the
ratio of their medians), the table rows; and scripts/bench, whose cases are the bench-* scripts.
Every expected value is worked out by hand in the comments."""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPTS = os.path.join(ROOT, "scripts")
sys.path.insert(0, SCRIPTS)
import bench_harness as harness  # noqa: E402


class Statistics(unittest.TestCase):
    def test_median_of_an_odd_count_is_the_middle_value(self):
        self.assertEqual(harness.median([7.0, 1.0, 3.0]), 3.0)  # sorted 1 3 7
        self.assertEqual(harness.median([5]), 5)
        self.assertEqual(harness.median(iter([9, 2, 4, 8, 6])), 6)  # 2 4 6 8 9; a generator too

    def test_median_of_an_even_count_is_the_mean_of_the_two_middle_values(self):
        self.assertEqual(harness.median([4.0, 1.0, 3.0, 2.0]), 2.5)  # 1 2 | 3 4: (2 + 3) / 2
        self.assertEqual(harness.median([10, 30]), 20)
        self.assertEqual(harness.median([1.0, 1.0, 5.0, 100.0]), 3.0)  # (1 + 5) / 2: no outlier

    def test_median_of_nothing_is_an_error(self):
        with self.assertRaises(ValueError):
            harness.median([])

    def test_summary_is_median_minimum_maximum_and_count(self):
        s = harness.summary([0.031, 0.012, 0.020, 0.045])  # 12 20 | 31 45 ms
        self.assertAlmostEqual(s.median, 0.0255)  # (0.020 + 0.031) / 2
        self.assertEqual((s.min, s.max, s.count), (0.012, 0.045, 4))

    def test_ratios_are_taken_within_each_round(self):
        # Round by round: 10 / 5 = 2, 12 / 4 = 3, 9 / 3 = 3.
        on, off = [10.0, 12.0, 9.0], [5.0, 4.0, 3.0]
        self.assertEqual(harness.round_ratios(on, off), [2.0, 3.0, 3.0])
        self.assertEqual(harness.median_round_ratio(on, off), 3.0)
        # Not the ratio of the medians: 10 / 4 = 2.5.
        self.assertEqual(harness.ratio_of_medians(on, off), 2.5)

    def test_ratios_of_an_even_count_of_rounds(self):
        # 6 / 3 = 2, 8 / 2 = 4, 3 / 3 = 1, 9 / 3 = 3: sorted 1 2 | 3 4, median 2.5.
        self.assertEqual(harness.median_round_ratio([6, 8, 3, 9], [3, 2, 3, 3]), 2.5)

    def test_rounds_of_two_arms_must_pair_up(self):
        with self.assertRaises(ValueError):
            harness.round_ratios([1.0, 2.0], [1.0])


class Order(unittest.TestCase):
    def test_abba_reverses_every_second_round(self):
        self.assertEqual([harness.order("AB", r) for r in range(4)],
                         [["A", "B"], ["B", "A"], ["A", "B"], ["B", "A"]])
        self.assertEqual([harness.order(("plain", "ops", "train"), r) for r in range(2)],
                         [["plain", "ops", "train"], ["train", "ops", "plain"]])

    def test_same_keeps_one_order(self):
        self.assertEqual([harness.order("AB", r, "same") for r in range(3)], [["A", "B"]] * 3)

    def test_an_unknown_order_is_an_error(self):
        with self.assertRaises(ValueError):
            harness.order("AB", 0, "random")

    def test_alternate_runs_abba_and_keeps_each_arms_results_by_round(self):
        calls = []

        def measure(arm, r):
            calls.append(arm + str(r))
            return 100 * r + len(calls)  # round and position in the whole sequence

        results = harness.alternate(("off", "on"), 4, measure)
        self.assertEqual(calls, ["off0", "on0", "on1", "off1", "off2", "on2", "on3", "off3"])
        # Position 1 2 | 3 4 | 5 6 | 7 8; on ran 2nd, 3rd, 6th, 7th.
        self.assertEqual(results, {"off": [1, 104, 205, 308], "on": [2, 103, 206, 307]})

    def test_alternate_same_order(self):
        calls = []
        harness.alternate("xy", 2, lambda arm, r: calls.append(arm + str(r)), kind="same")
        self.assertEqual(calls, ["x0", "y0", "x1", "y1"])

    def test_a_ratio_of_alternated_rounds_pairs_one_rounds_arms(self):
        # A load that doubles every round: each arm's figure is its cost times the load.
        cost = {"off": 1.0, "on": 1.1}
        results = harness.alternate(("off", "on"), 4, lambda arm, r: cost[arm] * 2 ** r)
        for ratio in harness.round_ratios(results["on"], results["off"]):
            self.assertAlmostEqual(ratio, 1.1)


class Output(unittest.TestCase):
    def test_row_pads_names_left_and_figures_right(self):
        self.assertEqual(harness.row(["op", "[0]", "[1]"], [-6, 5, 5], sep=""),
                         "op      [0]  [1]")
        self.assertEqual(harness.row(["1", "12.5"], [3, 6]), "  1   12.5")
        self.assertEqual(harness.row(["longer", "x"], [-3, 2]), "longer  x")  # never cut

    def test_figure_and_listed(self):
        self.assertEqual(harness.figure(1.23456, ".3f"), "1.235")
        self.assertEqual(harness.figure(None, ".3f"), "-")
        self.assertEqual(harness.listed([1.0, 0.98, 1.1], ".2f"), "1.00, 0.98, 1.10")
        self.assertEqual(harness.listed([37.24, 38.0], ".1f", " "), "37.2 38.0")


class Commands(unittest.TestCase):
    def test_measured_gives_the_exit_code_and_writes_the_output_where_asked(self):
        with tempfile.TemporaryDirectory() as tmp:
            log = os.path.join(tmp, "log")
            done = harness.measured(["sh", "-c", "echo out; echo err >&2; exit 3"], log, log)
            with open(log) as f:
                self.assertEqual(f.read(), "out\nerr\n")
        self.assertEqual(done.code, 3)
        self.assertGreater(done.peak_mib, 0)
        self.assertGreaterEqual(done.seconds, 0)

    def test_timed_exits_on_a_code_it_was_not_told_is_fine(self):
        seconds, done = harness.timed(["sh", "-c", "exit 1"], ok=(0, 1))
        self.assertEqual(done.returncode, 1)
        with self.assertRaises(SystemExit) as stop:
            harness.timed(["sh", "-c", "echo why >&2; exit 2"], capture_output=True, text=True)
        self.assertIn("exited 2:\nwhy", str(stop.exception.code))

    def test_setting_reads_the_environment_as_bash_defaults_do(self):
        os.environ["BENCH_HARNESS_TEST"] = ""
        self.assertEqual(harness.setting("BENCH_HARNESS_TEST", 4), 4)  # empty: the default
        os.environ["BENCH_HARNESS_TEST"] = "7"
        self.assertEqual(harness.setting("BENCH_HARNESS_TEST", 4), 7)
        os.environ["BENCH_HARNESS_TEST"] = "seven"
        with self.assertRaises(SystemExit):
            harness.setting("BENCH_HARNESS_TEST", 4)
        del os.environ["BENCH_HARNESS_TEST"]


class Bench(unittest.TestCase):
    def bench(self, *args):
        return subprocess.run([sys.executable, os.path.join(SCRIPTS, "bench"), *args],
                              capture_output=True, text=True)

    def test_the_cases_are_the_bench_scripts(self):
        done = self.bench("--list")
        self.assertEqual(done.returncode, 0, done.stderr)
        listed = sorted(line.split()[0] for line in done.stdout.splitlines())
        scripts = sorted(name[len("bench-"):] for name in os.listdir(SCRIPTS)
                         if name.startswith("bench-"))
        self.assertEqual(listed, scripts)
        for name in scripts:
            self.assertTrue(os.access(os.path.join(SCRIPTS, "bench-" + name), os.X_OK), name)

    def test_a_case_runs_its_script_with_the_arguments(self):
        done = self.bench("compare", "--help")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("usage: bench-compare", done.stdout)

    def test_no_case_or_an_unknown_one_is_a_usage_error(self):
        self.assertEqual(self.bench().returncode, 2)
        done = self.bench("nonesuch")
        self.assertEqual(done.returncode, 2)
        self.assertIn("scripts/bench --list", done.stderr)


if __name__ == "__main__":
    unittest.main()
