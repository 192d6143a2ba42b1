// Fuzzes read_training_curve (CSVLogger files and --metrics-json reports), then renders the
// curves into the scaling report as `tandem bench --history F` does.
#include "fuzz_util.h"
#include "report/scaling_report.h"
#include "tandem/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const tandem::fuzz::InputPath file("history.csv");
  try {
    tandem::detail::ScalingReport report;
    report.configs.push_back({"1 device", "mirrored", 1, 10.0, 1.0});
    report.curves.push_back(tandem::detail::read_training_curve(file.write(data, size)));
    (void)tandem::detail::report_html(report);
  } catch (const tandem::Error&) {
    // Expected: a typed error naming the file.
  }
  return 0;
}
