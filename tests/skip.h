// TANDEM_SKIP(message): skips the test on a developer's machine; with TANDEM_NO_SKIP=1
// (.ci/run sets it) it fails instead, so CI cannot pass by skipping a test whose dependency
// is missing. Use it in a test body or SetUp() (a fatal failure there skips the body).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string_view>

namespace tandem::test {
inline bool skipping_forbidden() {
  const char* value = std::getenv("TANDEM_NO_SKIP");
  return value && std::string_view(value) == "1";
}
}  // namespace tandem::test

#define TANDEM_SKIP(message)                                                \
  do {                                                                      \
    if (::tandem::test::skipping_forbidden()) {                             \
      FAIL() << "would skip, and TANDEM_NO_SKIP=1 forbids it: " << message; \
    }                                                                       \
    GTEST_SKIP() << message;                                                \
  } while (0)
