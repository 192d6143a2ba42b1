#include "parallel/replica_sum.h"

#include <algorithm>
#include <string>

#include "tandem/error.h"

namespace tandem::detail {

class ReplicaSumGroup::Member final : public ReplicaSum {
 public:
  Member(ReplicaSumGroup& group, int device) : group_(group), device_(device) {}

  void sum(double* data, int64_t n) override {
    if (n > group_.capacity_) {
      throw ConfigError("replica sum of " + std::to_string(n) + " values exceeds the " +
                        std::to_string(group_.capacity_) + " planned");
    }
    auto& slots = group_.slots_;
    std::copy(data, data + n, slots[device_].data());
    group_.barrier_->wait();
    if (group_.world_ == nullptr) {
      add_slots(data, n);
      group_.barrier_->wait();  // everyone has read every slot
      return;
    }
    // Every bucket final on all devices is summed (each device's shard) and then posted.
    group_.reducers_[device_]->flush();
    group_.barrier_->wait();
    if (device_ == 0) {
      group_.reducers_[0]->flush();
      add_slots(data, n);
      float* across = group_.across_.data();
      for (int64_t i = 0; i < n; ++i) across[i] = static_cast<float>(data[i]);
      group_.world_->allreduce(across, n);
    }
    group_.barrier_->wait();
    const float* across = group_.across_.data();
    for (int64_t i = 0; i < n; ++i) data[i] = across[i];
    group_.barrier_->wait();  // everyone has read the result
  }

 private:
  void add_slots(double* data, int64_t n) const {
    std::fill(data, data + n, 0.0);
    for (const auto& slot : group_.slots_) {
      for (int64_t i = 0; i < n; ++i) data[i] += slot[i];
    }
  }

  ReplicaSumGroup& group_;
  int device_;
};

ReplicaSumGroup::ReplicaSumGroup(int devices, int64_t capacity, DeviceBarrier* barrier,
                                 Communicator* world, std::vector<GradReducer*> reducers)
    : capacity_(capacity),
      barrier_(barrier),
      world_(world),
      reducers_(std::move(reducers)),
      slots_(devices, std::vector<double>(capacity)),
      across_(world ? capacity : 0) {
  for (int d = 0; d < devices; ++d) members_.push_back(std::make_unique<Member>(*this, d));
}

ReplicaSumGroup::~ReplicaSumGroup() = default;

ReplicaSum& ReplicaSumGroup::member(int device) {
  return *members_[device];
}

}  // namespace tandem::detail
