// tandem::mpi and the World on MPI. All collectives are non-blocking MPI calls polled to
// completion against a deadline, so a dead or hung rank gives a CommError naming this rank
// and host within the timeout instead of a hang. Gradient buckets use MPI_Iallreduce (or,
// deterministic, MPI_Iallgather and a fixed pairwise tree; or bfloat16 with a float32 sum).
#include <mpi.h>

#include <bit>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string_view>
#include <thread>

#include "parallel/bf16.h"
#include "parallel/shared_memory_communicator.h"
#include "parallel/world.h"
#include "profile/phase_timer.h"
#include "profile/trace.h"
#include "tandem/error.h"
#include "tandem/mpi.h"

namespace tandem {
namespace detail {
namespace {

std::string mpi_error_string(int code) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(text, static_cast<size_t>(length));
}

// The message of every collective that gave up waiting.
std::string timeout_message(const std::string& who, double limit, std::string_view what) {
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%g s", limit);
  return who + ": no answer from the other ranks for " + seconds + " during " + std::string(what) +
         "; a rank has died, hangs, or runs different code (the timeout is --comm-timeout / "
         "tandem::mpi::set_timeout)";
}

int as_mpi_count(int64_t count, const char* what) {
  if (count < 0 || count > INT_MAX) {
    throw ConfigError(std::string(what) + ": " + std::to_string(count) +
                      " elements exceed what one MPI call moves (2^31 - 1)");
  }
  return static_cast<int>(count);
}

// MPI_Op: inout += in, summed in float32, stored as bfloat16.
void bf16_sum(void* in, void* inout, int* length, MPI_Datatype*) {
  sum_bf16(static_cast<const uint16_t*>(in), static_cast<uint16_t*>(inout), *length);
}

// One MPI communicator (a duplicate of the job's) and how this rank waits on it.
class Endpoint {
 public:
  Endpoint(MPI_Comm parent, std::string who) : who_(std::move(who)) {
    check(MPI_Comm_dup(parent, &comm_), "MPI_Comm_dup");
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  ~Endpoint() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
  }
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  MPI_Comm comm() const { return comm_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  const std::string& who() const { return who_; }

  void check(int code, const char* call) const {
    if (code != MPI_SUCCESS) {
      throw BackendError(who_ + ": " + call + " failed: " + mpi_error_string(code));
    }
  }
  bool test(MPI_Request& request) const {
    int done = 0;
    check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
    return done != 0;
  }
  // Polls until the request completes; CommError once the timeout passes.
  // `what` names the operation in the timeout message only (a literal on hot paths: the
  // per-step sum must not allocate).
  void wait(MPI_Request& request, std::string_view what) const {
    const double limit = world_timeout_seconds();
    const auto start = Clock::now();
    for (int64_t spins = 0;; ++spins) {
      if (test(request)) return;
      if ((spins & 1023) == 1023 && seconds_since(start) > limit) {
        throw CommError(timeout_message(who_, limit, what));
      }
      if (spins > 256) std::this_thread::yield();
    }
  }

 private:
  std::string who_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
};

// Gradient buckets go to one communication thread that runs them in order with blocking
// MPI calls: OpenMPI 4.1's blocking all-reduce is about 2.3x faster than its non-blocking
// one on large buffers (23.7 vs 54.1 ms for the seed's 50.75 MB between 2 local ranks,
// docs/PERFORMANCE.md), and the device thread never blocks on a post. Waiters sleep on a
// condition variable (they share the core with the communication thread) until the
// operation is done or the timeout passes. Only one thread calls MPI at a time: the
// others call it (sums, broadcasts) only while no bucket is in flight.
class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(MPI_Comm parent, const std::string& who, const GradientCommOptions& o)
      : endpoint_(parent, who), options_(o) {
    if (o.bf16) {
      endpoint_.check(MPI_Op_create(&bf16_sum, 1, &bf16_op_), "MPI_Op_create");
    }
    worker_ = std::thread([this] { work(); });
  }
  ~MpiCommunicator() override {
    // Operations still in flight (a step ended by an error elsewhere) finish first: MPI
    // owns their buffers until then. One still blocked after the timeout means a peer is
    // gone; MPI cannot recover from that, and tearing down under a thread inside MPI
    // would break MPI_THREAD_SERIALIZED, so the job ends here.
    {
      std::unique_lock lock(mutex_);
      if (!timed_out_.empty() ||
          !done_cv_.wait_until(lock, deadline(), [&] { return completed_.load() == next_; })) {
        const std::string why =
            !timed_out_.empty() ? timed_out_
                                : endpoint_.who() +
                                      ": a gradient all-reduce is still blocked in MPI after the "
                                      "timeout";
        lock.unlock();
        std::fprintf(stderr,
                     "tandem: error: %s; ending the job (MPI cannot recover from a lost rank)\n",
                     why.c_str());
        mpi::abort(6);
      }
      stopping_ = true;
    }
    posted_cv_.notify_all();
    worker_.join();
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && bf16_op_ != MPI_OP_NULL) MPI_Op_free(&bf16_op_);
  }

  int rank() const override { return endpoint_.rank(); }
  int size() const override { return endpoint_.size(); }

  Request allreduce_async(float* data, int64_t count) override {
    as_mpi_count(count, "all-reduce");
    std::unique_lock lock(mutex_);
    // A full ring waits for the oldest operation, as long as any wait may.
    if (!done_cv_.wait_until(lock, deadline(),
                             [&] { return next_ - completed_.load() < kSlots; })) {
      throw CommError(endpoint_.who() + ": " + std::to_string(kSlots) +
                      " gradient all-reduces in flight and none finished within the timeout");
    }
    const Request id = next_++;
    ops_[id % kSlots] = {data, count};
    posted_cv_.notify_one();
    return id;
  }

  bool test(Request id) override {
    if (completed_.load(std::memory_order_acquire) <= id) return false;
    rethrow_failure();
    return true;
  }

  void wait(Request id) override {
    const double limit = world_timeout_seconds();
    std::unique_lock lock(mutex_);
    if (!done_cv_.wait_until(lock, deadline(), [&] { return completed_.load() > id; })) {
      timed_out_ = timeout_message(endpoint_.who(), limit,
                                   "the all-reduce of a gradient bucket (" +
                                       std::to_string(ops_[id % kSlots].count) + " floats)");
      throw CommError(timed_out_);
    }
    lock.unlock();
    rethrow_failure();
  }

  void broadcast(float* data, int64_t count, int root) override {
    drain();
    MPI_Request request;
    endpoint_.check(MPI_Ibcast(data, as_mpi_count(count, "broadcast"), MPI_FLOAT, root,
                               endpoint_.comm(), &request),
                    "MPI_Ibcast");
    endpoint_.wait(request, "a broadcast from rank " + std::to_string(root));
  }

  void barrier() override {
    drain();
    MPI_Request request;
    endpoint_.check(MPI_Ibarrier(endpoint_.comm(), &request), "MPI_Ibarrier");
    endpoint_.wait(request, "a barrier");
  }

  std::string describe() const override { return endpoint_.who(); }

 private:
  struct Op {
    float* data = nullptr;
    int64_t count = 0;
  };

  static Clock::time_point deadline() {
    return Clock::now() + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(world_timeout_seconds()));
  }

  void drain() {
    if (next_ > 0) wait(next_ - 1);
  }

  void rethrow_failure() {
    std::lock_guard lock(mutex_);
    if (!failure_.empty()) throw BackendError(failure_);
  }

  void work() {
    Tracer::name_thread("MPI communication");
    for (;;) {
      Op op;
      int64_t id;
      {
        std::unique_lock lock(mutex_);
        posted_cv_.wait(lock, [&] { return stopping_ || completed_.load() < next_; });
        if (completed_.load() == next_) return;  // stopping, nothing left
        id = completed_.load();
        op = ops_[id % kSlots];
      }
      try {
        const auto start = Clock::now();
        run(op);
        Tracer::record("all-reduce bucket", "allreduce", start, op.count * 4);
      } catch (const std::exception& e) {
        std::lock_guard lock(mutex_);
        failure_ = endpoint_.who() + ": gradient all-reduce failed: " + e.what();
      }
      {
        std::lock_guard lock(mutex_);
        completed_.store(id + 1, std::memory_order_release);
      }
      done_cv_.notify_all();
    }
  }

  void run(const Op& op) {
    const int n = static_cast<int>(op.count);
    const MPI_Comm comm = endpoint_.comm();
    if (options_.deterministic) {
      gathered_.resize(static_cast<size_t>(op.count) * size());
      endpoint_.check(MPI_Allgather(op.data, n, MPI_FLOAT, gathered_.data(), n, MPI_FLOAT, comm),
                      "MPI_Allgather");
      sources_.resize(size());
      for (int r = 0; r < size(); ++r) sources_[r] = gathered_.data() + r * op.count;
      tree_sum(sources_, op.data, 0, op.count);
    } else if (options_.bf16) {
      packed_.resize(static_cast<size_t>(op.count));
      pack_bf16(op.data, packed_.data(), op.count);
      endpoint_.check(MPI_Allreduce(MPI_IN_PLACE, packed_.data(), n, MPI_UINT16_T, bf16_op_, comm),
                      "MPI_Allreduce");
      unpack_bf16(packed_.data(), op.data, op.count);
    } else {
      endpoint_.check(MPI_Allreduce(MPI_IN_PLACE, op.data, n, MPI_FLOAT, MPI_SUM, comm),
                      "MPI_Allreduce");
    }
  }

  static constexpr int kSlots = 256;
  Endpoint endpoint_;
  GradientCommOptions options_;
  MPI_Op bf16_op_ = MPI_OP_NULL;
  std::mutex mutex_;
  std::condition_variable posted_cv_, done_cv_;
  std::vector<Op> ops_ = std::vector<Op>(kSlots);
  Request next_ = 0;                   // ids posted (guarded by mutex_)
  std::atomic<Request> completed_{0};  // ops done, in order
  bool stopping_ = false;
  std::string failure_;
  std::string timed_out_;  // the timeout's message, once one happened
  // The worker's staging buffers (grow to the largest bucket once).
  std::vector<uint16_t> packed_;
  std::vector<float> gathered_;
  std::vector<float*> sources_;
  std::thread worker_;
};

std::string processor_name() {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_Get_processor_name(name, &length);
  return std::string(name, static_cast<size_t>(length));
}

std::string who_in_world(const std::string& host) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return describe_rank(rank, size, host);
}

class MpiWorld final : public World {
 public:
  MpiWorld() : host_(processor_name()), endpoint_(MPI_COMM_WORLD, who_in_world(host_)) {}

  int rank() const override { return endpoint_.rank(); }
  int size() const override { return endpoint_.size(); }
  const std::string& host() const override { return host_; }

  std::unique_ptr<Communicator> gradient_communicator(const GradientCommOptions& o) override {
    return std::make_unique<MpiCommunicator>(endpoint_.comm(), endpoint_.who(), o);
  }

  void sum(double* data, int count) override {
    MPI_Request request;
    endpoint_.check(
        MPI_Iallreduce(MPI_IN_PLACE, data, count, MPI_DOUBLE, MPI_SUM, endpoint_.comm(), &request),
        "MPI_Iallreduce");
    endpoint_.wait(request, "a sum over ranks");
  }

  void broadcast(std::string& bytes, int root) override {
    uint64_t length = bytes.size();
    MPI_Request request;
    const std::string what = "a broadcast from rank " + std::to_string(root);
    endpoint_.check(MPI_Ibcast(&length, 1, MPI_UINT64_T, root, endpoint_.comm(), &request),
                    "MPI_Ibcast");
    endpoint_.wait(request, what);
    bytes.resize(length);
    constexpr uint64_t kChunk = 1 << 30;
    for (uint64_t at = 0; at < length; at += kChunk) {
      const int n = static_cast<int>(std::min(kChunk, length - at));
      endpoint_.check(MPI_Ibcast(bytes.data() + at, n, MPI_BYTE, root, endpoint_.comm(), &request),
                      "MPI_Ibcast");
      endpoint_.wait(request, what);
    }
  }

  std::vector<std::string> gather(const std::string& mine, int root) override {
    const MPI_Comm comm = endpoint_.comm();
    MPI_Request request;
    const int length = as_mpi_count(static_cast<int64_t>(mine.size()), "gather");
    std::vector<int> lengths(rank() == root ? size() : 0);
    endpoint_.check(
        MPI_Igather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, root, comm, &request),
        "MPI_Igather");
    endpoint_.wait(request, "a gather to rank " + std::to_string(root));
    std::vector<int> offsets(lengths.size());
    int64_t total = 0;
    for (size_t r = 0; r < lengths.size(); ++r) {
      offsets[r] = as_mpi_count(total, "gather");
      total += lengths[r];
    }
    std::string all(static_cast<size_t>(as_mpi_count(total, "gather")), '\0');
    endpoint_.check(MPI_Igatherv(mine.data(), length, MPI_BYTE, all.data(), lengths.data(),
                                 offsets.data(), MPI_BYTE, root, comm, &request),
                    "MPI_Igatherv");
    endpoint_.wait(request, "a gather to rank " + std::to_string(root));
    std::vector<std::string> parts;
    for (size_t r = 0; r < lengths.size(); ++r) parts.push_back(all.substr(offsets[r], lengths[r]));
    return parts;
  }

  std::vector<uint64_t> allgather(const std::vector<uint64_t>& mine) override {
    std::vector<uint64_t> all(mine.size() * size());
    const int n = static_cast<int>(mine.size());
    MPI_Request request;
    endpoint_.check(MPI_Iallgather(mine.data(), n, MPI_UINT64_T, all.data(), n, MPI_UINT64_T,
                                   endpoint_.comm(), &request),
                    "MPI_Iallgather");
    endpoint_.wait(request, "the start-up check of every rank's configuration");
    return all;
  }

  void barrier() override {
    MPI_Request request;
    endpoint_.check(MPI_Ibarrier(endpoint_.comm(), &request), "MPI_Ibarrier");
    endpoint_.wait(request, "a barrier");
  }

 private:
  std::string host_;
  Endpoint endpoint_;
};

std::unique_ptr<MpiWorld> g_world;
bool g_we_initialized = false;

}  // namespace

World* current_world() {
  return g_world.get();
}

}  // namespace detail

namespace mpi {

bool available() {
  return true;
}

void init(int& argc, char**& argv) {
  if (detail::g_world) return;
  int already = 0;
  MPI_Initialized(&already);
  if (already) {
    int provided = 0;
    MPI_Query_thread(&provided);
    if (provided < MPI_THREAD_SERIALIZED) {
      throw ConfigError("MPI was initialised with thread level " + std::to_string(provided) +
                        "; tandem needs MPI_THREAD_SERIALIZED (its communication thread calls "
                        "MPI): use MPI_Init_thread, or let tandem::mpi::init initialise MPI");
    }
  } else {
    int provided = 0;
    const int code = MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    if (code != MPI_SUCCESS) {
      throw BackendError("MPI_Init_thread failed: " + detail::mpi_error_string(code));
    }
    detail::g_we_initialized = true;
    if (provided < MPI_THREAD_SERIALIZED) {
      throw BackendError("this MPI library gives thread level " + std::to_string(provided) +
                         "; tandem needs MPI_THREAD_SERIALIZED (device threads call MPI)");
    }
  }
  detail::g_world = std::make_unique<detail::MpiWorld>();
}

bool initialized() {
  return detail::g_world != nullptr;
}

void finalize() {
  detail::g_world.reset();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (detail::g_we_initialized && !finalized) MPI_Finalize();
  detail::g_we_initialized = false;
}

int rank() {
  return detail::g_world ? detail::g_world->rank() : 0;
}
int size() {
  return detail::g_world ? detail::g_world->size() : 1;
}

std::string host() {
  if (detail::g_world) return detail::g_world->host();
  int initialized = 0;
  MPI_Initialized(&initialized);
  return initialized ? detail::processor_name() : "localhost";
}

void abort(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

}  // namespace mpi
}  // namespace tandem
