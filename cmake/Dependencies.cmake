# Every dependency comes from Debian 12 packages (scripts/setup installs them).
find_package(Threads REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(spdlog REQUIRED)
find_package(ZLIB REQUIRED)

# Debian's libxxhash-dev ships no CMake config; find header and library by hand.
find_path(XXHASH_INCLUDE_DIR xxhash.h REQUIRED)
find_library(XXHASH_LIBRARY NAMES xxhash REQUIRED)
add_library(xxhash::xxhash UNKNOWN IMPORTED)
set_target_properties(xxhash::xxhash PROPERTIES IMPORTED_LOCATION "${XXHASH_LIBRARY}"
                                                INTERFACE_INCLUDE_DIRECTORIES "${XXHASH_INCLUDE_DIR}")
