# ra_precompile_headers(TARGET HEADER...): the heavy third-party headers a target's sources all
# include (Catch2, nlohmann/json, CLI11, spdlog) parsed once per target instead of once per source:
# two thirds of a small source's compile is parsing them (README, "CI"). ccache still caches the
# sources that use the precompiled header (cmake/CompilerCache.cmake: its sloppiness; GCC:
# -fpch-preprocess), and a miss compiles as usual. REPRO_AUDIT_PCH=OFF compiles every source on its
# own, so a source that forgets one of these includes fails there.
option(REPRO_AUDIT_PCH "Precompile the heavy third-party headers of the tests and the tool" ON)
function(ra_precompile_headers target)
  if(NOT REPRO_AUDIT_PCH)
    return()
  endif()
  target_precompile_headers(${target} PRIVATE ${ARGN})
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_LAUNCHER)
    # ccache can cache a GCC compile that uses a precompiled header only with this.
    target_compile_options(${target} PRIVATE -fpch-preprocess)
  elseif(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    # No time stamps of the headers in clang's precompiled header: one that ccache returns would
    # otherwise be refused as older than the cmake_pch.hxx of a new build folder.
    target_compile_options(${target} PRIVATE "SHELL:-Xclang -fno-pch-timestamp")
  endif()
endfunction()
