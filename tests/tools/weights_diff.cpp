// weights_diff A B [TOLERANCE]: compares the weights of two saved models (tandem save /
// --save). Prints the largest difference, relative to max(1, |value|), and exits 0 when
// it is within TOLERANCE (default 0: bitwise equal), 1 when not, 2 on bad input.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tandem/error.h"
#include "tandem/model.h"

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4) {
    std::fprintf(stderr, "usage: weights_diff A.tandem B.tandem [TOLERANCE]\n");
    return 2;
  }
  try {
    const double tolerance = argc == 4 ? std::stod(argv[3]) : 0.0;
    const auto a = tandem::Model::load(argv[1]).get_weights();
    const auto b = tandem::Model::load(argv[2]).get_weights();
    if (a.size() != b.size()) {
      std::fprintf(stderr, "weights_diff: %zu vs %zu weight arrays\n", a.size(), b.size());
      return 1;
    }
    double worst = 0;
    size_t worst_array = 0, differing = 0, total = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i].shape() != b[i].shape()) {
        std::fprintf(stderr, "weights_diff: array %zu has different shapes\n", i);
        return 1;
      }
      const auto va = a[i].values(), vb = b[i].values();
      for (size_t j = 0; j < va.size(); ++j) {
        const double d = std::fabs(static_cast<double>(va[j]) - vb[j]) /
                         std::max(1.0, std::fabs(static_cast<double>(va[j])));
        if (va[j] != vb[j] || std::isnan(d)) ++differing;
        if (!(d <= worst)) {
          worst = std::isnan(d) ? INFINITY : d;
          worst_array = i;
        }
      }
      total += va.size();
    }
    std::printf("max relative difference %.3g (array %zu); %zu of %zu values differ\n", worst,
                worst_array, differing, total);
    return worst <= tolerance ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "weights_diff: %s\n", e.what());
    return 2;
  }
}
