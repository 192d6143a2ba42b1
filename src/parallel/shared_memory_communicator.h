// Shared-memory communicator for replicas that are threads of one process. Collectives are
// matched by call order. Each rank sums its own 1/N slice across every rank's buffer and
// writes the sum back into all of them, so the work is split evenly, the summation order is
// fixed (a pairwise tree over ranks: bitwise reproducible) and every rank gets identical
// values. Progress is made by whichever participating thread calls test() or wait().
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <vector>

#include "parallel/communicator.h"
#include "parallel/device_group.h"

namespace tandem::detail {

class SharedMemoryGroup {
 public:
  // `barrier` (not owned) is shared with the device group, so an abort anywhere releases
  // every waiting rank.
  SharedMemoryGroup(int size, DeviceBarrier* barrier);
  int size() const { return size_; }

  static constexpr int kSlots = 64;  // operations in flight at once
  enum class Op { allreduce, broadcast };
  struct Slot {
    std::atomic<int64_t> sequence{-1};  // the operation using the slot
    std::atomic<int> posted{0};
    std::atomic<int> slices_done{0};
    std::atomic<int> released{0};
    Op op = Op::allreduce;
    int root = 0;
    int64_t count = 0;
    std::vector<float*> buffers;
  };
  Slot& slot(int64_t sequence) { return slots_[sequence % kSlots]; }
  DeviceBarrier& barrier() { return *barrier_; }

 private:
  int size_;
  DeviceBarrier* barrier_;
  std::array<Slot, kSlots> slots_;
};

class SharedMemoryCommunicator final : public Communicator {
 public:
  SharedMemoryCommunicator(std::shared_ptr<SharedMemoryGroup> group, int rank);
  int rank() const override { return rank_; }
  int size() const override { return group_->size(); }
  Request allreduce_async(float* data, int64_t count) override;
  bool test(Request request) override;
  void wait(Request request) override;
  void broadcast(float* data, int64_t count, int root) override;
  void barrier() override { group_->barrier().wait(); }
  std::string describe() const override;

 private:
  Request post(SharedMemoryGroup::Op op, float* data, int64_t count, int root);
  void do_my_part(SharedMemoryGroup::Slot& slot);

  std::shared_ptr<SharedMemoryGroup> group_;
  int rank_;
  int64_t next_sequence_ = 0;
  // Operations this rank posted but whose slice it has not processed yet.
  std::vector<bool> my_part_done_;
};

// A communicator for each of `size` ranks of one new group over `barrier` (not owned; the
// device group's), rank r at [r]: what one process's all-reduce runs on. The communicators
// hold the group.
std::vector<std::unique_ptr<SharedMemoryCommunicator>> make_shared_memory_communicators(
    int size, DeviceBarrier* barrier);

// Sums [begin, end) of `sources` in a pairwise tree over them ((0+1)+(2+3)...: a fixed
// order, so results are bitwise reproducible) into destination, which may be a source.
void tree_sum(const std::vector<float*>& sources, float* destination, int64_t begin, int64_t end);
// The same sum written into every buffer.
void tree_sum_into_all(const std::vector<float*>& buffers, int64_t begin, int64_t end);

}  // namespace tandem::detail
