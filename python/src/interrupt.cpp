#include "interrupt.h"

#include <nanobind/nanobind.h>
#include <unistd.h>

#include <atomic>

#include "tandem/model.h"

namespace tandem::python {
namespace {

// The innermost active guard's flag, which the handler raises. Only the main thread makes
// active guards, nested in order, so a plain pointer swap keeps them straight.
std::atomic<std::atomic<bool>*> current_flag{nullptr};

void on_sigint(int) {
  if (std::atomic<bool>* flag = current_flag.load()) flag->store(true);
  static const char message[] =
      "\ntandem: stopping at the end of this batch (Ctrl-C again to quit now)\n";
  ssize_t ignored = write(STDERR_FILENO, message, sizeof message - 1);
  (void)ignored;
  std::signal(SIGINT, SIG_DFL);  // async-signal-safe; the next Ctrl-C ends the process
}

class StopOnInterrupt final : public Callback {
 public:
  explicit StopOnInterrupt(const std::atomic<bool>& flag) : flag_(flag) {}
  void on_train_batch_end(int64_t, const Logs&) override { check(); }
  void on_epoch_end(int, const Logs&) override { check(); }
  void on_train_end(const Logs&) override { check(); }

 private:
  void check() {
    if (flag_.load()) model().stop_training = true;
  }
  const std::atomic<bool>& flag_;
};

// One flag per active guard (fits nested through callbacks), on the main thread only.
std::atomic<bool> guard_flags[64];
int guard_depth = 0;

}  // namespace

InterruptGuard::InterruptGuard(bool active) : active_(active && guard_depth < 64) {
  if (!active_) return;
  std::atomic<bool>& flag = guard_flags[guard_depth++];
  flag.store(false);
  current_flag.store(&flag);
  struct sigaction action {};
  action.sa_handler = on_sigint;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, &previous_);
}

InterruptGuard::~InterruptGuard() {
  if (!active_) return;
  const bool interrupted = guard_flags[--guard_depth].load();
  sigaction(SIGINT, &previous_, nullptr);
  // An outer fit (this one ran inside its callback) stops too.
  std::atomic<bool>* outer = guard_depth > 0 ? &guard_flags[guard_depth - 1] : nullptr;
  if (outer && interrupted) outer->store(true);
  current_flag.store(outer);
}

std::shared_ptr<Callback> InterruptGuard::callback() {
  if (!active_) return nullptr;
  return std::make_shared<StopOnInterrupt>(guard_flags[guard_depth - 1]);
}

void InterruptGuard::raise_if_interrupted() const {
  if (!active_ || !guard_flags[guard_depth - 1].load()) return;
  PyErr_SetInterrupt();  // Python's handler decides: the default raises KeyboardInterrupt
  if (PyErr_CheckSignals() != 0) throw nanobind::python_error();
}

}  // namespace tandem::python
