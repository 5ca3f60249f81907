// Reading capture files into the model: the only place libgantt touches the reader.
#include "gantt/model.h"

namespace gantt {

Model load(const std::vector<std::string>& paths, const LoadOptions& options) {
  Model model;
  ModelBuilder builder(model);
  for (const std::string& path : paths) {
    gpuhook::ReaderOptions ro;
    ro.strict = options.strict;
    ro.from_ns = options.from_ns;
    ro.to_ns = options.to_ns;
    gpuhook::CaptureReader reader(path, ro);
    builder.begin_capture(path);
    gpuhook::v1::Record record;
    while (reader.next(record)) builder.add(record);
    builder.end_capture(reader.integrity());
  }
  return model;
}

}  // namespace gantt
