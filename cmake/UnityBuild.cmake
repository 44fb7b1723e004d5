# Unity builds: each target's C++ sources are compiled in batches, each batch one translation
# unit that #includes its sources (CMake's UNITY_BUILD). A source alone spends most of its compile
# on what every source of its target repeats: the precompiled header's load and the templates of
# nlohmann/json, Catch2 and the standard library that each source instantiates and emits again.
# Measured on this 2-core machine, no compiler cache (docs/ci-time.md): lib/audit's 23 sources at
# GCC -O3, 152 CPU s one by one, 42 s as one unit; tests/compare's 15 sources at -O0, 99.5 s one
# by one, 21.5 s as one unit. A clean clone compiles three builds of everything (docs/ci-time.md), so
# this is most of CI's cold time.
#
# Batches of REPRO_AUDIT_UNITY_BATCH_SIZE sources (CMake's default, 8): larger batches save a
# little more (a unit's fixed cost is about 5 CPU s), smaller ones keep an edit's recompile short.
# Sources with flags of their own (COMPILE_DEFINITIONS, COMPILE_OPTIONS) are compiled alone, as
# CMake does for them; so are those that set their own target instruction set with pragmas
# (lib/CMakeLists.txt). In one unit, two sources' file-local names meet: scripts/check-unity-names
# (its own CI stage, unity-names) fails on a name two sources of one target give internal linkage.
# REPRO_AUDIT_UNITY_BUILD=OFF compiles every source alone, as an editor's compile command does, so
# that a source that compiles only after another's includes fails there.
option(REPRO_AUDIT_UNITY_BUILD "Compile each target's sources in batches (unity build)" ON)
set(REPRO_AUDIT_UNITY_BATCH_SIZE 8 CACHE STRING "Sources per unity batch (0: the whole target)")
set(CMAKE_UNITY_BUILD ${REPRO_AUDIT_UNITY_BUILD})
set(CMAKE_UNITY_BUILD_BATCH_SIZE ${REPRO_AUDIT_UNITY_BATCH_SIZE})
