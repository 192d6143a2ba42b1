// Hardware profile files: a regular file of at most 1 MiB (a FIFO is refused without
// blocking), and every field of the wrong type is a ConfigError naming the file, never a
// bare JSON exception.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "advise/hardware_profile.h"
#include "peak_memory.h"
#include "test_util.h"

namespace tandem::detail {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

json shipped_profile(const std::string& name) {
  std::ifstream in(profiles_directory() + "/" + name + ".json");
  return json::parse(in);
}

std::string write_profile(const test::TempDir& dir, const json& j) {
  const std::string path = dir.file("profile.json");
  std::ofstream(path) << j.dump();
  return path;
}

TEST(HardwareProfileFile, FifoIsRefusedWithoutBlocking) {
  test::TempDir dir;
  const std::string fifo = dir.file("fifo.json");
  test::expect_fifo_refused(fifo, [&] { load_hardware_profile(fifo); });
}

TEST(HardwareProfileFile, OversizedFileIsRefusedBeforeReading) {
  test::TempDir dir;
  const std::string path = dir.file("big.json");
  std::ofstream(path) << std::string(2 << 20, ' ') << "{}";
  test::expect_error<IoError>([&] { load_hardware_profile(path); }, {path, "more than"});
}

TEST(HardwareProfileFile, WrongTypesAreConfigErrorsNamingTheFile) {
  test::TempDir dir;
  const std::vector<std::function<void(json&)>> edits = {
      [](json& j) { j["name"] = 3; },
      [](json& j) { j["description"] = json::array(); },
      [](json& j) { j["device"]["name"] = false; },
      [](json& j) { j["device"]["comm_uses_compute"] = "yes"; },
      [](json& j) {
        j["device"]["calibration"]["widths"] = {784, 1e300};
      },
      [](json& j) {
        j["device"]["calibration"]["widths"] = {784, -10};
      },
      [](json& j) { j["device"]["calibration"]["batch"] = 1.5; },
      [](json& j) { j["device"]["calibration"]["epochs"] = 1e300; },
      [](json& j) { j["device"]["calibration"]["update_passes"] = "five"; },
      [](json& j) { j["device"]["calibration"] = 7; },
  };
  for (size_t i = 0; i < edits.size(); ++i) {
    json j = shipped_profile("this-machine-cpu");
    edits[i](j);
    const std::string path = write_profile(dir, j);
    try {
      load_hardware_profile(path);
      ADD_FAILURE() << "edit " << i << " was accepted";
    } catch (const ConfigError& e) {
      EXPECT_THAT(e.what(), HasSubstr(path)) << "edit " << i;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "edit " << i << " threw another type: " << e.what();
    }
  }
}

}  // namespace
}  // namespace tandem::detail
