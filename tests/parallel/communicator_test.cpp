// The shared-memory communicator: correctness for odd sizes, tiny and empty buffers, many
// operations in flight, broadcast, and an abort that releases every waiting rank.
// Runs clean under ThreadSanitizer (the tsan CI build runs this suite).
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "parallel/device_group.h"
#include "parallel/shared_memory_communicator.h"
#include "profile/phase_timer.h"
#include "tandem/config.h"
#include "tandem/error.h"

namespace tandem::detail {
namespace {

// Runs body(comm) on `ranks` threads sharing one group.
template <class Body>
void on_ranks(int ranks, Body body) {
  DeviceBarrier barrier(ranks);
  auto group = std::make_shared<SharedMemoryGroup>(ranks, &barrier);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      SharedMemoryCommunicator comm(group, r);
      body(comm);
    });
  }
  for (auto& t : threads) t.join();
}

class AllreduceSizes : public ::testing::TestWithParam<std::tuple<int, int64_t>> {};

TEST_P(AllreduceSizes, SumsIntoEveryRank) {
  const auto [ranks, count] = GetParam();
  std::vector<std::vector<float>> results(ranks);
  on_ranks(ranks, [&, count = count](Communicator& comm) {
    std::vector<float> data(count);
    for (int64_t i = 0; i < count; ++i) data[i] = static_cast<float>(comm.rank() + 1) * (i % 7);
    comm.allreduce(data.data(), count);
    results[comm.rank()] = data;
  });
  const float rank_sum = ranks * (ranks + 1) / 2.f;
  for (int r = 0; r < ranks; ++r) {
    ASSERT_EQ(static_cast<int64_t>(results[r].size()), count);
    for (int64_t i = 0; i < count; ++i)
      ASSERT_EQ(results[r][i], rank_sum * (i % 7)) << r << " " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, AllreduceSizes,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4),
                                            ::testing::Values<int64_t>(0, 1, 5, 17, 1000, 100003)));

TEST(SharedMemoryCommunicator, ManyOperationsInFlightCompleteInAnyWaitOrder) {
  const int ranks = 3;  // 3 rounds x 40 operations: more than the slot ring holds
  on_ranks(ranks, [&](Communicator& comm) {
    for (int round = 0; round < 3; ++round) {
      std::vector<std::vector<float>> buffers(40, std::vector<float>(33, 1.f));
      std::vector<Communicator::Request> requests;
      for (auto& b : buffers) requests.push_back(comm.allreduce_async(b.data(), 33));
      // Wait in reverse: progress must not depend on wait order.
      for (auto it = requests.rbegin(); it != requests.rend(); ++it) comm.wait(*it);
      for (auto& b : buffers) {
        for (float v : b) ASSERT_EQ(v, static_cast<float>(ranks));
      }
    }
  });
}

TEST(SharedMemoryCommunicator, BroadcastAndBarrier) {
  on_ranks(4, [](Communicator& comm) {
    std::vector<float> data(10, static_cast<float>(comm.rank()));
    comm.broadcast(data.data(), 10, 2);
    for (float v : data) EXPECT_EQ(v, 2.f);
    comm.barrier();
    EXPECT_THROW(comm.broadcast(data.data(), 10, 9), std::exception);
    EXPECT_NE(comm.describe().find("of 4"), std::string::npos);
  });
}

TEST(SharedMemoryCommunicator, TreeSumOrderIsFixed) {
  // (a + b) + (c + d) differs from ((a + b) + c) + d for these values in float.
  std::vector<float> a = {1e8f}, b = {1.f}, c = {-1e8f}, d = {1.f};
  std::vector<float> out(1);
  tree_sum({a.data(), b.data(), c.data(), d.data()}, out.data(), 0, 1);
  EXPECT_EQ(out[0], (1e8f + 1.f) + (-1e8f + 1.f));
}

TEST(DeviceGroup, AnExceptionOnOneDeviceStopsAllAndIsReported) {
  DeviceGroup group(plan_devices(3, 1));
  try {
    group.run([&](int device) {
      if (device == 1) throw ConfigError("bad batch");
      // The others wait at the barrier forever unless the failure aborts it.
      group.barrier().wait();
    });
    FAIL() << "expected an exception";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("device 1: bad batch"), std::string::npos) << e.what();
  }
  // The group is usable again afterwards.
  std::atomic<int> ran{0};
  group.run([&](int) {
    group.barrier().wait();
    ++ran;
  });
  EXPECT_EQ(ran.load(), 3);
}

// The devices spin for up to kDeviceSpinSeconds and the caller up to kCallerSpinSeconds,
// then sleep: every task runs once on every device, and the caller sees what each wrote,
// whether the next task comes while the devices spin (back to back) or after they slept, and
// whether the caller's wait ends in its spin (empty tasks, tasks longer than the devices'
// spin) or after it slept (tasks longer than its own).
TEST(DeviceGroup, EveryDeviceRunsEveryTaskOnceWhetherItsThreadsSpinOrSleep) {
  for (const double gap : {0.0, 4 * kDeviceSpinSeconds}) {
    for (const double task : {0.0, 2 * kDeviceSpinSeconds, 2 * kCallerSpinSeconds}) {
      DeviceGroup group(plan_devices(3, 1));
      std::vector<int64_t> sums(3, 0);  // each device writes its own, without atomics
      int64_t expected = 0;
      for (int round = 1; round <= 20; ++round) {
        if (gap > 0) std::this_thread::sleep_for(std::chrono::duration<double>(gap));
        group.run([&](int device) {
          busy_for(task);
          sums[device] += round;
        });
        expected += round;
        for (int d = 0; d < 3; ++d) {
          ASSERT_EQ(sums[d], expected) << "device " << d << ", round " << round << ", gap " << gap
                                       << " s, task " << task << " s";
        }
      }
    }
  }
}

// Pins the calling thread to the first core it may use, and gives it back its cores after.
class PinnedToOneCore {
 public:
  PinnedToOneCore() {
    if (sched_getaffinity(0, sizeof(saved_), &saved_) != 0) throw std::runtime_error("affinity");
    while (core_ < CPU_SETSIZE && !CPU_ISSET(core_, &saved_)) ++core_;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(core_, &one);
    if (pthread_setaffinity_np(pthread_self(), sizeof(one), &one) != 0) {
      throw std::runtime_error("cannot pin the test's thread to core " + std::to_string(core_));
    }
  }
  ~PinnedToOneCore() { pthread_setaffinity_np(pthread_self(), sizeof(saved_), &saved_); }
  PinnedToOneCore(const PinnedToOneCore&) = delete;
  PinnedToOneCore& operator=(const PinnedToOneCore&) = delete;
  int core() const { return core_; }

 private:
  cpu_set_t saved_;
  int core_ = 0;
};

// The caller of run() and the device on one core, as under mpirun (each rank bound to a core):
// the caller spins for kCallerSpinSeconds and then sleeps through the device's task. A yield
// to the device returns only after the device's time slice, so a spin that read its clock
// once every 64 yields kept yielding through a whole step: 49 yields in each of the seed's
// 80 ms steps on 2 ranks. Counted with the thread's context switches, not timed.
TEST(DeviceGroup, ACallerThatSharesItsCoreWithTheDeviceSleepsThroughItsTask) {
  const PinnedToOneCore pinned;
  DevicePlan plan = plan_devices(1, 1);
  plan.cores = {{pinned.core()}};
  DeviceGroup group(plan);
  group.run([](int) {});  // the device started and pinned
  rusage before{}, after{};
  getrusage(RUSAGE_THREAD, &before);
  group.run([](int) { busy_for(0.6); });
  getrusage(RUSAGE_THREAD, &after);
  const int64_t switches =
      (after.ru_nvcsw - before.ru_nvcsw) + (after.ru_nivcsw - before.ru_nivcsw);
  // The spin's few yields, the sleep and its wake-up: 3 on the Xeon, with or without a busy
  // process on the core, when the caller spun 200 us; 3-4 in 6 runs with its 2 ms spin
  // (kCallerSpinSeconds). A check every 64 yields made 24-26 here, 34-46 beside that process.
  EXPECT_LE(switches, 10) << "context switches of the caller during a 0.6 s task on its core";
}

TEST(DeviceGroup, PlanSharesOutCoresAndFlagsOversubscription) {
  const DevicePlan one = plan_devices(1, 0);
  EXPECT_GE(one.threads_per_device, 1);
  const DevicePlan many = plan_devices(2 * available_cores(), 1);
  EXPECT_TRUE(many.oversubscribed);
  EXPECT_THROW(plan_devices(0, 1), ConfigError);
  // Bounded by the machine: more than kOversubscription threads per core is refused.
  EXPECT_NO_THROW(plan_devices(max_threads(), 1));
  EXPECT_THROW(plan_devices(max_threads() + 1, 1), ConfigError);
  EXPECT_THROW(plan_devices(2, max_threads()), ConfigError);
}

}  // namespace
}  // namespace tandem::detail
