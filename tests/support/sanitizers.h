#pragma once
// Whether this test executable was built with a sanitizer (scripts/test-sanitizers): a test whose
// work is a sweep over sizes may sweep fewer there, where each float operation costs tens of times
// more, so that it stays within CTest's time limit; the Release suite sweeps them all. GCC defines
// __SANITIZE_ADDRESS__ and __SANITIZE_THREAD__; clang answers __has_feature.
namespace ra::test {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

}  // namespace ra::test
