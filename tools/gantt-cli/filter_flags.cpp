#include "filter_flags.h"

#include <iostream>

namespace gantt_cli {

void add_filter_flags(CLI::App& cmd, FilterFlags& flags) {
  cmd.add_option("--from", flags.from, "window start, relative to capture start (e.g. 12ms)");
  cmd.add_option("--to", flags.to, "window end, relative to capture start");
  cmd.add_option("--range", flags.range, "NAME@N: the N-th occurrence of an NVTX range (and the GPU work it launched)");
  cmd.add_option("--kernel", flags.kernel, "only events whose (demangled) name matches this regex");
  cmd.add_option("--device", flags.devices, "only these device ordinals");
  cmd.add_option("--stream", flags.streams, "only these CUPTI stream ids");
}

gantt::EventFilter make_filter(const FilterFlags& flags) {
  gantt::EventFilter f;
  f.from_ns = duration_arg("--from", flags.from);
  f.to_ns = duration_arg("--to", flags.to);
  f.range = flags.range;
  f.kernel_regex = flags.kernel;
  f.devices = flags.devices;
  f.streams = flags.streams;
  return f;
}

bool any_filter(const FilterFlags& f) {
  return !f.from.empty() || !f.to.empty() || !f.range.empty() || !f.kernel.empty() || !f.devices.empty() ||
         !f.streams.empty();
}


bool windowed(const FilterFlags& f) { return !f.from.empty() || !f.to.empty() || !f.range.empty(); }

bool restrict_to_filter(gantt::Model& model, const FilterFlags& flags, const char* subcommand) {
  if (!any_filter(flags)) return true;
  try {
    const gantt::Selection sel = gantt::select_events(model, make_filter(flags));
    const size_t all = model.events.size();
    model = gantt::restricted(model, sel);
    std::cerr << "gantt-cli: " << subcommand << ": " << sel.events.size() << " of " << all << " GPU events ("
              << sel.description << ")\n";
    return true;
  } catch (const std::invalid_argument& e) {
    std::cerr << "gantt-cli: " << subcommand << ": " << e.what() << "\n";
    return false;
  }
}

int64_t duration_arg(const std::string& flag, const std::string& text) {
  if (text.empty()) return -1;
  int64_t ns = 0;
  std::string why;
  if (!gantt::parse_duration(text, &ns, &why)) throw CLI::ValidationError(flag, "'" + text + "': " + why);
  return ns;
}

}  // namespace gantt_cli
