#!/usr/bin/env python3
"""scripts/check-unity-names: catches each kind of file-local name that two sources of one unity
target share (the same function, an overload with another signature, a constant, a type, a
`static` function), in lib/, apps/ and tests/ folders and across the CPU backend's subfolders; and
lets pass what does not meet in one unit: names of different targets, members of named
namespaces, function bodies, comments and raw string literals."""
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "check-unity-names")

CLEAN = {
    # The same names in two modules, or in a module and a test folder: never one unit.
    "lib/spec/a.cpp": "namespace ra::spec {\nnamespace {\nint helper(int x) {\n  return x;\n}\n"
    "}  // namespace\n}  // namespace ra::spec\n",
    "lib/trace/a.cpp": "namespace ra::trace {\nnamespace {\nint helper(int x) {\n  return x;\n}\n"
    "}  // namespace\n}  // namespace ra::trace\n",
    "tests/spec/a_test.cpp": "namespace {\nint helper(int x) {\n  return x;\n}\n}  // namespace\n",
    # Named namespaces' members (external linkage: the linker already refuses two), code inside
    # bodies, comments, and a raw string's lines are no file-local definitions.
    "lib/spec/b.cpp": textwrap.dedent("""\
        namespace ra::spec {
        int helper_public(int x);
        namespace {
        // int helper(int x) { return x; }
        const char* kCss = R"css(
        int helper(int x) {
        svg text { font: 11px; }
        )css";
        void other() {
          int helper = 1;
          (void)helper;
        }
        }  // namespace
        int helper_public(int x) {
          return x;
        }
        }  // namespace ra::spec
        """),
}


def run(files):
    with tempfile.TemporaryDirectory() as root:
        for path, text in files.items():
            full = os.path.join(root, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w", encoding="utf-8") as f:
                f.write(text)
        result = subprocess.run([sys.executable, SCRIPT, "--root", root], capture_output=True,
                                text=True, check=False)
    return result.returncode, result.stderr


class CheckUnityNamesTest(unittest.TestCase):
    def assert_clash(self, planted, name, target):
        code, err = run({**CLEAN, **planted})
        self.assertEqual(code, 1, err)
        self.assertIn(f"{target}: '{name}' has internal linkage in", err)
        self.assertEqual(err.count("has internal linkage"), 1, err)

    def test_the_real_tree_passes(self):
        result = subprocess.run([sys.executable, SCRIPT], capture_output=True, text=True,
                                check=False)
        self.assertEqual(result.returncode, 0, result.stderr)

    def test_clean_fixture_passes(self):
        code, err = run(CLEAN)
        self.assertEqual(code, 0, err)

    def test_same_function_in_two_sources_of_a_module(self):
        self.assert_clash({"lib/spec/c.cpp": CLEAN["lib/spec/a.cpp"]}, "helper", "lib/spec")

    def test_overload_with_another_signature(self):
        # Compiles in one unit, and a call may silently pick the other source's function.
        overload = "namespace ra::spec {\nnamespace {\nlong helper(long x) {\n  return x;\n}\n" \
                   "}  // namespace\n}  // namespace ra::spec\n"
        self.assert_clash({"lib/spec/c.cpp": overload}, "helper", "lib/spec")

    def test_constant_type_and_alias_in_test_folder(self):
        for text, name in [("constexpr int kModes[] = {1, 2};\n", "kModes"),
                           ("struct Outcome {\n  int x;\n};\n", "Outcome"),
                           ("using Rows = std::vector<int>;\n", "Rows")]:
            planted = {f"tests/spec/{n}_test.cpp": f"namespace {{\n{text}}}  // namespace\n"
                       for n in ("b", "c")}
            with self.subTest(name=name):
                self.assert_clash(planted, name, "tests/spec")

    def test_static_function_in_tool(self):
        planted = {f"apps/repro-audit/cmd_{n}.cpp": "static int quoted(int x) {\n  return x;\n}\n"
                   for n in ("a", "b")}
        self.assert_clash(planted, "quoted", "apps/repro-audit")

    def test_cpu_backend_subfolders_are_one_target(self):
        text = "namespace ra::backend {\nnamespace {\nint tile() {\n  return 1;\n}\n" \
               "}  // namespace\n}  // namespace ra::backend\n"
        planted = {"lib/backend/cpu/conv/a.cpp": text, "lib/backend/cpu/gemm/b.cpp": text}
        self.assert_clash(planted, "tile", "lib/backend/cpu")


if __name__ == "__main__":
    unittest.main()
