// Small helpers shared by tests: toy datasets, temp dirs, exception-message checks.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>

#include "tandem/tandem.h"

namespace tandem::test {

// A fresh directory under the system temp dir, removed at scope exit.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            ("tandem_test_" + std::to_string(rd()) + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// n samples of `features` values in [-1, 1]; class = which of `classes` slices of the
// first feature the sample falls in (learnable by a small MLP).
struct Toy {
  Tensor x;
  Tensor y_onehot;
  Tensor y_labels;
};
inline Toy make_toy(int64_t n, int64_t features, int64_t classes, uint64_t seed) {
  std::mt19937 gen(static_cast<uint32_t>(seed));
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  Toy t{Tensor({n, features}), Tensor({n, classes}), Tensor({n})};
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < features; ++j) t.x[i * features + j] = u(gen);
    int64_t c = static_cast<int64_t>((t.x[i * features] + 1.f) / 2.f * classes);
    c = std::min(c, classes - 1);
    t.y_onehot[i * classes + c] = 1.f;
    t.y_labels[i] = static_cast<float>(c);
  }
  return t;
}

// Runs f, expects exception E whose message contains every fragment.
template <class E, class F>
void expect_error(F&& f, std::initializer_list<std::string> fragments) {
  try {
    f();
    ADD_FAILURE() << "expected an exception";
  } catch (const E& e) {
    const std::string what = e.what();
    for (const auto& fragment : fragments) {
      EXPECT_NE(what.find(fragment), std::string::npos)
          << "message \"" << what << "\" lacks \"" << fragment << "\"";
    }
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

inline double max_abs_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  double m = 0;
  for (int64_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    m = std::max(m, static_cast<double>(std::abs(a[i] - b[i])));
  }
  return m;
}

}  // namespace tandem::test
