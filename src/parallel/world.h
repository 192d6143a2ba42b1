// World: the processes of a multi-process job (MPI ranks) as the fit loop sees them. Every
// collective is matched by call order, as in MPI, and gives up with a CommError naming
// this rank and host when another rank does not answer within the timeout.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "parallel/communicator.h"

namespace tandem::detail {

struct GradientCommOptions {
  // Gradients cross processes as bfloat16 (half the bytes; summed in float32).
  bool bf16 = false;
  // Sums in a fixed pairwise tree over ranks (gathered, then summed alike everywhere), so
  // results are bitwise reproducible; MPI's own reduction order is not specified.
  bool deterministic = false;
};

class World {
 public:
  virtual ~World() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual const std::string& host() const = 0;

  // A communicator over all ranks for gradient buckets, with its own message space.
  virtual std::unique_ptr<Communicator> gradient_communicator(const GradientCommOptions& o) = 0;
  // Sums data[0, count) over ranks into every rank's data.
  virtual void sum(double* data, int count) = 0;
  // Root's bytes into every rank's (resized).
  virtual void broadcast(std::string& bytes, int root) = 0;
  // On root: every rank's bytes, rank after rank; elsewhere: empty.
  virtual std::vector<std::string> gather(const std::string& mine, int root) = 0;
  // Every rank's `mine` (all the same length), rank after rank.
  virtual std::vector<uint64_t> allgather(const std::vector<uint64_t>& mine) = 0;
  virtual void barrier() = 0;

  // "rank 1 of 4 on node-b"
  std::string describe() const;
};

// "rank 1 of 4 on node-b": how a rank names itself in every message.
std::string describe_rank(int rank, int size, const std::string& host);

// The job's world once tandem::mpi::init() ran; null otherwise.
World* current_world();
// Seconds a collective waits for the others (tandem::mpi::set_timeout).
double world_timeout_seconds();

}  // namespace tandem::detail
