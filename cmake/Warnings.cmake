# Project-wide compile options, applied through the ra_options interface target.
add_library(ra_options INTERFACE)
target_compile_options(ra_options INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor>
  # Floating-point contraction (a*b+c -> fma) changes results between builds and machines; an
  # auditor of bitwise reproducibility must not let the compiler decide that silently.
  $<$<COMPILE_LANGUAGE:CXX>:-ffp-contract=off>)
if(REPRO_AUDIT_SANITIZE)
  target_compile_options(ra_options INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer
                                              -fno-sanitize-recover=undefined)
  target_link_options(ra_options INTERFACE -fsanitize=address,undefined)
endif()
