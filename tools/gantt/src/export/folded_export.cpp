// Folded stacks ("range;range;kernel weight_ns"), the input of flamegraph.pl, speedscope and
// inferno. One line per distinct stack, sorted, weights in nanoseconds of GPU exec time.
// The stack is the NVTX range chain of the launching thread, outermost first, then the
// kernel (copies and memsets as "[memcpy HtoD]", "[memset]").
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gantt/analysis/stats.h"
#include "gantt/export.h"
#include "gantt/export/chrome_json.h"

namespace gantt {
namespace {

// A frame may not contain the separators of the format: ';' splits frames and the last
// space splits the weight, newlines split lines. Spaces inside a frame are fine (the weight
// is after the last one); ';' becomes ':' and controls/invalid UTF-8 are cleaned.
std::string frame(std::string_view name) {
  std::string f = json::printable_utf8(name);
  for (char& c : f)
    if (c == ';') c = ':';
  if (f.empty()) f = "?";
  return f;
}

class FoldedExporter : public Exporter {
 public:
  std::string_view format() const override { return "folded"; }
  std::string_view description() const override {
    return "folded stacks 'range;range;kernel weight_ns' for flamegraph.pl and speedscope";
  }
  void write(const Model& m, const Selection& sel, std::ostream& os) const override {
    std::map<std::string, uint64_t> stacks;
    std::vector<std::string> range_prefix(m.ranges.size());
    std::vector<uint8_t> done(m.ranges.size(), 0);
    const auto prefix = [&](uint32_t r) -> const std::string& {
      if (!done[r]) {
        std::vector<uint32_t> chain;
        for (uint32_t i = r; i != kNone && chain.size() < 256; i = m.ranges.parent[i]) chain.push_back(i);
        std::string p;
        for (auto it = chain.rbegin(); it != chain.rend(); ++it) p += frame(m.string(m.ranges.name[*it])) + ";";
        range_prefix[r] = std::move(p);
        done[r] = 1;
      }
      return range_prefix[r];
    };
    std::map<uint64_t, std::string> leaf;  // name id (or copy kind) -> frame
    for (uint32_t e : sel.events) {
      if (!analysis::is_gpu_work(m, e)) continue;
      const uint64_t key = m.events.kind[e] == EventKind::kMemcpy ? (uint64_t{1} << 40) | m.events.copy_kind[e]
                           : m.events.kind[e] == EventKind::kMemset ? (uint64_t{2} << 40)
                                                                    : m.events.name[e];
      auto it = leaf.find(key);
      if (it == leaf.end()) it = leaf.emplace(key, frame(analysis::kernel_key(m, e))).first;
      const uint32_t r = m.events.range[e];
      stacks[(r == kNone ? std::string() : prefix(r)) + it->second] += m.events.end_ns[e] - m.events.start_ns[e];
    }
    std::string out;
    for (const auto& [stack, w] : stacks) out += stack + " " + std::to_string(w) + "\n";
    os << out;
  }
};

}  // namespace

std::unique_ptr<Exporter> make_folded_exporter() { return std::make_unique<FoldedExporter>(); }

}  // namespace gantt
