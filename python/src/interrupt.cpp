#include "interrupt.h"

#include <nanobind/nanobind.h>
#include <unistd.h>

#include <atomic>

#include "tandem/model.h"

namespace tandem::python {
namespace {

std::atomic<bool> interrupted{false};

void on_sigint(int) {
  interrupted.store(true, std::memory_order_relaxed);
  static const char message[] =
      "\ntandem: stopping at the end of this batch (Ctrl-C again to quit now)\n";
  ssize_t ignored = write(STDERR_FILENO, message, sizeof message - 1);
  (void)ignored;
  std::signal(SIGINT, SIG_DFL);  // async-signal-safe; the next Ctrl-C ends the process
}

class StopOnInterrupt final : public Callback {
 public:
  void on_train_batch_end(int64_t, const Logs&) override { check(); }
  void on_epoch_end(int, const Logs&) override { check(); }

 private:
  void check() {
    if (interrupted.load(std::memory_order_relaxed)) model().stop_training = true;
  }
};

}  // namespace

InterruptGuard::InterruptGuard(bool active) : active_(active) {
  interrupted.store(false);
  if (!active_) return;
  struct sigaction action {};
  action.sa_handler = on_sigint;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, &previous_);
}

InterruptGuard::~InterruptGuard() {
  if (active_) sigaction(SIGINT, &previous_, nullptr);
}

std::shared_ptr<Callback> InterruptGuard::callback() const {
  return std::make_shared<StopOnInterrupt>();
}

void InterruptGuard::raise_if_interrupted() const {
  if (active_ && interrupted.load()) {
    PyErr_SetNone(PyExc_KeyboardInterrupt);
    throw nanobind::python_error();
  }
}

}  // namespace tandem::python
