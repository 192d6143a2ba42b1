// Communicator: moves bytes between the replicas of a data-parallel job (MPI's model: every
// rank makes the same collective calls in the same order). Implementations: in-process
// shared memory for threads (here), MPI for processes and hosts; NCCL later.
// What to reduce and when is the GradReducer's business, not the communicator's.
#pragma once

#include <cstdint>
#include <string>

namespace tandem::detail {

class Communicator {
 public:
  using Request = int64_t;

  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Starts summing data[0, count) over all ranks into every rank's data. The buffer belongs
  // to the operation until wait() returns.
  virtual Request allreduce_async(float* data, int64_t count) = 0;
  // Advances the operation; true once it is complete (wait() must still be called).
  virtual bool test(Request request) = 0;
  virtual void wait(Request request) = 0;
  // Copies root's data[0, count) into every rank's data.
  virtual void broadcast(float* data, int64_t count, int root) = 0;
  virtual void barrier() = 0;
  // "thread 1 of 2", "rank 3 of 4 on host-b": for error messages.
  virtual std::string describe() const = 0;

  void allreduce(float* data, int64_t count) { wait(allreduce_async(data, count)); }
};

}  // namespace tandem::detail
