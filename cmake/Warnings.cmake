# Project-wide compile options, applied through the ra_options interface target.
add_library(ra_options INTERFACE)
target_compile_options(ra_options INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor>
  # Floating-point contraction (a*b+c -> fma) changes results between builds and machines; an
  # auditor of bitwise reproducibility must not let the compiler decide that silently.
  $<$<COMPILE_LANGUAGE:CXX>:-ffp-contract=off>
  # Position-independent code (CMakeLists.txt) without GCC's assumption that a global function
  # may be replaced at load time, which would stop it from inlining one (clang never assumes it).
  $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU>>:-fno-semantic-interposition>
  # The kernels silence GCC-only warnings by name (#pragma GCC diagnostic), unknown to clang.
  $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:Clang>>:-Wno-unknown-warning-option>)
# Sanitizer builds: every UBSan finding is fatal (-fno-sanitize-recover=all), so a test or a fuzz
# input that triggers one fails instead of printing a line nobody reads.
if(REPRO_AUDIT_SANITIZE OR REPRO_AUDIT_FUZZ)
  target_compile_options(ra_options INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address,undefined -fno-omit-frame-pointer
                              -fno-sanitize-recover=all>)
  target_link_options(ra_options INTERFACE -fsanitize=address,undefined)
  # Executables at a fixed address: the ASan suite starts the tool and a test executable some
  # thousands of times, and a position-independent one relocated about 500,000 pointers at each
  # start (libFuzzer's PC tables, ASan's globals): `repro-audit --version` took 136 CPU ms so,
  # 119 linked -no-pie, a test executable's start 130 and 75; the ASan suite 1,070 CPU s and 942
  # (perf stat; docs/ci-time.md). Nothing loads these executables as libraries.
  target_link_options(ra_options INTERFACE
    $<$<STREQUAL:$<TARGET_PROPERTY:TYPE>,EXECUTABLE>:-no-pie>)
endif()
if(REPRO_AUDIT_FUZZ)
  # Coverage feedback for libFuzzer in the libraries; the fuzz targets add -fsanitize=fuzzer. Not
  # in a target whose RA_NO_FUZZ_COVERAGE property is set: the test executables, which no fuzzer
  # runs (8% of a test source's compile; they still link the instrumented libraries), and the
  # modules below, which no fuzz target's input goes through (the fuzz targets read specs, IDX
  # files, traces, safetensors, npy, manifests, kept outputs and shard names: core, formats, spec,
  # data, trace and rundir; record and audit, which held the manifest and kept outputs before
  # rundir did, keep theirs). Their counters gave the fuzzers nothing and slowed the ASan
  # suite, which runs the same libraries: the CPU backend's kernels in its slowest tests (an audit
  # that localises a race, 7.3 s in the Release suite, took 127 s under ASan with the counters).
  # They keep ASan and UBSan. lib/CMakeLists.txt sets the property on them.
  set(ra_fuzz_unreached_modules ra_rng ra_optim ra_backend ra_backend_cpu ra_nn ra_train ra_compare
                                ra_report)
  target_compile_options(ra_options INTERFACE
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<NOT:$<BOOL:$<TARGET_PROPERTY:RA_NO_FUZZ_COVERAGE>>>>:-fsanitize=fuzzer-no-link>)
endif()
if(REPRO_AUDIT_TSAN)
  target_compile_options(ra_options INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=thread -fno-omit-frame-pointer>)
  target_link_options(ra_options INTERFACE -fsanitize=thread)
endif()
