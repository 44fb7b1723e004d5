#pragma once
// What every fuzz target shares: the one outcome allowed for bad input is ra::InputError (exit 2
// in the app). Any other exception would reach main.cpp as an internal error (exit 3), so it is
// reported here as a crash, as is a broken round-trip invariant; libFuzzer then saves the input.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <typeinfo>

#include "core/error.h"

namespace ra::fuzz {

[[noreturn]] inline void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz target: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

inline void require(bool condition, const char* what) {
  if (!condition) fail(std::string("invariant broken: ") + what);
}

// Runs `parse`; true when it returned, false when it refused the input with ra::InputError. Any
// other exception aborts with its type and message.
template <class Parse>
bool accepts(Parse&& parse) {
  try {
    parse();
    return true;
  } catch (const InputError& e) {
    // Building the message is part of the error path (names, paths, echoed input): touch it.
    volatile std::size_t length = std::string(e.what()).size();
    (void)length;
    return false;
  } catch (const std::exception& e) {
    fail(std::string("unexpected exception ") + typeid(e).name() + ": " + e.what());
  }
}

}  // namespace ra::fuzz
