// The skip-is-failure mode itself: with TANDEM_NO_SKIP=1 a test that would skip fails.
#include "skip.h"

#include <gtest/gtest-spi.h>

#include <cstdlib>
#include <optional>
#include <string>

namespace {

class NoSkipEnv {
 public:
  explicit NoSkipEnv(const char* value) {
    if (const char* old = std::getenv("TANDEM_NO_SKIP")) old_ = old;
    value ? setenv("TANDEM_NO_SKIP", value, 1) : unsetenv("TANDEM_NO_SKIP");
  }
  ~NoSkipEnv() { old_ ? setenv("TANDEM_NO_SKIP", old_->c_str(), 1) : unsetenv("TANDEM_NO_SKIP"); }

 private:
  std::optional<std::string> old_;
};

void skip_for_want_of_something() {
  TANDEM_SKIP("needs something absent");
}

TEST(SkipMode, ASkipIsAFailureWhenForbidden) {
  NoSkipEnv env("1");
  EXPECT_TRUE(tandem::test::skipping_forbidden());
  EXPECT_FATAL_FAILURE(skip_for_want_of_something(), "TANDEM_NO_SKIP=1 forbids it");
}

TEST(SkipMode, OtherwiseItIsASkip) {
  NoSkipEnv env(nullptr);
  EXPECT_FALSE(tandem::test::skipping_forbidden());
  NoSkipEnv zero("0");
  EXPECT_FALSE(tandem::test::skipping_forbidden());
}

}  // namespace
