# LLVM's lld links the executables, the plugin and the test executables when it is installed
# (scripts/setup installs it): GNU ld took 3.5 CPU s to link the ASan build's test_audit (100 MB of
# debug information), lld 0.9 s, and CI links about 80 executables over its three builds (docs/ci-time.md). Only links driven by the C++ compiler (nvcc would not take the flag). REPRO_AUDIT_LLD=OFF
# keeps the system linker.
option(REPRO_AUDIT_LLD "Link with lld when it is installed" ON)
if(REPRO_AUDIT_LLD)
  include(CheckLinkerFlag)
  check_linker_flag(CXX "-fuse-ld=lld" RA_LINKER_LLD)
  if(RA_LINKER_LLD)
    add_link_options($<$<LINK_LANGUAGE:CXX>:-fuse-ld=lld>)
    message(STATUS "Linker: lld")
  endif()
endif()
