// The MPI world and gradient communicator, run by ctest under mpirun with 2 and 3 ranks:
// all-reduce of odd and empty sizes, many operations in flight, the deterministic sum
// (bitwise a fixed tree over ranks, the same on every rank), bf16 compression within its
// error bound, broadcast, allgather, the start-up job check, and the API fit across ranks
// (one and two devices per rank) against the same fit in one process.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "parallel/shared_memory_communicator.h"
#include "parallel/world.h"
#include "tandem/mpi.h"
#include "tandem/tandem.h"
#include "train/job_check.h"

namespace tandem::detail {
namespace {

World& world() {
  return *current_world();
}

// Rank r's test data for element i: exact in float, different on every rank.
float value(int rank, int64_t i) {
  return static_cast<float>((rank + 1) * 3 + i % 11) * 0.25f;
}

class MpiAllreduce : public ::testing::TestWithParam<int64_t> {};

TEST_P(MpiAllreduce, SumsIntoEveryRank) {
  const int64_t count = GetParam();
  auto comm = world().gradient_communicator({});
  std::vector<float> data(count);
  for (int64_t i = 0; i < count; ++i) data[i] = value(comm->rank(), i);
  comm->allreduce(data.data(), count);
  for (int64_t i = 0; i < count; ++i) {
    float expected = 0;
    for (int r = 0; r < comm->size(); ++r) expected += value(r, i);
    ASSERT_EQ(data[i], expected) << "element " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, MpiAllreduce, ::testing::Values(0, 1, 17, 1000, 100003));

TEST(MpiWorld, ManyOperationsInFlightWaitedInReverse) {
  auto comm = world().gradient_communicator({});
  constexpr int kOps = 120;
  std::vector<std::vector<float>> buffers(kOps, std::vector<float>(257));
  std::vector<Communicator::Request> requests;
  for (int k = 0; k < kOps; ++k) {
    for (size_t i = 0; i < buffers[k].size(); ++i) buffers[k][i] = value(comm->rank(), k + i);
    requests.push_back(comm->allreduce_async(buffers[k].data(), 257));
    comm->test(requests.back());
  }
  for (int k = kOps - 1; k >= 0; --k) comm->wait(requests[k]);
  for (int k = 0; k < kOps; ++k) {
    for (size_t i = 0; i < buffers[k].size(); ++i) {
      float expected = 0;
      for (int r = 0; r < comm->size(); ++r) expected += value(r, k + i);
      ASSERT_EQ(buffers[k][i], expected);
    }
  }
}

// Random values whose float sums round differently in different orders.
std::vector<float> noisy(int rank, int64_t count) {
  std::mt19937 gen(1234 + rank);
  std::normal_distribution<float> dist(0.f, 1.f);
  std::vector<float> v(count);
  for (auto& x : v) x = dist(gen) * std::exp(dist(gen) * 3);
  return v;
}

TEST(MpiWorld, DeterministicSumIsTheFixedTreeOnEveryRank) {
  auto comm = world().gradient_communicator({.deterministic = true});
  const int64_t count = 30011;
  std::vector<float> data = noisy(comm->rank(), count);
  comm->allreduce(data.data(), count);
  std::vector<std::vector<float>> all;
  std::vector<float*> sources;
  for (int r = 0; r < comm->size(); ++r) all.push_back(noisy(r, count));
  for (auto& a : all) sources.push_back(a.data());
  std::vector<float> expected(count);
  tree_sum(sources, expected.data(), 0, count);
  for (int64_t i = 0; i < count; ++i) ASSERT_EQ(data[i], expected[i]) << "element " << i;
}

TEST(MpiWorld, Bf16CompressionErrorIsBounded) {
  auto comm = world().gradient_communicator({.bf16 = true});
  const int64_t count = 50000;
  std::vector<float> data = noisy(comm->rank(), count);
  comm->allreduce(data.data(), count);
  const int p = comm->size();
  // Each input is rounded to bf16 (relative error <= 2^-9), and each of the p - 1 partial
  // sums is rounded again: |error| <= p * 2^-8 * sum |x_r| is a safe bound.
  std::vector<std::vector<float>> all;
  for (int r = 0; r < p; ++r) all.push_back(noisy(r, count));
  int64_t inexact = 0;
  double worst_relative = 0;
  for (int64_t i = 0; i < count; ++i) {
    double exact = 0, magnitude = 0;
    for (int r = 0; r < p; ++r) {
      exact += all[r][i];
      magnitude += std::fabs(all[r][i]);
    }
    const double error = std::fabs(data[i] - exact);
    ASSERT_LE(error, p * std::ldexp(magnitude, -8)) << "element " << i;
    worst_relative = std::max(worst_relative, error / magnitude);
    inexact += error > 0;
  }
  EXPECT_GT(inexact, 0) << "bf16 compression changed nothing: is it applied?";
  EXPECT_GT(worst_relative, 1e-4);
}

TEST(MpiWorld, BroadcastAllgatherAndSum) {
  auto comm = world().gradient_communicator({});
  std::vector<float> floats(1001, static_cast<float>(comm->rank()));
  comm->broadcast(floats.data(), 1001, comm->size() - 1);
  for (float f : floats) ASSERT_EQ(f, static_cast<float>(comm->size() - 1));

  std::string bytes = world().rank() == 0 ? std::string(3000000, 'x') + "end" : "junk";
  world().broadcast(bytes, 0);
  EXPECT_EQ(bytes.size(), 3000003u);
  EXPECT_EQ(bytes.substr(bytes.size() - 3), "end");

  const auto all = world().allgather({static_cast<uint64_t>(world().rank()), 7});
  ASSERT_EQ(all.size(), 2u * world().size());
  for (int r = 0; r < world().size(); ++r) {
    EXPECT_EQ(all[2 * r], static_cast<uint64_t>(r));
    EXPECT_EQ(all[2 * r + 1], 7u);
  }
  // Gather: ranks of different lengths (rank r sends r+1 copies of 'a'+r) arrive in order.
  const auto parts =
      world().gather(std::string(world().rank() + 1, static_cast<char>('a' + world().rank())), 1);
  if (world().rank() == 1) {
    ASSERT_EQ(parts.size(), static_cast<size_t>(world().size()));
    for (int r = 0; r < world().size(); ++r) {
      EXPECT_EQ(parts[r], std::string(r + 1, static_cast<char>('a' + r)));
    }
  } else {
    EXPECT_TRUE(parts.empty());
  }
  double sums[2] = {1.0, static_cast<double>(world().rank())};
  world().sum(sums, 2);
  EXPECT_EQ(sums[0], world().size());
  EXPECT_EQ(sums[1], world().size() * (world().size() - 1) / 2.0);
  comm->barrier();
}

TEST(MpiWorld, JobCheckNamesTheRankAndField) {
  const uint64_t batch = world().rank() == world().size() - 1 ? 64 : 128;
  try {
    check_same_job(world(), {{"model architecture", 42, true}, {"batch size", batch}});
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("rank " + std::to_string(world().size() - 1) + " on " + world().host() +
                           ": batch size is 64, "
                           "rank 0's is 128"),
              std::string::npos)
        << message;
    EXPECT_EQ(message.find("model architecture"), std::string::npos) << message;
  }
  EXPECT_NO_THROW(check_same_job(world(), {{"batch size", 128}}));
}

// A small model trained across the ranks against the same fit in one process (every rank
// runs that reference alone, with distributed = false).
Model small_model(uint64_t seed) {
  set_random_seed(seed);
  Sequential m({20}, {Dense(32, "relu"), Dropout(0.2), Dense(16, "tanh"), Dense(3, "softmax")});
  m.compile(SGD(0.05, 0.9), "categorical_crossentropy", {"accuracy"});
  return m;
}

// The API fit across ranks against the same fit in one process on one device: with one
// device per rank, and with two (the hierarchical reducer: a rank's devices share one
// parameter buffer, one all-reduce per bucket crosses processes; run under ThreadSanitizer
// by scripts/test.sh). Deterministic mode is bitwise the one-device run.
class FitAcrossRanks : public ::testing::TestWithParam<int> {};
TEST_P(FitAcrossRanks, MatchesOneProcess) {
  const int per_rank = GetParam();
  std::mt19937 gen(7);
  std::normal_distribution<float> dist;
  Tensor x({203, 20}), y({203, 3});
  for (auto& v : x.values()) v = dist(gen);
  for (int64_t i = 0; i < 203; ++i) y.values()[i * 3 + (i % 3)] = 1;
  for (const bool deterministic : {false, true}) {
    if (deterministic && 4 % (per_rank * world().size()) != 0) continue;
    FitOptions o{.batch_size = 32,
                 .epochs = 3,
                 .verbose = 0,
                 .seed = 11,
                 .threads_per_device = 1,
                 .deterministic = deterministic};
    Model alone = small_model(5), across = small_model(5);
    o.distributed = false;
    const History h1 = alone.fit(x, y, o);
    o.distributed = true;
    o.devices = per_rank;
    const History hn = across.fit(x, y, o);
    const auto w1 = alone.get_weights(), wn = across.get_weights();
    for (size_t k = 0; k < w1.size(); ++k) {
      for (size_t i = 0; i < w1[k].values().size(); ++i) {
        const float a = w1[k].values()[i], b = wn[k].values()[i];
        if (deterministic) {
          ASSERT_EQ(a, b) << "array " << k << " element " << i;
        } else {
          ASSERT_NEAR(a, b, 1e-5 * std::max(1.f, std::fabs(a))) << "array " << k;
        }
      }
    }
    EXPECT_NEAR(h1.history.at("loss").back(), hn.history.at("loss").back(), 1e-5);
  }
}
INSTANTIATE_TEST_SUITE_P(DevicesPerRank, FitAcrossRanks, ::testing::Values(1, 2));

// A convnet with BatchNormalization across the ranks, deterministic: bitwise the one-process
// run, moving statistics included (they travel through the same all-reduce as gradients).
TEST(FitAcrossRanksConvnet, DeterministicWithBatchNormalizationIsBitwiseOneProcess) {
  if (4 % world().size() != 0) return;  // deterministic mode needs ranks dividing 4 shards
  std::mt19937 gen(3);
  std::uniform_real_distribution<float> dist(-1, 1);
  Tensor x({96, 6, 6, 2}), y({96, 3});
  for (auto& v : x.values()) v = dist(gen);
  for (int64_t i = 0; i < 96; ++i) y.values()[i * 3 + (i % 3)] = 1;
  const auto convnet = [] {
    set_random_seed(8);
    auto in = Input({6, 6, 2});
    auto h = Conv2D(4, 3, "linear", {.padding = "same", .use_bias = false})(in);
    h = MaxPooling2D(2)(Activation("relu")(BatchNormalization()(h)));
    Model m(in, Dense(3, "softmax")(Flatten()(h)));
    m.compile(Adam(0.01), "categorical_crossentropy");
    return m;
  };
  FitOptions o{.batch_size = 16,
               .epochs = 2,
               .verbose = 0,
               .seed = 4,
               .threads_per_device = 1,
               .deterministic = true};
  Model alone = convnet(), across = convnet();
  o.distributed = false;
  alone.fit(x, y, o);
  o.distributed = true;
  across.fit(x, y, o);
  const auto w1 = alone.get_weights(), wn = across.get_weights();
  for (size_t k = 0; k < w1.size(); ++k) {
    ASSERT_EQ(std::memcmp(w1[k].data(), wn[k].data(), w1[k].size() * sizeof(float)), 0)
        << "array " << k;
  }
  EXPECT_NE(w1[4].values()[0], 1.f);  // moving_variance (kernel, gamma, beta, mean, variance)
}

// Synchronized BatchNormalization across ranks (and their devices): the statistics of the
// whole global batch, so the run matches one process on one device within rounding.
TEST(FitAcrossRanksConvnet, SynchronizedBatchNormalizationMatchesOneDevice) {
  std::mt19937 gen(5);
  std::uniform_real_distribution<float> dist(-1, 1);
  Tensor x({90, 6, 6, 2}), y({90, 3});
  for (auto& v : x.values()) v = 2 * dist(gen) + 0.5f;
  for (int64_t i = 0; i < 90; ++i) y.values()[i * 3 + (i % 3)] = 1;
  const auto convnet = [](bool synchronized) {
    set_random_seed(8);
    const BatchNormalizationOptions bn{.momentum = 0.9, .synchronized = synchronized};
    auto in = Input({6, 6, 2});
    auto h = Conv2D(4, 3, "linear", {.padding = "same", .use_bias = false})(in);
    h = MaxPooling2D(2)(Activation("relu")(BatchNormalization(bn)(h)));
    h = BatchNormalization(bn)(Dense(6, "tanh")(Flatten()(h)));
    Model m(in, Dense(3, "softmax")(h));
    m.compile(SGD(0.1, 0.9), "categorical_crossentropy");
    return m;
  };
  // 90 = 5 batches of 16 and one of 10; with 2 devices per rank some see few rows.
  FitOptions o{.batch_size = 16, .epochs = 2, .verbose = 0, .seed = 4, .threads_per_device = 1};
  Model alone = convnet(true);
  o.distributed = false;
  alone.fit(x, y, o);
  const auto w1 = alone.get_weights();
  const auto worst = [&](const std::vector<Tensor>& w) {
    double e = 0;
    for (size_t k = 0; k < w1.size(); ++k) {
      double scale = 1e-12, diff = 0;
      for (int64_t i = 0; i < w1[k].size(); ++i) {
        scale = std::max(scale, double(std::abs(w1[k].values()[i])));
        diff = std::max(diff, double(std::abs(w[k].values()[i] - w1[k].values()[i])));
      }
      e = std::max(e, diff / scale);
    }
    return e;
  };
  o.distributed = true;
  for (int devices : {1, 2}) {
    o.devices = devices;
    Model across = convnet(true);
    across.fit(x, y, o);
    EXPECT_LE(worst(across.get_weights()), 1e-5) << devices << " devices per rank";
  }
  if (world().size() > 1) {  // each rank's own statistics: other weights
    Model local = convnet(false);
    o.devices = 1;
    local.fit(x, y, o);
    EXPECT_GT(worst(local.get_weights()), 1e-3);
  }
}

}  // namespace
}  // namespace tandem::detail

int main(int argc, char** argv) {
  tandem::mpi::Session mpi(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  if (tandem::mpi::size() < 2) {
    std::fprintf(stderr, "run this under mpirun with 2 or more ranks\n");
    return 1;
  }
  // Only rank 0 reports; every rank still runs (and fails on) every test.
  if (tandem::mpi::rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  const int failed = RUN_ALL_TESTS();
  // A failure on any rank fails the job.
  double failures = failed != 0;
  tandem::detail::current_world()->sum(&failures, 1);
  return failures > 0 ? 1 : 0;
}
