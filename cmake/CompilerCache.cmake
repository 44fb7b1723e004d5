# ccache, when installed (scripts/setup installs it), in front of every compiler: a clean clone on
# a machine that built the same sources before (CI runs on the machine of the session that
# submitted) compiles nothing it has compiled already. REPRO_AUDIT_CCACHE=OFF, or a launcher given
# on the command line, turns it off.
#  - CCACHE_DIR: $CCACHE_DIR, else ~/.cache/ccache; fixed when configuring, so a build started
#    from another environment uses the same cache. Unused (no cache at all) when ccache cannot
#    use it: a compiler cache must never fail a build.
#  - CCACHE_BASEDIR: paths under the source tree are hashed relative to it, so two clones in
#    different folders share results;
#  - CCACHE_NOHASHDIR: the build folder is not hashed either. The price: the debug information of
#    an object taken from the cache names the folder it was first compiled in.
#  - CCACHE_MAXSIZE: REPRO_AUDIT_CCACHE_SIZE (16G). CI's three builds and a session's builds did
#    not fit ccache's default 5 GB: it evicted (14 clean-ups in one session), and a warm CI run
#    then compiled what had been cached.
#  - CCACHE_SLOPPINESS: what ccache needs to cache the compiles that use the test executables'
#    precompiled header (tests/CMakeLists.txt; its __DATE__ and __TIME__ and its macros are part
#    of the precompiled header's own hash).
option(REPRO_AUDIT_CCACHE "Compile through ccache when it is installed" ON)
set(REPRO_AUDIT_CCACHE_SIZE "16G" CACHE STRING "The compiler cache's size limit (CCACHE_MAXSIZE)")
if(REPRO_AUDIT_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  find_program(RA_CCACHE ccache)
  set(ra_cache_dir "$ENV{CCACHE_DIR}")
  if(NOT ra_cache_dir AND DEFINED ENV{HOME})
    set(ra_cache_dir "$ENV{HOME}/.cache/ccache")
  endif()
  if(RA_CCACHE AND ra_cache_dir)
    # Usable = the folder can be made and written (ccache itself says nothing until a compile).
    execute_process(COMMAND ${CMAKE_COMMAND} -E make_directory "${ra_cache_dir}"
                    COMMAND ${CMAKE_COMMAND} -E touch "${ra_cache_dir}/.repro-audit-probe"
                    RESULT_VARIABLE ra_ccache_works OUTPUT_QUIET ERROR_QUIET)
    file(REMOVE "${ra_cache_dir}/.repro-audit-probe")
    if(ra_ccache_works EQUAL 0)
      set(ra_launcher env "CCACHE_DIR=${ra_cache_dir}" "CCACHE_BASEDIR=${PROJECT_SOURCE_DIR}"
                      CCACHE_NOHASHDIR=true "CCACHE_MAXSIZE=${REPRO_AUDIT_CCACHE_SIZE}"
                      CCACHE_SLOPPINESS=pch_defines,time_macros ${RA_CCACHE})
      set(CMAKE_CXX_COMPILER_LAUNCHER ${ra_launcher})
      if(NOT CMAKE_CUDA_COMPILER_LAUNCHER)
        set(CMAKE_CUDA_COMPILER_LAUNCHER ${ra_launcher})
      endif()
      message(STATUS "Compiler cache: ${RA_CCACHE} in ${ra_cache_dir}")
    else()
      message(STATUS "Compiler cache: off (ccache cannot use ${ra_cache_dir})")
    endif()
  endif()
endif()
