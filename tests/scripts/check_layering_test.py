#!/usr/bin/env python3
"""scripts/check-layering: passes on the real tree, and catches each kind of violation planted in
a tiny fixture tree (an undeclared include, one from kernels/, a declared module never included,
a cycle, a file in no module), each kind of test that reaches past its module: a lib/ header,
another module's test helper, a header reached through tests/support; a namespace that does not
follow its folder, and an include of audit's facade from inside lib/audit."""
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "check-layering")

CMAKE = """\
# A comment with ra_module(ghost DIRS ghost DEPS ra_core) is not a module.
ra_module(core    DIRS core)
ra_module(spec    DIRS spec    DEPS ra_core nlohmann_json::nlohmann_json)
ra_module(backend DIRS backend backend/cpu DEPS ra_core
                                          Threads::Threads)
if(RA_HAVE_CUDA)
  add_library(ra_kernels STATIC ${kernel_sources})
  target_link_libraries(ra_kernels PUBLIC ra_core ra_backend)
  ra_module(backend_cuda DIRS backend/cuda DEPS ra_backend ra_kernels)
endif()
ra_module(nn      DIRS nn      DEPS ra_spec ra_backend)
"""

FILES = {
    "lib/core/error.h": "#pragma once\n#include <string>\nnamespace ra {\nnamespace detail {}\n}\n",
    "lib/spec/spec.h": '#pragma once\n#include "core/error.h"\n#include <nlohmann/json.hpp>\n',
    "lib/backend/ops.h": '#pragma once\n#include "core/error.h"\n',
    "lib/backend/cpu/gemm.h": '#pragma once\n#include "backend/ops.h"\n#include "xxhash.h"\n',
    "lib/backend/cuda/cuda_ops.h": '#pragma once\n#include "backend/ops.h"\n#include "kernels/a.cuh"\n',
    "kernels/a.cuh": '#pragma once\n#include "backend/ops.h"\n#include "core/error.h"\n',
    "kernels/a.cu": '#include "kernels/a.cuh"\n',
    # Anonymous namespaces, aliases and what comments and strings say are no namespace opened.
    "lib/nn/model.cpp": '#include "spec/spec.h"\n#include "backend/ops.h"\nnamespace ra::nn {\n'
    'namespace fs = std::filesystem;\nnamespace {\n// namespace ra::spec {\n'
    'const char* s = "namespace ra::spec {";\nvoid f() {}\n}  // namespace\n}  // namespace ra::nn\n',
    "lib/backend/cpu/gemm.cpp": "namespace ra::backend::cpu {\nstruct A {\n  int x{};\n};\n}\n",
    # spec's tests may reach core (a dependency), their own folder and tests/support.
    "tests/spec/parse_test.cpp": '#include "spec/spec.h"\n#include "core/error.h"\n'
    '#include "spec/spec_fixtures.h"\n#include "support/temp_dir.h"\n#include <catch2/catch.hpp>\n',
    "tests/spec/spec_fixtures.h": '#pragma once\n#include "spec/spec.h"\n',
    "tests/support/temp_dir.h": "#pragma once\n#include <filesystem>\n",
    # nn's tests may include spec's test helper: nn depends on spec.
    "tests/nn/model_test.cpp": '#include "spec/spec_fixtures.h"\n#include "nn/model.h"\n',
    "lib/nn/model.h": '#pragma once\n#include "spec/spec.h"\n',
    # tests/cli is no module's folder: not checked.
    "tests/cli/cli_test.cpp": '#include "nn/model.h"\n',
}


def run(root):
    result = subprocess.run(
        [sys.executable, SCRIPT, "--root", root], capture_output=True, text=True, check=False
    )
    return result.returncode, result.stdout.splitlines()


class Fixture:
    """A fixture tree: CMAKE and FILES with the given changes (None deletes a file)."""

    def __init__(self, cmake=CMAKE, **changes):
        self.dir = tempfile.TemporaryDirectory()
        files = dict(FILES)
        files["lib/CMakeLists.txt"] = cmake
        for path, text in changes.items():
            path = path.replace("__", "/").replace("_DOT_", ".")
            if text is None:
                files.pop(path, None)
            else:
                files[path] = text
        for path, text in files.items():
            full = os.path.join(self.dir.name, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w", encoding="utf-8") as f:
                f.write(text)

    def __enter__(self):
        return self.dir.name

    def __exit__(self, *exc):
        self.dir.cleanup()


class CheckLayeringTest(unittest.TestCase):
    def assert_fails_with(self, expected, **fixture):
        """The check fails on the fixture tree and prints exactly the expected lines."""
        with Fixture(**fixture) as root:
            code, lines = run(root)
        self.assertEqual(code, 1)
        self.assertEqual(lines, expected)

    def test_the_real_tree_keeps_its_layering(self):
        code, lines = run(ROOT)
        self.assertEqual(lines, [])
        self.assertEqual(code, 0)

    def test_a_clean_fixture_passes(self):
        with Fixture() as root:
            self.assertEqual(run(root), (0, []))

    def test_an_include_of_an_undeclared_module_is_named_with_file_and_line(self):
        gemm = '#pragma once\n#include "backend/ops.h"\n#include "spec/spec.h"\n'
        self.assert_fails_with(
            [
                "lib/backend/cpu/gemm.h:3: module backend includes spec (spec/spec.h), not in "
                "its DEPS",
            ],
            lib__backend__cpu__gemm_DOT_h=gemm,
        )

    def test_the_longest_folder_decides_the_module(self):
        # backend/cuda is its own module: nn includes it without declaring it.
        model = '#include "spec/spec.h"\n#include "backend/ops.h"\n#include "backend/cuda/cuda_ops.h"\n'
        self.assert_fails_with(
            [
                "lib/nn/model.cpp:3: module nn includes backend_cuda (backend/cuda/cuda_ops.h), "
                "not in its DEPS",
            ],
            lib__nn__model_DOT_cpp=model,
        )

    def test_kernels_declare_through_their_target_link(self):
        cmake = CMAKE.replace("target_link_libraries(ra_kernels PUBLIC ra_core ra_backend)",
                              "target_link_libraries(ra_kernels PUBLIC ra_core)")
        self.assert_fails_with(
            [
                "kernels/a.cuh:2: module kernels includes backend (backend/ops.h), not in its "
                "DEPS",
            ],
            cmake=cmake,
        )

    def test_a_declared_module_never_included_is_named(self):
        cmake = CMAKE.replace("DEPS ra_spec ra_backend)", "DEPS ra_core ra_spec ra_backend)")
        self.assert_fails_with(
            [
                "lib/CMakeLists.txt: module nn declares core but includes nothing from it",
            ],
            cmake=cmake,
        )

    def test_a_cycle_in_the_declared_graph_is_named(self):
        cmake = CMAKE.replace("ra_module(core    DIRS core)", "ra_module(core    DIRS core DEPS ra_spec)")
        error = '#pragma once\n#include "spec/spec.h"\n'
        with Fixture(cmake=cmake, lib__core__error_DOT_h=error) as root:
            code, lines = run(root)
        self.assertEqual(code, 1)
        self.assertIn(
            "lib/CMakeLists.txt: declared dependencies form a cycle: core -> spec -> core", lines
        )

    def test_a_file_in_no_module_is_named(self):
        self.assert_fails_with(
            [
                "lib/report/text.cpp: in no module's DIRS (lib/CMakeLists.txt)",
            ],
            lib__report__text_DOT_cpp='#include "core/error.h"\n',
        )

    def test_a_namespace_that_does_not_follow_the_folder_is_named(self):
        model = '#include "spec/spec.h"\n#include "backend/ops.h"\nnamespace ra::nn {\n}\n' \
            "namespace ra::spec {\nvoid f();\n}\n"
        self.assert_fails_with(
            [
                "lib/nn/model.cpp:5: opens namespace ra::spec; module nn's files open ra::nn or "
                "a namespace nested in it",
            ],
            lib__nn__model_DOT_cpp=model,
        )

    def test_a_nested_namespace_counts_with_what_encloses_it(self):
        error = "#pragma once\nnamespace ra {\nnamespace detail {}\n}\nnamespace other {\n}\n"
        self.assert_fails_with(
            [
                "lib/core/error.h:5: opens namespace other; module core's files open ra or a "
                "namespace nested in it",
            ],
            lib__core__error_DOT_h=error,
        )

    def test_an_include_of_the_audit_facade_from_inside_audit_is_named(self):
        cmake = CMAKE + "ra_module(audit   DIRS audit   DEPS ra_core)\n"
        changes = {
            "lib__audit__audit_DOT_h": '#pragma once\n#include "core/error.h"\n',
            "lib__audit__audit_DOT_cpp": '#include "audit/audit.h"\n',
            "lib__audit__plan_DOT_cpp": '#include "audit/audit.h"\n',
        }
        self.assert_fails_with(
            [
                "lib/audit/plan.cpp:1: includes audit/audit.h, its module's facade: include the "
                "lower header that declares what it uses",
            ],
            cmake=cmake, **changes,
        )

    def test_a_test_including_a_module_its_module_does_not_reach_is_named(self):
        test = '#include "spec/spec.h"\n#include "backend/ops.h"\n'
        self.assert_fails_with(
            [
                "tests/spec/parse_test.cpp:2: tests of spec include backend (backend/ops.h), "
                "which module spec does not depend on",
            ],
            tests__spec__parse_test_DOT_cpp=test,
        )

    def test_a_test_helper_of_a_module_the_module_does_not_reach_is_named(self):
        helper = '#pragma once\n#include "nn/model.h"\n'
        test = '#include "spec/spec.h"\n#include "nn/model_maker.h"\n'
        changes = {"tests__nn__model_maker_DOT_h": helper, "tests__spec__parse_test_DOT_cpp": test}
        self.assert_fails_with(
            [
                "tests/spec/parse_test.cpp:2: tests of spec include nn (nn/model_maker.h), which "
                "module spec does not depend on",
            ],
            **changes,
        )

    def test_what_a_support_header_includes_counts_for_the_test_that_includes_it(self):
        support = '#pragma once\n#include "support/nested.h"\n'
        nested = '#pragma once\n#include "nn/model.h"\n'
        changes = {"tests__support__temp_dir_DOT_h": support, "tests__support__nested_DOT_h": nested}
        self.assert_fails_with(
            [
                "tests/spec/parse_test.cpp:4: tests of spec include nn (nn/model.h through "
                "support/temp_dir.h through support/nested.h), which module spec does not depend "
                "on",
            ],
            **changes,
        )


if __name__ == "__main__":
    unittest.main()
