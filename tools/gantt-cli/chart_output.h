// Where a chart goes: render, jobs and diff -o share one rule for the format (the --format
// given, else the name's .svg, .png or .pdf, and .html where the subcommand has a page;
// "-" is SVG on stdout where stdout is free) and one writer, so their outputs and their
// messages agree.
#pragma once

#include <string>

#include <gantt/model/filter.h>
#include <gantt/render/html.h>
#include <gantt/model/model.h>
#include <gantt/render/render.h>
#include <gantt/render/scene.h>

namespace gantt_cli {

struct ChartTarget {
  const char* subcommand = "";  // for the messages: "gantt-cli: render: ..."
  std::string path;             // "-" = stdout
  std::string format;           // from --format; settled by resolve_chart_format
  bool format_flag = true;      // the subcommand has --format (the message names it)
  bool stdout_ok = true;        // false where stdout carries a report (diff)
  bool html_ok = false;         // the subcommand writes the interactive page (gantt/render/html.h)
};

// Settles target.format. False, after one line on stderr, when the format cannot be told or a
// raster format is asked for on stdout.
bool resolve_chart_format(ChartTarget& target);

// Writes the scene in target.format; false after one line on stderr when it cannot.
bool write_chart(const gantt::Scene& scene, const ChartTarget& target);

// Writes the interactive page (format "html"); false after one line on stderr when it cannot.
bool write_html_chart(const gantt::Model& model, const gantt::Selection& selection, const gantt::RenderOptions& options,
                      const ChartTarget& target, gantt::HtmlStats* stats);
// The page of a scanned capture (gantt/render/html.h write_html with a ChartRest).
bool write_html_chart(const gantt::Model& model, const gantt::Selection& selection, const gantt::RenderOptions& options,
                      const gantt::ChartRest& rest, const ChartTarget& t, gantt::HtmlStats* stats);

}  // namespace gantt_cli
