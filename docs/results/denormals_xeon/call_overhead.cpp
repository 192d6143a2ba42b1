// What flushing denormals adds to a call: train_on_batch of 784-256-256-10 at batch 32, and
// predict of one sample, back to back (the caller's OpenMP team still spinning from the last
// call) and after a 20 ms pause (the team asleep, as between a program's calls). Each
// figure is a median of 1000 calls (back to back) or 100 (after a pause). Built against two
// libraries, before and after the change, and run interleaved (docs/PERFORMANCE.md cites it):
//   g++ -std=c++20 -O2 -fopenmp -I src -I include docs/results/denormals_xeon/call_overhead.cpp \
//       LIB/libtandem.a -ldnnl -lz -lmpi -lzip -lhdf5_serial -o BIN
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "tandem/config.h"
#include "tandem/layers.h"
#include "tandem/model.h"

using Clock = std::chrono::steady_clock;

template <class F>
double median_us(int calls, double pause_s, F&& f) {
  std::vector<double> t;
  for (int i = 0; i < calls; ++i) {
    if (pause_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(pause_s));
    const auto start = Clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
  std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
  return t[t.size() / 2];
}

int main() {
  tandem::set_num_threads(2);
  tandem::set_random_seed(1);
  auto in = tandem::Input({784});
  auto h = tandem::Dense(256, "relu")(in);
  h = tandem::Dense(256, "relu")(h);
  auto out = tandem::Dense(10, "softmax")(h);
  tandem::Model model(in, out);
  model.compile("rmsprop", "categorical_crossentropy");
  tandem::Tensor x({32, 784}), y({32, 10}), one({1, 784});
  for (int64_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7) / 7.f;
  for (int64_t r = 0; r < 32; ++r) y[r * 10 + r % 10] = 1.f;
  for (int i = 0; i < 50; ++i) model.train_on_batch(x, y);
  for (const double pause : {0.0, 0.02}) {
    const int calls = pause > 0 ? 100 : 1000;
    const double step = median_us(calls, pause, [&] { model.train_on_batch(x, y); });
    const double predict = median_us(calls, pause, [&] { model.predict(one, {.verbose = 0}); });
    std::printf("%s: train_on_batch %.1f us, predict(1 sample) %.1f us\n",
                pause > 0 ? "after 20 ms" : "back to back", step, predict);
  }
}
