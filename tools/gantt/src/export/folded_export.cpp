// Folded stacks ("range;range;kernel weight_ns"), the input of flamegraph.pl, speedscope and
// inferno. One line per distinct stack, sorted, weights in nanoseconds of GPU exec time.
// The stack is the NVTX range chain of the launching thread, outermost first, then the
// kernel (copies and memsets as "[memcpy HtoD]", "[memset]").
#include <memory>
#include <string>

#include "gantt/analysis/flame.h"
#include "gantt/export/export.h"

namespace gantt {
namespace {

class FoldedExporter : public Exporter {
 public:
  std::string_view format() const override { return "folded"; }
  std::string_view description() const override {
    return "folded stacks 'range;range;kernel weight_ns' for flamegraph.pl and speedscope";
  }
  void write(const Model& m, const Selection& sel, const ExportOptions& options, std::ostream& os) const override {
    // Frames are cleaned by gpu_stacks (no ';', no controls, valid UTF-8) and joined by a
    // separator byte that becomes ';' here.
    std::string out;
    for (const auto& [stack, w] : analysis::gpu_stacks(m, &sel, options.folded_root)) {
      std::string line = stack;
      for (char& c : line)
        if (c == '\x1f') c = ';';
      out += line + " " + std::to_string(w) + "\n";
    }
    os << out;
  }
};

}  // namespace

std::unique_ptr<Exporter> make_folded_exporter() { return std::make_unique<FoldedExporter>(); }

}  // namespace gantt
