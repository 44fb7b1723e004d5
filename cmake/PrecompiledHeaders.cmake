# ra_precompile_headers(TARGET HEADER...): the heavy third-party headers a target's sources all
# include (Catch2, nlohmann/json, CLI11, spdlog) parsed once per target instead of once per source:
# two thirds of a small source's compile is parsing them (docs/ci-time.md). ccache still caches the
# sources that use the precompiled header (cmake/CompilerCache.cmake: its sloppiness; GCC:
# -fpch-preprocess), and a miss compiles as usual. REPRO_AUDIT_PCH=OFF compiles every source on its
# own, so a source that forgets one of these includes fails there.
option(REPRO_AUDIT_PCH "Precompile the heavy third-party headers of the libraries, tests and tool" ON)
function(ra_precompile_headers target)
  if(NOT REPRO_AUDIT_PCH)
    return()
  endif()
  target_precompile_headers(${target} PRIVATE ${ARGN})
  ra_pch_cache_options(${target})
endfunction()

# The options every source that uses a precompiled header needs, so that ccache caches it.
function(ra_pch_cache_options target)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_LAUNCHER)
    # ccache can cache a GCC compile that uses a precompiled header only with this.
    target_compile_options(${target} PRIVATE -fpch-preprocess)
  elseif(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    # No time stamps of the headers in clang's precompiled header: one that ccache returns would
    # otherwise be refused as older than the cmake_pch.hxx of a new build folder.
    target_compile_options(${target} PRIVATE "SHELL:-Xclang -fno-pch-timestamp")
  endif()
endfunction()

# The library modules' sources share one precompiled header: nlohmann/json and the standard
# headers most of them include. Parsing those was 2.3-3.5 of a source's 4-15 CPU s at GCC -O3
# (lib/audit/manifest.cpp 11.7 -> 9.5, lib/backend/cpu/cpu_conv.cpp 4.1 -> 1.7), and a build
# compiles about 190 library sources (docs/ci-time.md). It is built once, by ra_library_pch, and
# every module compiled with the same flags reuses it: the modules' flags differ only in macros
# the header does not use. A cold target (cmake/ColdTargets.cmake) is compiled with other flags
# and precompiles its own. core and rng include no JSON and get none.
set(ra_library_pch_headers <nlohmann/json.hpp> <algorithm> <array> <cstddef> <cstdint>
                           <filesystem> <functional> <map> <memory> <optional> <string>
                           <string_view> <unordered_map> <utility> <vector>)
function(ra_library_precompile_headers target)
  if(NOT REPRO_AUDIT_PCH)
    return()
  endif()
  if(target IN_LIST REPRO_AUDIT_COLD_TARGETS)
    ra_precompile_headers(${target} ${ra_library_pch_headers})
    return()
  endif()
  # clang refuses a header built with libFuzzer's coverage in a module compiled without it
  # (cmake/Warnings.cmake): those modules share a second one.
  set(holder ra_library_pch)
  get_target_property(no_coverage ${target} RA_NO_FUZZ_COVERAGE)
  if(REPRO_AUDIT_FUZZ AND no_coverage)
    set(holder ra_library_pch_uncovered)
  endif()
  if(NOT TARGET ${holder})
    add_library(${holder} OBJECT "${PROJECT_SOURCE_DIR}/cmake/empty.cpp")
    target_link_libraries(${holder} PRIVATE ra_core nlohmann_json::nlohmann_json ra_options)
    set_target_properties(${holder} PROPERTIES RA_NO_FUZZ_COVERAGE "${no_coverage}")
    ra_precompile_headers(${holder} ${ra_library_pch_headers})
  endif()
  target_precompile_headers(${target} REUSE_FROM ${holder})
  ra_pch_cache_options(${target})
endfunction()
