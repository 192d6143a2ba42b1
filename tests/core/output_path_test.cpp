// The output policy: through symlinks, never over FIFOs, devices or directories, a real
// creation probe, dead writers' temporaries removed, outputs distinct from each other and
// from inputs.
#include "core/output_path.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/atomic_file.h"
#include "core/input_file.h"
#include "tandem/error.h"
#include "test_util.h"

namespace tandem {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string read_test_file(const std::string& path) {
  return read_regular_file(path, kMiB, "test output");
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(OutputPath, WritesThroughASymlinkToItsTarget) {
  test::TempDir dir;
  write_file_atomically(dir.file("target"), "old");
  fs::create_symlink("target", dir.file("link"));
  write_file_atomically(dir.file("link"), "new");
  EXPECT_TRUE(fs::is_symlink(dir.file("link")));
  EXPECT_EQ(read_test_file(dir.file("target")), "new");
  // A dangling link gets its target created.
  fs::create_symlink("later", dir.file("dangling"));
  write_file_atomically(dir.file("dangling"), "x");
  EXPECT_TRUE(fs::is_symlink(dir.file("dangling")));
  EXPECT_EQ(read_test_file(dir.file("later")), "x");
}

TEST(OutputPath, RefusesFifosDevicesAndDirectoriesAndLeavesThem) {
  test::TempDir dir;
  ASSERT_EQ(::mkfifo(dir.file("fifo").c_str(), 0644), 0);
  EXPECT_THAT(message_of([&] { write_file_atomically(dir.file("fifo"), "x"); }),
              HasSubstr("is a FIFO"));
  EXPECT_TRUE(fs::is_fifo(dir.file("fifo")));
  fs::create_symlink(dir.file("fifo"), dir.file("to_fifo"));
  EXPECT_THAT(message_of([&] { check_output_path(dir.file("to_fifo")); }), HasSubstr("FIFO"));
  EXPECT_THAT(message_of([&] { write_file_atomically("/dev/null", "x"); }),
              HasSubstr("character device"));
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  fs::create_directory(dir.file("sub"));
  EXPECT_THAT(message_of([&] { check_output_path(dir.file("sub")); }), HasSubstr("is a directory"));
  EXPECT_TRUE(fs::is_empty(dir.file("sub")));
}

TEST(OutputPath, ProbesThatAFileCanBeCreated) {
  EXPECT_THAT(message_of([] { check_output_path("/proc/tandem_cannot_be_here"); }),
              HasSubstr("cannot create a file in /proc"));
  EXPECT_THAT(message_of([] { check_output_path("/no/such/dir/out.json"); }),
              HasSubstr("does not exist"));
  test::TempDir dir;
  check_output_path(dir.file("ok.json"));
  EXPECT_TRUE(fs::is_empty(dir.path()));  // the probe is gone
}

TEST(OutputPath, RemovesTemporariesOfDeadWritersOnly) {
  test::TempDir dir;
  const pid_t child = fork();
  if (child == 0) _exit(0);
  ASSERT_GT(child, 0);
  waitpid(child, nullptr, 0);  // a pid that no longer exists
  const std::string dead = dir.file(".m.tandem.tandem-tmp." + std::to_string(child));
  const std::string alive = dir.file(".m.tandem.tandem-tmp." + std::to_string(::getppid()));
  const std::string other = dir.file("notes.tmp.1");  // not ours
  for (const auto& p : {dead, alive, other}) std::ofstream(p) << "partial";
  write_file_atomically(dir.file("m.tandem"), "whole");
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_TRUE(fs::exists(alive));
  EXPECT_TRUE(fs::exists(other));
  EXPECT_EQ(read_test_file(dir.file("m.tandem")), "whole");
}

TEST(OutputPath, OutputsMustBeDistinctAndNotInputs) {
  test::TempDir dir;
  std::ofstream(dir.file("data.gz")) << "d";
  fs::create_hard_link(dir.file("data.gz"), dir.file("hard"));
  fs::create_symlink("m.json", dir.file("link.json"));
  EXPECT_THAT(message_of([&] {
                check_outputs_distinct(
                    {{"--save", dir.file("m.json")}, {"--metrics-json", dir.file("link.json")}},
                    {});
              }),
              HasSubstr("are the same file"));
  EXPECT_THAT(message_of([&] {
                check_outputs_distinct({{"--save", dir.file("hard")}},
                                       {{"the data file", dir.file("data.gz")}});
              }),
              HasSubstr("which this run reads"));
  EXPECT_THAT(
      message_of([&] {
        check_outputs_distinct(
            {{"--save", dir.file("./sub/../m.json")}, {"--metrics-json", dir.file("m.json")}}, {});
      }),
      HasSubstr("same file"));
  check_outputs_distinct(
      {{"--save", dir.file("a")}, {"--metrics-json", dir.file("b")}, {"--profile", ""}},
      {{"the data file", dir.file("data.gz")}});
}

}  // namespace
}  // namespace tandem
