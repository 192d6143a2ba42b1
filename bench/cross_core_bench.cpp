// What a core pays to touch a buffer's cache lines that another core touched last, against the
// same lines warm in its own cache: the cost a data-parallel step pays when the exchange left
// its gradients or parameters in the peer core's cache (MPI's single-copy transfers read the
// peer's buffer directly; CPU devices read each other's shards and shared parameters). Two
// threads pinned to two cores; for each buffer size, interleaved, median of repetitions:
//   warm:          this core read-modify-writes (or reads) lines it wrote last;
//   after read:    the other core read them in between (they are shared: a write upgrades);
//   after write:   the other core wrote them in between (they sit modified in its cache).
// Then the same for a weight-gradient GEMM (oneDNN, one thread) writing its output, which
// shows how much of those costs a GEMM's writes hide behind its arithmetic:
//   dW (in, units) = x^T (in, rows) . dz (rows, units), dW warm / after the other core read it
//   / after it wrote it.
//   cross_core_bench [--kb 256,1024,4096,16384] [--gemm 784,256,16] [--repeats 200]
//                    [--cores 0,1] [--json out.json]
// Linux only (thread affinity). docs/SCALING.md cites its figures.
#include <pthread.h>
#include <sched.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "backend/backend.h"
#include "bench_util.h"
#include "core/aligned_buffer.h"
#include "core/atomic_file.h"

namespace tb = tandem::bench;

namespace {

struct Options {
  std::vector<int64_t> kb = {256, 1024, 4096, 16384};
  int repeats = 200;
  std::vector<int64_t> gemm = {784, 256, 16};  // in, units, rows
  std::vector<int> cores = {0, 1};
  std::string json;
};

Options parse(int argc, char** argv) {
  Options o;
  CLI::App app{"Cost of touching cache lines another core touched last, per buffer size"};
  app.add_option("--kb", o.kb, "buffer sizes in KiB, e.g. 256,1024")
      ->delimiter(',')
      ->check(CLI::Range(int64_t{4}, int64_t{1} << 22));
  app.add_option("--gemm", o.gemm, "the weight-gradient GEMM: in,units,rows")
      ->delimiter(',')
      ->expected(3)
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
  app.add_option("--repeats", o.repeats, "interleaved repetitions (median)")
      ->check(CLI::PositiveNumber);
  app.add_option("--cores", o.cores, "the two cores: this one, the other one")
      ->delimiter(',')
      ->expected(2)
      ->check(CLI::NonNegativeNumber);
  app.add_option("--json", o.json, "write the results here");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::exit(app.exit(e));
  }
  if (o.cores[0] == o.cores[1]) {
    std::fprintf(stderr, "cross_core_bench: --cores: two different cores, got %d,%d\n", o.cores[0],
                 o.cores[1]);
    std::exit(2);
  }
  return o;
}

void pin_to(int core) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  if (const int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set); rc != 0) {
    std::fprintf(stderr, "cross_core_bench: --cores: cannot run a thread on core %d (error %d)\n",
                 core, rc);
    std::exit(2);
  }
}

enum class Touch { none, read, write, quit };

float sum_of(const float* p, size_t n) {
  float s = 0;
  for (size_t i = 0; i < n; i += 16) s += p[i];  // one float per 64-byte line
  return s;
}

void add_one(float* p, size_t n) {
  for (size_t i = 0; i < n; ++i) p[i] += 1.0f;
}

// The other core: touches the buffer when asked, then says it is done.
class Peer {
 public:
  explicit Peer(int core) : thread_([this, core] { run(core); }) {}
  ~Peer() {
    ask(Touch::quit, nullptr, 0);
    thread_.join();
  }
  void ask(Touch t, float* p, size_t n) {
    p_ = p;
    n_ = n;
    const int done = done_.load(std::memory_order_acquire);
    request_.store(static_cast<int>(t) | (++serial_ << 2), std::memory_order_release);
    if (t == Touch::quit) return;
    while (done_.load(std::memory_order_acquire) == done) {
    }
  }
  float sink() const { return sink_; }

 private:
  void run(int core) {
    pin_to(core);
    int seen = 0;
    for (;;) {
      int r;
      while ((r = request_.load(std::memory_order_acquire)) == seen) {
      }
      seen = r;
      const auto t = static_cast<Touch>(r & 3);
      if (t == Touch::quit) return;
      if (t == Touch::read) sink_ += sum_of(p_, n_);
      if (t == Touch::write) add_one(p_, n_);
      done_.fetch_add(1, std::memory_order_acq_rel);
    }
  }
  std::atomic<int> request_{0}, done_{0};
  int serial_ = 0;
  float* p_ = nullptr;
  size_t n_ = 0;
  float sink_ = 0;
  std::thread thread_;
};

struct Row {
  int64_t kb;
  double rmw_warm, rmw_after_read, rmw_after_write, read_warm, read_after_write;
};

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  pin_to(o.cores[0]);
  Peer peer(o.cores[1]);
  float sink = 0;
  // Every case: make `count` floats at `lines` this core's (written last here), let the other
  // core touch them (or not), then time `pass` on this core.
  auto after = [&](Touch other, float* lines, size_t count, auto&& pass) {
    add_one(lines, count);
    if (other != Touch::none) peer.ask(other, lines, count);
    return tb::seconds_per_call(pass, 1);
  };
  std::vector<Row> rows;
  for (const int64_t kb : o.kb) {
    const size_t n = static_cast<size_t>(kb) * 256;
    tandem::AlignedBuffer buffer(static_cast<int64_t>(n));
    float* p = buffer.data();
    auto once = [&](Touch other, bool write) {
      return after(other, p, n, [&] {
        if (write) {
          add_one(p, n);
        } else {
          sink += sum_of(p, n);
        }
      });
    };
    std::vector<double> rw, rr, rwr, r0, rrw;
    for (int i = 0; i < o.repeats; ++i) {
      rw.push_back(once(Touch::none, true));
      rr.push_back(once(Touch::read, true));
      rwr.push_back(once(Touch::write, true));
      r0.push_back(once(Touch::none, false));
      rrw.push_back(once(Touch::write, false));
    }
    rows.push_back(
        {kb, tb::median(rw), tb::median(rr), tb::median(rwr), tb::median(r0), tb::median(rrw)});
  }
  std::printf("cores %d (timed) and %d (the other), median of %d\n", o.cores[0], o.cores[1],
              o.repeats);
  std::printf("%8s | %29s %29s | %9s %29s\n", "KiB", "write: warm us, after read +us",
              "after write +us", "read: us", "after write +us (ns/KiB)");
  nlohmann::json out = {
      {"cores", o.cores}, {"repeats", o.repeats}, {"sizes", nlohmann::json::array()}};
  for (const Row& r : rows) {
    const double kb = static_cast<double>(r.kb);
    std::printf(
        "%8lld | %9.1f %8.1f (%5.1f ns/KiB) %13.1f (%5.1f ns/KiB) | %9.1f %13.1f (%5.1f ns/KiB)\n",
        static_cast<long long>(r.kb), r.rmw_warm * 1e6, (r.rmw_after_read - r.rmw_warm) * 1e6,
        (r.rmw_after_read - r.rmw_warm) * 1e9 / kb, (r.rmw_after_write - r.rmw_warm) * 1e6,
        (r.rmw_after_write - r.rmw_warm) * 1e9 / kb, r.read_warm * 1e6,
        (r.read_after_write - r.read_warm) * 1e6, (r.read_after_write - r.read_warm) * 1e9 / kb);
    out["sizes"].push_back({{"kib", r.kb},
                            {"write_warm_seconds", r.rmw_warm},
                            {"write_after_other_read_seconds", r.rmw_after_read},
                            {"write_after_other_write_seconds", r.rmw_after_write},
                            {"read_warm_seconds", r.read_warm},
                            {"read_after_other_write_seconds", r.read_after_write}});
  }
  // The GEMM: its output's lines as the cases above leave them.
  const int64_t in = o.gemm[0], units = o.gemm[1], grows = o.gemm[2];
  auto backend = tandem::make_cpu_backend(1);
  tandem::AlignedBuffer x(in * grows), dz(grows * units), dw(in * units);
  std::fill(x.data(), x.data() + in * grows, 0.01f);
  std::fill(dz.data(), dz.data() + grows * units, 0.02f);
  const size_t wn = static_cast<size_t>(in * units);
  const tandem::GemmArgs args{.m = in,
                              .n = units,
                              .k = grows,
                              .a = x.data(),
                              .trans_a = true,
                              .b = dz.data(),
                              .c = dw.data()};
  auto gemm_once = [&](Touch other) {
    return after(other, dw.data(), wn, [&] { backend->gemm(args); });
  };
  std::vector<double> g0, gr, gw;
  for (int i = 0; i < o.repeats; ++i) {
    g0.push_back(gemm_once(Touch::none));
    gr.push_back(gemm_once(Touch::read));
    gw.push_back(gemm_once(Touch::write));
  }
  const double gwarm = tb::median(g0), gread = tb::median(gr), gwrite = tb::median(gw);
  const double gkb = 4.0 * static_cast<double>(wn) / 1024;
  std::printf(
      "GEMM dW (%lld, %lld) = x^T . dz over %lld rows, %.0f KiB written: warm %.1f us, after "
      "the other core read dW +%.1f us (%.1f ns/KiB), after it wrote dW +%.1f us (%.1f ns/KiB)\n",
      static_cast<long long>(in), static_cast<long long>(units), static_cast<long long>(grows), gkb,
      gwarm * 1e6, (gread - gwarm) * 1e6, (gread - gwarm) * 1e9 / gkb, (gwrite - gwarm) * 1e6,
      (gwrite - gwarm) * 1e9 / gkb);
  out["gemm"] = {{"in", in},
                 {"units", units},
                 {"rows", grows},
                 {"warm_seconds", gwarm},
                 {"after_other_read_seconds", gread},
                 {"after_other_write_seconds", gwrite}};
  if (sink + peer.sink() == -1.0f) std::printf(" ");  // keeps the reads
  if (!o.json.empty()) {
    try {
      tandem::write_file_atomically(o.json, out.dump(2) + "\n");
    } catch (const std::exception& e) {
      std::fprintf(stderr, "cross_core_bench: --json: %s\n", e.what());
      return 1;
    }
  }
  return 0;
}
