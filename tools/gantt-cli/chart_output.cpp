#include "chart_output.h"

#include <fstream>
#include <iostream>

#include <gantt/render.h>

namespace gantt_cli {

bool resolve_chart_format(ChartTarget& t) {
  if (t.format.empty()) {
    for (const char* ext : {"svg", "png", "pdf"}) {
      const std::string suffix = std::string(".") + ext;
      if (t.path.size() > suffix.size() && t.path.compare(t.path.size() - suffix.size(), suffix.size(), suffix) == 0)
        t.format = ext;
    }
    if (t.path == "-" && t.stdout_ok) t.format = "svg";
  }
  if (t.format != "svg" && t.format != "png" && t.format != "pdf") {
    std::cerr << "gantt-cli: " << t.subcommand << ": cannot tell the format of '" << t.path
              << "': name it .svg, .png or .pdf" << (t.format_flag ? ", or pass --format" : "") << "\n";
    return false;
  }
  if (t.path == "-" && t.format != "svg") {
    std::cerr << "gantt-cli: " << t.subcommand << ": only SVG can go to stdout\n";
    return false;
  }
  return true;
}

bool write_chart(const gantt::Scene& scene, const ChartTarget& t) {
  if (t.format == "svg") {
    if (t.path == "-") {
      gantt::write_svg(scene, std::cout);
      std::cout.flush();
      return true;
    }
    std::ofstream out(t.path, std::ios::binary | std::ios::trunc);
    if (out) gantt::write_svg(scene, out);
    out.close();
    if (!out) {
      std::cerr << "gantt-cli: " << t.subcommand << ": cannot write " << t.path << "\n";
      return false;
    }
    return true;
  }
  std::string error;
  if (!gantt::write_raster(scene, t.path, t.format == "png" ? gantt::RasterFormat::kPng : gantt::RasterFormat::kPdf,
                           &error)) {
    std::cerr << "gantt-cli: " << t.subcommand << ": " << error << "\n";
    return false;
  }
  return true;
}

}  // namespace gantt_cli
