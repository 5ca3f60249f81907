// Reading the scheduler's records: sacct --parsable2 output or the documented CSV, node lists,
// wall-clock times, AllocTRES. Every field is untrusted text: a bad line is reported with its
// number and skipped, a node list cannot expand past a limit.
#include <algorithm>
#include <charconv>
#include <ctime>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>

#include "gantt/jobs/jobs.h"
#include "gantt/model/text.h"

namespace gantt::jobs {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool parse_u64(std::string_view s, uint64_t* v) {
  if (s.empty()) return false;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && p == s.data() + s.size();
}

// Splits at `sep` outside brackets.
std::vector<std::string_view> split_top(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  int depth = 0;
  size_t from = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '[') ++depth;
    else if (s[i] == ']') --depth;
    else if (s[i] == sep && depth == 0) {
      out.push_back(s.substr(from, i - from));
      from = i + 1;
    }
  }
  out.push_back(s.substr(from));
  return out;
}

// One host expression with zero or more bracket groups: "r[1-2]n[01-02]".
bool expand_one(std::string_view expr, std::vector<std::string>* out, std::string* why, size_t limit) {
  const size_t open = expr.find('[');
  if (open == std::string_view::npos) {
    if (expr.find(']') != std::string_view::npos) return *why = "']' without '['", false;
    out->emplace_back(expr);
    return true;
  }
  const size_t close = expr.find(']', open);
  if (close == std::string_view::npos) return *why = "'[' without ']'", false;
  const std::string_view prefix = expr.substr(0, open), body = expr.substr(open + 1, close - open - 1),
                         rest = expr.substr(close + 1);
  if (body.empty()) return *why = "empty brackets", false;
  std::vector<std::string> tails;
  if (!expand_one(rest, &tails, why, limit)) return false;
  for (std::string_view part : split_top(body, ',')) {
    const size_t dash = part.find('-');
    const std::string_view a = dash == std::string_view::npos ? part : part.substr(0, dash);
    const std::string_view b = dash == std::string_view::npos ? part : part.substr(dash + 1);
    uint64_t lo = 0, hi = 0;
    if (!parse_u64(a, &lo) || !parse_u64(b, &hi) || a.size() > 18 || b.size() > 18)
      return *why = "'" + printable_utf8(part.substr(0, 40)) + "' in brackets is not a number or a range N-M", false;
    if (hi < lo) return *why = "range '" + printable_utf8(part.substr(0, 40)) + "' runs backwards", false;
    if (hi - lo >= limit || out->size() + (hi - lo + 1) * tails.size() > limit)
      return *why = "expands to more than " + std::to_string(limit) + " nodes", false;
    for (uint64_t v = lo; v <= hi; ++v) {
      std::string num = std::to_string(v);
      if (num.size() < a.size()) num.insert(0, a.size() - num.size(), '0');
      for (const std::string& t : tails) out->push_back(std::string(prefix) + num + t);
    }
  }
  return true;
}

// "gpu2" < "gpu10": digit runs compare as numbers.
bool natural_less(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const bool da = a[i] >= '0' && a[i] <= '9', db = b[j] >= '0' && b[j] <= '9';
    if (da && db) {
      size_t ie = i, je = j;
      while (ie < a.size() && a[ie] >= '0' && a[ie] <= '9') ++ie;
      while (je < b.size() && b[je] >= '0' && b[je] <= '9') ++je;
      std::string_view na(a.data() + i, ie - i), nb(b.data() + j, je - j);
      while (na.size() > 1 && na.front() == '0') na.remove_prefix(1);
      while (nb.size() > 1 && nb.front() == '0') nb.remove_prefix(1);
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = ie, j = je;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i, ++j;
    }
  }
  return a.size() - i < b.size() - j || (a.size() - i == b.size() - j && a < b);
}

}  // namespace

bool split_csv(std::string_view line, std::vector<std::string>* out, std::string* why) {
  out->clear();
  std::string cell;
  size_t i = 0;
  for (;;) {
    cell.clear();
    if (i < line.size() && line[i] == '"') {
      ++i;
      for (;;) {
        if (i >= line.size()) return *why = "a quoted field does not end", false;
        if (line[i] == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            cell += '"';
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        cell += line[i++];
      }
      if (i < line.size() && line[i] != ',') return *why = "text after a closing quote", false;
    } else {
      while (i < line.size() && line[i] != ',') cell += line[i++];
    }
    out->push_back(std::string(trim(cell)));
    if (i >= line.size()) return true;
    ++i;  // the comma
  }
}

namespace {

enum Column { kId, kName, kUser, kPartition, kSubmit, kStart, kEnd, kState, kNodes, kTres, kColumns };

struct Layout {
  bool csv = false;
  int at[kColumns];
};

// The header line decides the format and where each column is.
bool read_header(std::string_view line, Layout* layout, std::string* why) {
  static const char* const kSacct[kColumns] = {"JobID", "JobName", "User", "Partition", "Submit",
                                               "Start", "End",     "State", "NodeList", "AllocTRES"};
  static const char* const kCsv[kColumns] = {"job", "name", "user", "partition", "submit",
                                             "start", "end", "state", "nodes", "gpus"};
  layout->csv = line.find('|') == std::string_view::npos;
  std::vector<std::string> cells;
  if (layout->csv) {
    if (!split_csv(line, &cells, why)) return false;
  } else {
    for (std::string_view c : split_top(line, '|')) cells.emplace_back(trim(c));
  }
  const char* const* names = layout->csv ? kCsv : kSacct;
  std::string missing;
  for (int c = 0; c < kColumns; ++c) {
    layout->at[c] = -1;
    for (size_t i = 0; i < cells.size(); ++i)
      if (cells[i] == names[c]) layout->at[c] = static_cast<int>(i);
    // A user-less or name-less export still charts; times, nodes and the id are needed.
    if (layout->at[c] < 0 && c != kName && c != kUser && c != kPartition && c != kState)
      missing += std::string(missing.empty() ? "" : ", ") + names[c];
  }
  if (!missing.empty()) {
    *why = layout->csv ? "CSV header lacks " + missing +
                             " (expected job,name,user,partition,submit,start,end,state,nodes,gpus)"
                       : "sacct header lacks " + missing +
                             " (run sacct --parsable2 --allocations --format "
                             "JobID,JobName,User,Partition,Submit,Start,End,State,NodeList,AllocTRES)";
    return false;
  }
  return true;
}

}  // namespace

bool expand_nodelist(std::string_view list, std::vector<std::string>* out, std::string* why, size_t limit) {
  out->clear();
  list = trim(list);
  if (list.empty() || list == "None assigned" || list == "(null)" || list == "None") return true;
  const std::string shown = printable_utf8(list.substr(0, 40)) + (list.size() > 40 ? "..." : "");
  int depth = 0;
  for (char c : list) {
    depth += c == '[' ? 1 : c == ']' ? -1 : 0;
    if (depth < 0 || depth > 1) return *why = "unbalanced or nested brackets in '" + shown + "'", false;
    if (c == ' ' || c == '|' || static_cast<unsigned char>(c) < 0x20)
      return *why = "node list holds a space or control character", false;
  }
  if (depth != 0) return *why = "unbalanced brackets in '" + shown + "'", false;
  for (std::string_view expr : split_top(list, ',')) {
    if (expr.empty()) return *why = "empty name in node list", false;
    // A host name is at most 255 bytes (RFC 1035); brackets a few per name. Both bound the
    // expansion's bytes and its recursion, whatever a hostile line holds.
    size_t groups = 0, text = 0;
    bool inside = false;
    for (char c : expr) {
      if (c == '[') ++groups, inside = true;
      else if (c == ']') inside = false;
      else if (!inside) ++text;
    }
    if (groups > 8) return *why = "more than 8 bracket groups in one name of '" + shown + "'", false;
    if (text + 20 * groups > 255) return *why = "a node name longer than 255 bytes in '" + shown + "'", false;
    std::vector<std::string> names;
    if (!expand_one(expr, &names, why, limit - std::min(limit, out->size()))) return false;
    out->insert(out->end(), names.begin(), names.end());
    if (out->size() > limit) return *why = "expands to more than " + std::to_string(limit) + " nodes", false;
  }
  return true;
}

bool parse_wall_time(std::string_view text, int64_t* seconds) {
  text = trim(text);
  if (text.empty() || text == "Unknown" || text == "None" || text == "N/A") {
    *seconds = kUnknownTime;
    return true;
  }
  if (!text.empty() && text.back() == 'Z') text.remove_suffix(1);
  int f[6] = {0, 1, 1, 0, 0, 0};
  const int widths[6] = {4, 2, 2, 2, 2, 2};
  const char seps[6] = {0, '-', '-', 'T', ':', ':'};
  size_t i = 0;
  int fields = 0;
  for (; fields < 6 && i < text.size(); ++fields) {
    if (fields > 0) {
      const char s = text[i];
      if (s != seps[fields] && !(fields == 3 && s == ' ')) return false;
      ++i;
    }
    if (i + static_cast<size_t>(widths[fields]) > text.size()) return false;
    f[fields] = 0;
    for (int k = 0; k < widths[fields]; ++k) {
      const char c = text[i + static_cast<size_t>(k)];
      if (c < '0' || c > '9') return false;
      f[fields] = f[fields] * 10 + (c - '0');
    }
    i += static_cast<size_t>(widths[fields]);
  }
  // A date alone, a date with hours and minutes, or all six.
  if (i != text.size() || (fields != 3 && fields != 5 && fields != 6)) return false;
  if (f[1] < 1 || f[1] > 12 || f[2] < 1 || f[2] > 31 || f[3] > 23 || f[4] > 59 || f[5] > 60) return false;
  std::tm tm{};
  tm.tm_year = f[0] - 1900;
  tm.tm_mon = f[1] - 1;
  tm.tm_mday = f[2];
  tm.tm_hour = f[3];
  tm.tm_min = f[4];
  tm.tm_sec = f[5];
  const time_t t = timegm(&tm);
  // timegm normalises 2024-02-31 to March 2: refuse a date that does not exist.
  std::tm back{};
  if (!gmtime_r(&t, &back) || back.tm_mday != f[2] || back.tm_mon != f[1] - 1) return false;
  *seconds = static_cast<int64_t>(t);
  return true;
}

std::string format_wall_time(int64_t seconds) {
  if (seconds == kUnknownTime) return "Unknown";
  const time_t t = static_cast<time_t>(seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return buf;
}

bool parse_tres_gpus(std::string_view tres, uint32_t* gpus) {
  uint64_t total = 0, typed = 0;
  bool has_total = false;
  for (std::string_view item : split_top(trim(tres), ',')) {
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key != "gres/gpu" && key.rfind("gres/gpu:", 0) != 0) continue;
    uint64_t n = 0;
    if (!parse_u64(value, &n) || n > 1'000'000) return false;
    if (key == "gres/gpu") has_total = true, total = n;
    else typed += n;
    if (typed > 1'000'000) return false;
  }
  *gpus = static_cast<uint32_t>(has_total ? total : typed);
  return true;
}

JobSet parse_jobs(std::string_view text, std::string source) {
  JobSet set;
  set.source = std::move(source);
  Layout layout{};
  bool have_header = false;
  std::unordered_map<std::string, uint32_t> node_index;
  std::vector<std::string> cells, names;
  size_t line_no = 0, memberships = 0;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);  // CRLF (RFC 4180's own line end)
    ++line_no;
    if (trim(line).empty()) continue;
    std::string why;
    if (!have_header) {
      if (!read_header(line, &layout, &why)) {
        set.problems.push_back({line_no, why});
        return set;
      }
      have_header = true;
      continue;
    }
    if (layout.csv) {
      if (!split_csv(line, &cells, &why)) {
        set.problems.push_back({line_no, why});
        continue;
      }
    } else {
      cells.clear();
      size_t from = 0;
      for (size_t i = 0; i <= line.size(); ++i)
        if (i == line.size() || line[i] == '|') {
          cells.emplace_back(trim(line.substr(from, i - from)));
          from = i + 1;
        }
    }
    const auto cell = [&](Column c) -> const std::string& {
      static const std::string kEmpty;
      return layout.at[c] >= 0 && static_cast<size_t>(layout.at[c]) < cells.size() ? cells[static_cast<size_t>(layout.at[c])]
                                                                                  : kEmpty;
    };
    int needed = 0;
    for (int c = 0; c < kColumns; ++c) needed = std::max(needed, layout.at[c] + 1);
    if (cells.size() < static_cast<size_t>(needed)) {
      set.problems.push_back({line_no, std::to_string(cells.size()) + " fields, the header has " + std::to_string(needed)});
      continue;
    }
    Job j;
    j.line = line_no;
    j.id = utf8_clean(cell(kId));
    if (j.id.empty()) {
      set.problems.push_back({line_no, "empty job id"});
      continue;
    }
    // Job steps (123.batch, 123.0) are the allocation's own pieces: --allocations leaves them out.
    if (!layout.csv && j.id.find('.') != std::string::npos) {
      ++set.steps_skipped;
      continue;
    }
    j.name = utf8_clean(cell(kName));
    j.user = utf8_clean(cell(kUser));
    j.partition = utf8_clean(cell(kPartition));
    j.state = utf8_clean(cell(kState));
    if (const size_t sp = j.state.find(' '); sp != std::string::npos) j.state.resize(sp);  // "CANCELLED by 1000"
    const std::pair<Column, int64_t*> times[] = {{kSubmit, &j.submit_s}, {kStart, &j.start_s}, {kEnd, &j.end_s}};
    for (const auto& [col, dest] : times) {
      if (!parse_wall_time(cell(col), dest)) why = "bad time '" + printable_utf8(cell(col).substr(0, 40)) + "'";
    }
    if (why.empty() && j.submit_s == kUnknownTime) why = "no submit time";
    if (why.empty() && j.started() && j.start_s < j.submit_s) why = "starts before it was submitted";
    if (why.empty() && j.started() && j.end_s != kUnknownTime && j.end_s < j.start_s) why = "ends before it started";
    if (why.empty() && !j.started() && j.end_s != kUnknownTime) j.end_s = kUnknownTime;  // cancelled while pending
    if (why.empty() && !expand_nodelist(cell(kNodes), &names, &why)) why = "node list: " + why;
    if (why.empty()) {
      if (layout.csv) {
        uint64_t g = 0;
        if (!cell(kTres).empty() && (!parse_u64(cell(kTres), &g) || g > 1'000'000)) why = "gpus is not a count";
        j.gpus = static_cast<uint32_t>(g);
      } else if (!parse_tres_gpus(cell(kTres), &j.gpus)) {
        why = "AllocTRES has a gres/gpu count that is not a number";
      }
    }
    if (!why.empty()) {
      set.problems.push_back({line_no, why});
      continue;
    }
    if (!j.started()) names.clear();  // a pending job's NodeList is the reason, not nodes
    // What a hostile record could make us hold: a few bytes of "a[0-99999]" per line name
    // 100,000 nodes each.
    for (std::string& n : names) n = utf8_clean(n);
    size_t fresh_nodes = 0;
    for (const std::string& n : names) fresh_nodes += node_index.count(n) ? 0 : 1;
    if (set.nodes.size() + fresh_nodes > kMaxNodes) why = "more than " + std::to_string(kMaxNodes) + " distinct nodes in the record";
    else if (memberships + names.size() > kMaxMemberships)
      why = "more than " + std::to_string(kMaxMemberships) + " job-node pairs in the record";
    else if (j.gpus > kMaxGpusPerNode * std::max<size_t>(names.size(), 1) && j.started())
      why = std::to_string(j.gpus) + " GPUs on " + std::to_string(names.size()) + " node(s): more than " +
            std::to_string(kMaxGpusPerNode) + " per node";
    if (!why.empty()) {
      set.problems.push_back({line_no, why});
      continue;
    }
    if (set.jobs.size() >= kMaxJobs) {
      set.problems.push_back({line_no, "more than " + std::to_string(kMaxJobs) +
                                           " jobs: the rest is left out (read a window: sacct -S/-E)"});
      break;
    }
    memberships += names.size();
    for (const std::string& n : names) {
      auto [it, fresh] = node_index.try_emplace(n, static_cast<uint32_t>(set.nodes.size()));
      if (fresh) set.nodes.push_back(n);
      j.nodes.push_back(it->second);
    }
    set.jobs.push_back(std::move(j));
  }
  if (!have_header) set.problems.push_back({0, "no header line: not sacct --parsable2 output nor the jobs CSV"});
  // Natural order of the nodes, and the jobs' indices remapped to it.
  std::vector<uint32_t> order(set.nodes.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return natural_less(set.nodes[a], set.nodes[b]); });
  std::vector<uint32_t> rank(order.size());
  std::vector<std::string> sorted(order.size());
  for (uint32_t r = 0; r < order.size(); ++r) {
    rank[order[r]] = r;
    sorted[r] = std::move(set.nodes[order[r]]);
  }
  set.nodes = std::move(sorted);
  for (Job& j : set.jobs) {
    for (uint32_t& n : j.nodes) n = rank[n];
    std::sort(j.nodes.begin(), j.nodes.end());
    j.nodes.erase(std::unique(j.nodes.begin(), j.nodes.end()), j.nodes.end());
  }
  return set;
}

void finish_jobs(JobSet& set, uint32_t gpus_per_node, int64_t now_s) {
  if (now_s == kUnknownTime) {
    for (const Job& j : set.jobs)
      for (int64_t t : {j.submit_s, j.start_s, j.end_s})
        if (t != kUnknownTime) now_s = now_s == kUnknownTime ? t : std::max(now_s, t);
  }
  set.now_s = now_s;
  if (gpus_per_node == 0) {
    // The most GPUs allocated on one node at once: a sweep of per-node share changes.
    struct Change {
      uint32_t node;
      int64_t t, delta;
    };
    std::vector<Change> changes;
    for (const Job& j : set.jobs) {
      if (!j.started() || j.nodes.empty() || j.gpus == 0) continue;
      for (size_t i = 0; i < j.nodes.size(); ++i) {
        const int64_t share = j.gpus_on(i);  // the split the slots use
        if (share == 0) continue;
        changes.push_back({j.nodes[i], j.start_s, share});
        changes.push_back({j.nodes[i], std::max(j.start_s, set.end_of(j)), -share});
      }
    }
    // At one instant, ends before starts: a job starting as another ends does not overlap it.
    std::sort(changes.begin(), changes.end(), [](const Change& a, const Change& b) {
      return std::tie(a.node, a.t, a.delta) < std::tie(b.node, b.t, b.delta);
    });
    int64_t cur = 0, best = 0;
    uint32_t node = UINT32_MAX;
    for (const Change& c : changes) {
      if (c.node != node) node = c.node, cur = 0;
      cur += c.delta;
      best = std::max(best, cur);
    }
    gpus_per_node = static_cast<uint32_t>(best);
  }
  gpus_per_node = std::min(gpus_per_node, kMaxGpusPerNode);
  set.gpus_per_node = gpus_per_node;
}

}  // namespace gantt::jobs
