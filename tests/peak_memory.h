// How much memory a reader commits: the peak resident set a call adds, measured in a forked
// child (so the test process's own history does not hide it), and what the call threw. Also
// FIFOs that a reader must refuse without blocking.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <future>
#include <string>
#include <thread>

#include "tandem/error.h"

namespace tandem::test {

struct MeasuredCall {
  int64_t peak_growth_bytes = -1;  // peak RSS after the call minus the RSS before it
  std::string error_type;          // "FormatError", "IoError", "Error", "bad_alloc", "other", ""
  std::string message;
};

inline int64_t peak_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
}

// Runs `call` in a forked child; the child's peak RSS growth and the exception it ended with.
inline MeasuredCall measure_in_child(const std::function<void()>& call) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    // A forked child's peak starts at what it inherited.
    const int64_t before = peak_rss_bytes();
    std::string type, message;
    try {
      call();
    } catch (const FormatError& e) {
      type = "FormatError", message = e.what();
    } catch (const IoError& e) {
      type = "IoError", message = e.what();
    } catch (const Error& e) {
      type = "Error", message = e.what();
    } catch (const std::bad_alloc& e) {
      type = "bad_alloc", message = e.what();
    } catch (const std::exception& e) {
      type = "other", message = e.what();
    }
    const int64_t growth = peak_rss_bytes() - before;
    const std::string out = std::to_string(growth) + "\n" + type + "\n" + message;
    ssize_t ignored = write(fds[1], out.data(), out.size());
    (void)ignored;
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  std::string in;
  char buffer[4096];
  for (ssize_t n; (n = read(fds[0], buffer, sizeof buffer)) > 0;) in.append(buffer, n);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  MeasuredCall m;
  const size_t a = in.find('\n'), b = a == std::string::npos ? a : in.find('\n', a + 1);
  if (b == std::string::npos) {
    ADD_FAILURE() << "the child died (status " << status << ") before reporting";
    return m;
  }
  m.peak_growth_bytes = std::stoll(in.substr(0, a));
  m.error_type = in.substr(a + 1, b - a - 1);
  m.message = in.substr(b + 1);
  return m;
}

inline void make_fifo(const std::string& path) {
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0) << path << ": " << std::strerror(errno);
}

// Runs `call` (which reads the FIFO at `fifo`) with a deadline: a reader that blocks in open()
// or read() fails the test, and is then released by opening and closing the write end of
// every FIFO beside `fifo`.
// Returns the message of the IoError it threw ("" after a failure).
inline std::string io_error_without_blocking(const std::string& fifo,
                                             const std::function<void()>& call) {
  std::packaged_task<std::string()> task([call] {
    try {
      call();
    } catch (const IoError& e) {
      return std::string(e.what());
    } catch (const std::exception& e) {
      return std::string("wrong exception type: ") + e.what();
    }
    return std::string("no exception");
  });
  std::future<std::string> result = task.get_future();
  std::thread worker(std::move(task));
  if (result.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    ADD_FAILURE() << "reading the FIFO " << fifo << " blocked";
    // Unblock the reader: a writer appears, then leaves (EOF).
    for (int i = 0;
         i < 100 && result.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready;
         ++i) {
      std::error_code ec;
      for (const auto& e :
           std::filesystem::directory_iterator(std::filesystem::path(fifo).parent_path(), ec)) {
        if (!e.is_fifo(ec)) continue;
        const int fd = open(e.path().c_str(), O_WRONLY | O_NONBLOCK);
        if (fd >= 0) close(fd);
      }
    }
  }
  worker.join();
  const std::string message = result.get();
  if (message.rfind("no exception", 0) == 0 || message.rfind("wrong exception", 0) == 0) {
    ADD_FAILURE() << fifo << ": " << message;
    return "";
  }
  return message;
}

// Makes a FIFO at `fifo` and expects `read` (which opens it) to refuse it at once with an
// IoError naming it as a FIFO; returns the message.
inline std::string expect_fifo_refused(const std::string& fifo, const std::function<void()>& read) {
  make_fifo(fifo);
  const std::string message = io_error_without_blocking(fifo, read);
  EXPECT_NE(message.find(fifo), std::string::npos) << message;
  EXPECT_NE(message.find("FIFO"), std::string::npos) << message;
  return message;
}

}  // namespace tandem::test
