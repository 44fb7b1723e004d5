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
endif()
if(REPRO_AUDIT_FUZZ)
  # Coverage feedback for libFuzzer in every library; the fuzz targets add -fsanitize=fuzzer. Not
  # in a target whose RA_NO_FUZZ_COVERAGE property is set: the test executables, which no fuzzer
  # runs (8% of a test source's compile; they still link the instrumented libraries).
  target_compile_options(ra_options INTERFACE
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<NOT:$<BOOL:$<TARGET_PROPERTY:RA_NO_FUZZ_COVERAGE>>>>:-fsanitize=fuzzer-no-link>)
endif()
if(REPRO_AUDIT_TSAN)
  target_compile_options(ra_options INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=thread -fno-omit-frame-pointer>)
  target_link_options(ra_options INTERFACE -fsanitize=thread)
endif()
