// ReplicaSumGroup: ReplicaSum (nn/layer.h) across the devices of one process, through
// shared memory, and across processes. Each device copies its doubles into its own slot;
// after a barrier every device adds up all slots in device order (so all get the same,
// bitwise, whatever the timing); a second barrier frees the slots for the next call.
// Across processes, device 0 adds up the slots and sums that over the ranks with the
// gradient communicator (float32, after the buckets already final: GradReducer::flush),
// and every device reads the result.
#pragma once

#include <memory>
#include <vector>

#include "nn/layer.h"
#include "parallel/communicator.h"
#include "parallel/device_group.h"
#include "parallel/grad_reducer.h"

namespace tandem::detail {

class ReplicaSumGroup {
 public:
  // capacity: the most doubles one call sums (Executor's largest replica_sum_size).
  // world (null: one process) and reducers (one per device, flushed before world's sums).
  ReplicaSumGroup(int devices, int64_t capacity, DeviceBarrier* barrier,
                  Communicator* world = nullptr, std::vector<GradReducer*> reducers = {});
  ~ReplicaSumGroup();
  ReplicaSum& member(int device);

 private:
  class Member;
  int64_t capacity_;
  DeviceBarrier* barrier_;
  Communicator* world_;
  std::vector<GradReducer*> reducers_;
  std::vector<std::vector<double>> slots_;
  std::vector<float> across_;  // the process's sum, summed over ranks
  std::vector<std::unique_ptr<Member>> members_;
};

}  // namespace tandem::detail
