#include "parallel/shared_memory_communicator.h"

#include <algorithm>
#include <thread>

#include "parallel/buckets.h"
#include "tandem/error.h"

namespace tandem::detail {
namespace {

// Elements per chunk: the tree works in a small scratch that stays in L1/L2.
constexpr int64_t kChunk = 2048;

// Spins briefly, then yields: cheap when every rank has its own core, still fair when
// there are more devices than cores.
void pause(int& spins) {
  if (++spins < 64) return;
  std::this_thread::yield();
}

}  // namespace

void tree_sum(const std::vector<float*>& sources, float* destination, int64_t begin, int64_t end) {
  const int n = static_cast<int>(sources.size());
  if (n <= 2) {
    // One add per element, straight into the destination: no scratch traffic.
    const float* a = sources[0];
    if (n == 2) {
      const float* b = sources[1];
#pragma omp simd
      for (int64_t k = begin; k < end; ++k) destination[k] = a[k] + b[k];
    } else if (destination != a) {
      std::copy(a + begin, a + end, destination + begin);
    }
    return;
  }
  // Reads every source of a chunk before writing it, so destination may be a source.
  thread_local std::vector<float> scratch;
  if (static_cast<int64_t>(scratch.size()) < n * kChunk) scratch.resize(n * kChunk);
  for (int64_t at = begin; at < end; at += kChunk) {
    const int64_t len = std::min(kChunk, end - at);
    for (int i = 0; i < n; ++i) {
      std::copy(sources[i] + at, sources[i] + at + len, &scratch[i * kChunk]);
    }
    for (int stride = 1; stride < n; stride *= 2) {
      for (int i = 0; i + stride < n; i += 2 * stride) {
        float* a = &scratch[i * kChunk];
        const float* b = &scratch[(i + stride) * kChunk];
#pragma omp simd
        for (int64_t k = 0; k < len; ++k) a[k] += b[k];
      }
    }
    std::copy(&scratch[0], &scratch[0] + len, destination + at);
  }
}

void tree_sum_into_all(const std::vector<float*>& buffers, int64_t begin, int64_t end) {
  tree_sum(buffers, buffers[0], begin, end);
  for (size_t i = 1; i < buffers.size(); ++i) {
    std::copy(buffers[0] + begin, buffers[0] + end, buffers[i] + begin);
  }
}

SharedMemoryGroup::SharedMemoryGroup(int size, DeviceBarrier* barrier)
    : size_(size), barrier_(barrier) {
  for (auto& s : slots_) s.buffers.resize(size);
}

SharedMemoryCommunicator::SharedMemoryCommunicator(std::shared_ptr<SharedMemoryGroup> group,
                                                   int rank)
    : group_(std::move(group)), rank_(rank), my_part_done_(SharedMemoryGroup::kSlots, true) {}

std::vector<std::unique_ptr<SharedMemoryCommunicator>> make_shared_memory_communicators(
    int size, DeviceBarrier* barrier) {
  const auto group = std::make_shared<SharedMemoryGroup>(size, barrier);
  std::vector<std::unique_ptr<SharedMemoryCommunicator>> out;
  for (int r = 0; r < size; ++r)
    out.push_back(std::make_unique<SharedMemoryCommunicator>(group, r));
  return out;
}

std::string SharedMemoryCommunicator::describe() const {
  return "thread rank " + std::to_string(rank_) + " of " + std::to_string(size());
}

Communicator::Request SharedMemoryCommunicator::post(SharedMemoryGroup::Op op, float* data,
                                                     int64_t count, int root) {
  const int64_t sequence = next_sequence_++;
  auto& slot = group_->slot(sequence);
  // The slot is free once the operation kSlots earlier released it.
  int spins = 0;
  for (;;) {
    const int64_t seen = slot.sequence.load(std::memory_order_acquire);
    if (seen == sequence) break;
    if (seen < sequence && slot.released.load(std::memory_order_acquire) == 0 &&
        slot.posted.load(std::memory_order_acquire) == 0) {
      int64_t expected = seen;
      if (slot.sequence.compare_exchange_strong(expected, sequence)) break;
      continue;
    }
    if (group_->barrier().aborted()) throw AbortedError{};
    pause(spins);
  }
  slot.buffers[rank_] = data;
  if (rank_ == 0) {
    slot.op = op;
    slot.count = count;
    slot.root = root;
  }
  my_part_done_[sequence % SharedMemoryGroup::kSlots] = false;
  slot.posted.fetch_add(1, std::memory_order_acq_rel);
  return sequence;
}

Communicator::Request SharedMemoryCommunicator::allreduce_async(float* data, int64_t count) {
  return post(SharedMemoryGroup::Op::allreduce, data, count, 0);
}

void SharedMemoryCommunicator::do_my_part(SharedMemoryGroup::Slot& slot) {
  const int n = size();
  if (slot.op == SharedMemoryGroup::Op::allreduce) {
    // My slice of [0, count), on 64-byte boundaries.
    const auto [begin, end] = aligned_share(slot.count, n, rank_);
    if (begin < end) tree_sum_into_all(slot.buffers, begin, end);
  } else if (rank_ != slot.root) {
    std::copy(slot.buffers[slot.root], slot.buffers[slot.root] + slot.count, slot.buffers[rank_]);
  }
  slot.slices_done.fetch_add(1, std::memory_order_acq_rel);
}

bool SharedMemoryCommunicator::test(Request request) {
  auto& slot = group_->slot(request);
  if (!my_part_done_[request % SharedMemoryGroup::kSlots]) {
    // Rank 0 wrote the op fields before posting: once all posted, everyone sees them.
    if (slot.posted.load(std::memory_order_acquire) < size()) return false;
    do_my_part(slot);
    my_part_done_[request % SharedMemoryGroup::kSlots] = true;
  }
  return slot.slices_done.load(std::memory_order_acquire) == size();
}

void SharedMemoryCommunicator::wait(Request request) {
  int spins = 0;
  while (!test(request)) {
    if (group_->barrier().aborted()) throw AbortedError{};
    pause(spins);
  }
  auto& slot = group_->slot(request);
  // The last rank to leave frees the slot for the operation kSlots later.
  if (slot.released.fetch_add(1, std::memory_order_acq_rel) + 1 == size()) {
    slot.posted.store(0, std::memory_order_relaxed);
    slot.slices_done.store(0, std::memory_order_relaxed);
    slot.released.store(0, std::memory_order_release);
  }
}

void SharedMemoryCommunicator::broadcast(float* data, int64_t count, int root) {
  if (root < 0 || root >= size()) {
    throw ConfigError("broadcast: root " + std::to_string(root) + " is not a rank of " +
                      std::to_string(size()));
  }
  wait(post(SharedMemoryGroup::Op::broadcast, data, count, root));
}

}  // namespace tandem::detail
