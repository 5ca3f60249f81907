#include "chart_output.h"

#include <fstream>
#include <functional>
#include <iostream>

#include <gantt/render/html.h>
#include <gantt/render/render.h>

namespace gantt_cli {

bool resolve_chart_format(ChartTarget& t) {
  if (t.format.empty()) {
    for (const char* ext : {"svg", "png", "pdf", "html"}) {
      const std::string suffix = std::string(".") + ext;
      if (t.path.size() > suffix.size() && t.path.compare(t.path.size() - suffix.size(), suffix.size(), suffix) == 0)
        t.format = ext;
    }
    if (t.path == "-" && t.stdout_ok) t.format = "svg";
  }
  if (t.format == "html" && !t.html_ok) {
    std::cerr << "gantt-cli: " << t.subcommand << ": no HTML output here yet: name it .svg, .png or .pdf\n";
    return false;
  }
  if (t.format != "svg" && t.format != "png" && t.format != "pdf" && t.format != "html") {
    std::cerr << "gantt-cli: " << t.subcommand << ": cannot tell the format of '" << t.path << "': name it "
              << (t.html_ok ? ".svg, .png, .pdf or .html" : ".svg, .png or .pdf") << (t.format_flag ? ", or pass --format" : "")
              << "\n";
    return false;
  }
  if (t.path == "-" && t.format != "svg" && t.format != "html") {
    std::cerr << "gantt-cli: " << t.subcommand << ": only SVG" << (t.html_ok ? " or HTML" : "") << " can go to stdout\n";
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

namespace {
bool write_page(const ChartTarget& t, const std::function<void(std::ostream&)>& write) {
  if (t.path == "-") {
    write(std::cout);
    std::cout.flush();
    return true;
  }
  std::ofstream out(t.path, std::ios::binary | std::ios::trunc);
  if (out) write(out);
  out.close();
  if (!out) {
    std::cerr << "gantt-cli: " << t.subcommand << ": cannot write " << t.path << "\n";
    return false;
  }
  return true;
}
}  // namespace

bool write_html_chart(const gantt::Model& model, const gantt::Selection& selection, const gantt::RenderOptions& options,
                      const ChartTarget& t, gantt::HtmlStats* stats) {
  return write_page(t, [&](std::ostream& out) { gantt::write_html(model, selection, options, out, stats); });
}

bool write_html_chart(const gantt::Model& model, const gantt::Selection& selection, const gantt::RenderOptions& options,
                      const gantt::ChartRest& rest, const ChartTarget& t, gantt::HtmlStats* stats) {
  return write_page(t, [&](std::ostream& out) { gantt::write_html(model, selection, options, rest, out, stats); });
}

}  // namespace gantt_cli
