# Cold targets: code that no test, benchmark or user times, compiled at lower optimisation than
# the build's own. The tool's sources are the command line (CLI11's templates, JSON and the
# printed tables: each took 25 CPU s at GCC -O3, 17 at -O1; 41 at clang -O2 with ASan, UBSan and
# libFuzzer coverage, 13 at -O0), and every computation they start runs in lib/, which keeps the
# build's flags (docs/ci-time.md). The sanitizer builds list more: there the modules that no
# fuzzer runs and no test runs long (compare, report; in the TSan build also the file readers)
# cost CPU time twice over, and the sanitizers check -O0 code as well. A cold target also gets no
# libFuzzer coverage (cmake/Warnings.cmake): no fuzz target reaches it.
set(REPRO_AUDIT_COLD_TARGETS "repro-audit" CACHE STRING
    "Targets compiled with REPRO_AUDIT_COLD_OPTIMIZATION instead of the build type's flags")
set(REPRO_AUDIT_COLD_OPTIMIZATION "-O1" CACHE STRING
    "Optimisation flags of the cold targets (empty: the build type's)")
# Called once every target exists (CMakeLists.txt); the library modules ask IN_LIST first
# (cmake/PrecompiledHeaders.cmake: a cold module precompiles its own header).
function(ra_compile_cold_targets)
  foreach(cold IN LISTS REPRO_AUDIT_COLD_TARGETS)
    if(NOT TARGET ${cold})
      message(FATAL_ERROR "REPRO_AUDIT_COLD_TARGETS: no target ${cold}")
    endif()
    get_target_property(cold_type ${cold} TYPE)
    if(cold_type STREQUAL "INTERFACE_LIBRARY")
      continue()
    endif()
    separate_arguments(cold_flags UNIX_COMMAND "${REPRO_AUDIT_COLD_OPTIMIZATION}")
    foreach(flag IN LISTS cold_flags)
      target_compile_options(${cold} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${flag}>)
    endforeach()
    set_target_properties(${cold} PROPERTIES RA_NO_FUZZ_COVERAGE ON)
  endforeach()
endfunction()
