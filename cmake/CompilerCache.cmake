# ccache, when installed (scripts/setup installs it), in front of every compiler: a clean clone on
# a machine that built the same sources before (CI runs on the machine of the session that
# submitted) compiles nothing it has compiled already. REPRO_AUDIT_CCACHE=OFF, or a launcher given
# on the command line, turns it off.
#  - CCACHE_BASEDIR: paths under the source tree are hashed relative to it, so two clones in
#    different folders share results;
#  - CCACHE_NOHASHDIR: the build folder is not hashed either. The price: the debug information of
#    an object taken from the cache names the folder it was first compiled in.
option(REPRO_AUDIT_CCACHE "Compile through ccache when it is installed" ON)
if(REPRO_AUDIT_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  find_program(RA_CCACHE ccache)
  if(RA_CCACHE)
    set(ra_launcher env "CCACHE_BASEDIR=${PROJECT_SOURCE_DIR}" CCACHE_NOHASHDIR=true ${RA_CCACHE})
    set(CMAKE_CXX_COMPILER_LAUNCHER ${ra_launcher})
    if(NOT CMAKE_CUDA_COMPILER_LAUNCHER)
      set(CMAKE_CUDA_COMPILER_LAUNCHER ${ra_launcher})
    endif()
    message(STATUS "Compiler cache: ${RA_CCACHE}")
  endif()
endif()
