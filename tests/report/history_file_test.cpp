// Training histories for the scaling report (CSVLogger files and --metrics-json reports):
// a regular file of at most 64 MiB, every cell a whole finite number, columns named once.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "peak_memory.h"
#include "report/scaling_report.h"
#include "test_util.h"

namespace tandem::detail {
namespace {

using ::testing::HasSubstr;

std::string write(const test::TempDir& dir, const std::string& name, const std::string& text) {
  const std::string path = dir.file(name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST(HistoryFile, FifoIsRefusedWithoutBlocking) {
  test::TempDir dir;
  const std::string fifo = dir.file("log.csv");
  test::expect_fifo_refused(fifo, [&] { read_training_curve(fifo); });
}

TEST(HistoryFile, CellsMustBeWholeFiniteNumbers) {
  test::TempDir dir;
  for (const char* cell : {"1.5abc", "nan", "inf", "1e400", "", " "}) {
    const std::string path = write(dir, "log.csv", std::string("epoch,loss\n0,") + cell + "\n");
    test::expect_error<FormatError>([&] { read_training_curve(path); },
                                    {path, "offset 11", "is not a number"});
  }
  const std::string crlf = write(dir, "crlf.csv", "epoch,loss\r\n0,0.5\r\n1,0.25\r\n");
  EXPECT_EQ(read_training_curve(crlf).series.at("loss"), (std::vector<double>{0.5, 0.25}));
}

TEST(HistoryFile, ColumnsAreNamedOnce) {
  test::TempDir dir;
  const std::string twice = write(dir, "twice.csv", "epoch,loss,loss\n0,1,2\n");
  test::expect_error<FormatError>([&] { read_training_curve(twice); }, {twice, "'loss' twice"});
  const std::string empty = write(dir, "empty.csv", "epoch,,loss\n0,1,2\n");
  test::expect_error<FormatError>([&] { read_training_curve(empty); }, {empty, "empty column"});
}

TEST(HistoryFile, MetricsJsonOfTheWrongShapeIsAFormatError) {
  test::TempDir dir;
  for (const char* text : {R"({"epochs": 3})", R"({"epochs": [1, 2]})", R"({"nothing": []})",
                           R"({"epochs": [{"loss": 1e308}, {"loss": -1e301}]})", "{ not json"}) {
    const std::string path = write(dir, "m.json", text);
    test::expect_error<FormatError>([&] { read_training_curve(path); }, {path});
  }
}

TEST(HistoryFile, OversizedFileIsRefusedBeforeReading) {
  test::TempDir dir;
  const std::string path = dir.file("big.csv");
  {
    std::ofstream out(path);
    out << "epoch,loss\n";
    out.seekp((int64_t{65} << 20));
    out << "\n";
  }
  test::expect_error<IoError>([&] { read_training_curve(path); }, {path, "more than"});
}

}  // namespace
}  // namespace tandem::detail
