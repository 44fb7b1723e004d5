#!/usr/bin/env python3
"""Tests of scripts/check-function-size on small fixture trees written to a temporary folder.

Each case writes a few source files under lib/ or tests/ of a fresh folder (not a git work tree,
so the script walks it), runs the script on it and checks its exit code and the offenders it names.
"""

import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                      "check-function-size")


def function(name, lines, above=""):
    """A function definition exactly `lines` lines long, signature to closing brace."""
    body = [f"  total += {i};" for i in range(lines - 3)]
    return above + "\n".join([f"int {name}() {{", "  int total = 0;", *body, "}"]) + "\n"


def run(files):
    """Writes files ({relative path: text}) to a fresh folder and runs the script on it."""
    with tempfile.TemporaryDirectory() as root:
        for path, text in files.items():
            os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
            with open(os.path.join(root, path), "w") as f:
                f.write(text)
        done = subprocess.run([sys.executable, SCRIPT, "--root", root], capture_output=True,
                              text=True)
        return done.returncode, done.stdout.splitlines()


class FunctionLimit(unittest.TestCase):
    def test_a_90_line_function_is_flagged_with_file_line_and_length(self):
        code, lines = run({"lib/m/long.cpp": "// A module.\n\n" + function("long_one", 90)})
        self.assertEqual(code, 1)
        self.assertEqual(len(lines), 1)
        self.assertTrue(lines[0].startswith("lib/m/long.cpp:3: function has 90 lines"), lines)
        self.assertIn("long_one", lines[0])

    def test_an_80_line_function_passes(self):
        self.assertEqual(run({"lib/m/ok.cpp": function("at_limit", 80)}), (0, []))

    def test_a_size_reason_right_above_the_signature_accepts_a_long_function(self):
        text = function("table", 90, above="// Why it is long:\n// size: one case per spec field\n")
        self.assertEqual(run({"lib/m/table.cpp": text}), (0, []))

    def test_a_size_reason_separated_by_code_does_not_count(self):
        text = "// size: meant for something else\nint x = 0;\n" + function("later", 90)
        self.assertEqual(run({"lib/m/far.cpp": text})[0], 1)

    def test_functions_in_apps_and_kernels_are_checked_but_not_in_tests(self):
        code, lines = run({"apps/a/main.cpp": function("a", 81),
                           "kernels/k.cu": "__global__ " + function("k", 81).replace("int k", "void k"),
                           "tests/t/t_test.cpp": function("t", 200)})
        self.assertEqual(code, 1)
        self.assertEqual(sorted(line.split(":")[0] for line in lines),
                         ["apps/a/main.cpp", "kernels/k.cu"])

    def test_member_functions_in_and_out_of_class_and_templates_are_found(self):
        body = "\n".join(f"    v += {i};" for i in range(85))
        text = ("namespace ra {\nclass Box {\n public:\n  int in_class() const {\n    int v = 0;\n"
                f"{body}\n    return v;\n  }}\n}};\n"
                f"template <class T>\nT Box_out(T v) noexcept {{\n{body}\n  return v;\n}}\n"
                "Box::Box(int n) : size_{n}, data_(n) {\n" + body + "\n}\n}  // namespace ra\n")
        code, lines = run({"lib/m/box.cpp": text})
        self.assertEqual(code, 1)
        self.assertEqual([line.split(":")[1] for line in lines], ["4", "94", "183"], lines)

    def test_braces_in_literals_and_comments_and_lambdas_do_not_split_functions(self):
        inner = "\n".join(f"  s += \"}}\"; // }} {i}" for i in range(40))
        text = ("#include <string>\n#define OPEN {\n"
                "std::string f() {\n  std::string s = R\"x({ \"}\" )x\";\n  char c = '{';\n"
                "  long n = 1'000'000;\n  auto add = [&](int k) {\n" + inner + "\n  };\n"
                "  /* } } } */\n" + inner + "\n  return s;\n}\n"
                "int after() { return 1; }\n")
        code, lines = run({"lib/m/literals.cpp": text})
        self.assertEqual(code, 1)
        self.assertEqual(len(lines), 1, lines)
        self.assertTrue(lines[0].startswith("lib/m/literals.cpp:3: function has 89 lines"), lines)

    def test_initializers_and_enums_are_not_functions(self):
        rows = "\n".join(f"    {{{i}, \"row\"}}," for i in range(100))
        text = (f"const Row kRows[] = {{\n{rows}\n}};\nenum class E {{\n"
                + "\n".join(f"  e{i}," for i in range(100)) + "\n};\n")
        self.assertEqual(run({"lib/m/table.cpp": text}), (0, []))


class FileLimit(unittest.TestCase):
    def test_a_501_line_file_is_flagged_in_tests_and_fuzz(self):
        long_file = "int x = 0;\n" * 501
        code, lines = run({"tests/t/big_test.cpp": long_file, "fuzz/f.cpp": long_file,
                           "lib/m/ok.h": "int y = 0;\n" * 500})
        self.assertEqual(code, 1)
        self.assertEqual(lines, ["fuzz/f.cpp:1: file has 501 lines (limit 500)",
                                 "tests/t/big_test.cpp:1: file has 501 lines (limit 500)"])

    def test_a_size_reason_at_the_top_of_the_file_accepts_it(self):
        text = "// Test vectors.\n// size: the published vectors, one per line\n" + "int x;\n" * 600
        self.assertEqual(run({"lib/m/vectors.h": text}), (0, []))


if __name__ == "__main__":
    unittest.main()
