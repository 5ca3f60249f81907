// The HTML back end: the viewer's template (src/render/html/, compiled in by
// cmake/embed_text.cmake) with its style, its scripts (viewer_data.js, viewer_draw.js,
// viewer_calls.js, viewer_host.js, viewer_ranks.js, viewer_panels.js, viewer_hook.js, then viewer.js, in one element) and the
// data block put in place.
#include <stdexcept>
#include <string>

#include "gantt/render/html.h"

namespace gantt::html::assets {
extern const char kViewerHtml[];
extern const char kViewerCss[];
extern const char kViewerDataJs[];
extern const char kViewerDrawJs[];
extern const char kViewerCallsJs[];
extern const char kViewerHostJs[];
extern const char kViewerRanksJs[];
extern const char kViewerPanelsJs[];
extern const char kViewerHookJs[];
extern const char kViewerJs[];
}  // namespace gantt::html::assets

namespace gantt::html {

namespace {
// Replaces the one `marker` in `page`; a template without it is a build mistake.
void put(std::string& page, std::string_view marker, std::string_view text) {
  const size_t at = page.find(marker);
  if (at == std::string::npos) throw std::logic_error("viewer.html lacks " + std::string(marker));
  page.replace(at, marker.size(), text);
}
}  // namespace

std::string page(std::string_view data_json) {
  std::string out = assets::kViewerHtml;
  // Style and script first: the data goes in last, so no marker text inside a kernel name
  // can be taken for one (and the data is escaped so it has no '<' at all).
  put(out, "/*@VIEWER_CSS@*/", assets::kViewerCss);
  put(out, "/*@VIEWER_DATA_JS@*/", assets::kViewerDataJs);
  put(out, "/*@VIEWER_DRAW_JS@*/", assets::kViewerDrawJs);
  put(out, "/*@VIEWER_CALLS_JS@*/", assets::kViewerCallsJs);
  put(out, "/*@VIEWER_HOST_JS@*/", assets::kViewerHostJs);
  put(out, "/*@VIEWER_RANKS_JS@*/", assets::kViewerRanksJs);
  put(out, "/*@VIEWER_PANELS_JS@*/", assets::kViewerPanelsJs);
  put(out, "/*@VIEWER_HOOK_JS@*/", assets::kViewerHookJs);
  put(out, "/*@VIEWER_JS@*/", assets::kViewerJs);
  put(out, "/*@VIEWER_DATA@*/", data_json);
  return out;
}

}  // namespace gantt::html

namespace gantt {

void write_html(const Model& model, const Selection& selection, const RenderOptions& options, std::ostream& out,
                HtmlStats* stats) {
  out << html::page(html::data_json(model, selection, options, stats));
}

void write_html(const Model& model, const Selection& selection, const RenderOptions& options, const ChartRest& rest,
                std::ostream& out, HtmlStats* stats) {
  out << html::page(html::data_json(model, selection, options, rest, stats));
}

void write_diff_html(const std::vector<HtmlRun>& runs, const HtmlDiff& diff, const RenderOptions& options,
                     std::ostream& out, HtmlStats* stats) {
  out << html::page(html::data_json(runs, options, &diff, stats));
}

}  // namespace gantt
