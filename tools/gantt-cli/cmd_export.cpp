// gantt-cli export FILE... --format FORMAT -o OUT: the events in other tools' formats.
// Each format is an Exporter in libgantt (export_<format>.cpp); this file only wires options.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <gantt/export/export.h>
#include <gantt/export/gzip_output.h>
#include <gantt/model/text.h>

#include "commands.h"
#include "filter_flags.h"
#include "load_captures.h"

namespace gantt_cli {

namespace {

struct ExportOptions {
  std::vector<std::string> files;
  LoadFlags load;
  uint64_t max_output = 0;  // --max-output; 0: kOutputPerInputByte times the captures' bytes
  std::string format = "csv";
  std::string output = "-";
  FilterFlags filter;
  std::string root = "none";  // folded: rank | device | none
  unsigned threads = 0;       // threads that scan one capture; 0 = every core
};

// An export is one line or object an event, a few hundred bytes, so its size follows the
// records, not the file: a 254 KB capture of 1.6 M alike records (within 8 a byte) once made a
// 1.1 GB Chrome trace. Real captures export to 20 to 150 bytes a byte of file (gpuhook_synth's,
// ranks_gen_job's); past this many, --max-output says how much more to write.
constexpr uint64_t kOutputPerInputByte = 512;
constexpr uint64_t kMinOutputLimit = 64ull << 20;

// Passes bytes on to `to` until `limit` have gone, then fails the stream: with badbit among
// its exceptions the exporter stops there, rather than format every event for nothing.
class LimitedBuf : public std::streambuf {
 public:
  LimitedBuf(std::streambuf* to, uint64_t limit) : to_(to), left_(limit) {}
  bool over() const { return over_; }

 protected:
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    const char ch = traits_type::to_char_type(c);
    return xsputn(&ch, 1) == 1 ? c : traits_type::eof();
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    if (over_ || static_cast<uint64_t>(n) > left_) {
      over_ = true;
      return 0;
    }
    left_ -= static_cast<uint64_t>(n);
    return to_->sputn(s, n);
  }
  int sync() override { return to_->pubsync(); }

 private:
  std::streambuf* to_;
  uint64_t left_;
  bool over_ = false;
};

uint64_t output_limit(const ExportOptions& o) {
  if (o.max_output) return o.max_output;
  uint64_t input = 0;
  for (const std::string& f : o.files) {
    struct stat st {};
    if (f != "-" && ::stat(f.c_str(), &st) == 0) input += static_cast<uint64_t>(st.st_size);
  }
  return std::max(kMinOutputLimit, input > UINT64_MAX / kOutputPerInputByte ? UINT64_MAX : input * kOutputPerInputByte);
}

// The output: stdout or the file, through gzip when its name ends in .gz, at most `limit`
// bytes before compression. Opened when the first byte is ready.
class Output {
 public:
  Output(const std::string& name, uint64_t limit) : name_(name), limit_(limit) {}
  // Throws std::runtime_error when the file cannot be created.
  std::ostream& open() {
    if (out_) return *out_;
    std::streambuf* to = std::cout.rdbuf();
    if (name_ != "-") {
      file_.open(name_, std::ios::binary | std::ios::trunc);
      if (!file_) throw std::runtime_error("cannot write " + name_);
      to = file_.rdbuf();
    }
    if (gantt::wants_gzip(name_)) {
      gzip_ = std::make_unique<gantt::GzipBuf>(to, kGzipLevel);
      to = gzip_.get();
    }
    limited_ = std::make_unique<LimitedBuf>(to, limit_);
    out_ = std::make_unique<std::ostream>(limited_.get());
    out_->exceptions(std::ios::badbit);  // past the limit the exporter stops there
    return *out_;
  }
  bool over() const { return limited_ && limited_->over(); }
  // False when writing failed; an output over the limit is removed.
  bool close() {
    if (!out_) return true;
    out_->exceptions(std::ios::goodbit);
    out_->flush();
    bool ok = static_cast<bool>(*out_);
    if (gzip_) ok = gzip_->finish() && ok;
    if (name_ == "-") return ok;
    file_.close();
    if (over()) std::remove(name_.c_str());
    return ok && static_cast<bool>(file_);
  }
  void remove() {
    if (name_ != "-" && file_.is_open()) {
      file_.close();
      std::remove(name_.c_str());
    }
  }

 private:
  // zlib's fastest level: 1.2 GB of Chrome trace in about 10 s on one core, 9x smaller; the
  // default level (6) took about three times as long for a fifth less.
  static constexpr int kGzipLevel = 1;
  std::string name_;
  uint64_t limit_;
  std::ofstream file_;
  std::unique_ptr<gantt::GzipBuf> gzip_;
  std::unique_ptr<LimitedBuf> limited_;
  std::unique_ptr<std::ostream> out_;
};

// --root as the folded format's StackRoot.
gantt::analysis::StackRoot folded_root(const std::string& root) {
  return root == "rank"     ? gantt::analysis::StackRoot::kRank
         : root == "device" ? gantt::analysis::StackRoot::kDevice
                            : gantt::analysis::StackRoot::kNone;
}

int run_export(const ExportOptions& o) {
  const gantt::Exporter* exporter = gantt::find_exporter(o.format);
  if (!exporter) {
    std::string known;
    for (const auto* e : gantt::exporters()) known += (known.empty() ? "" : ", ") + std::string(e->format());
    std::cerr << "gantt-cli: export: unknown format '" << o.format << "' (known: " << known << ")\n";
    return kExitError;
  }
  if (o.format == "sqlite" && o.output == "-" && isatty(STDOUT_FILENO)) {
    std::cerr << "gantt-cli: export: a SQLite database is binary: pass -o FILE.db (or redirect stdout)\n";
    return kExitError;
  }
  const uint64_t limit = output_limit(o);
  // `cut`: what went before the limit reached stdout (the loaded path writes as it formats;
  // a scan writes nothing until it knows the size).
  const auto over = [&](uint64_t events, bool cut) {
    std::cerr << "gantt-cli: export: the " << o.format << " output is over " << gantt::format_bytes(limit)
              << (o.max_output ? "" : " (" + std::to_string(kOutputPerInputByte) + " bytes a byte of the captures, or 64 MiB)")
              << (events ? " for " + std::to_string(events) + " events" : std::string()) << "; "
              << (o.output != "-" ? o.output + " not written" : cut ? "cut there" : "nothing written")
              << ": --max-output SIZE writes more, or --from/--to, --kernel, --device select less\n";
    return kExitError;
  };
  Output output(o.output, limit);
  // Captures, whole, in a format that can: written as they are scanned (docs/export.md).
  const bool stdin_capture = std::find(o.files.begin(), o.files.end(), "-") != o.files.end();
  const gantt::EventFilter f = make_filter(o.filter);
  if (!o.load.in_memory && !stdin_capture && exporter->scans()) {
    gantt::ScanExportOptions so;
    if (any_filter(o.filter)) so.filter = &f;
    so.folded_root = folded_root(o.root);
    so.load = load_options(o.load);
    so.threads = o.threads;
    so.max_output = limit;
    if (o.output != "-" && !gantt::wants_gzip(o.output)) so.output_path = o.output;
    gantt::ScannedExport done;
    bool scanned = false;
    try {
      scanned = exporter->write_scanned(o.files, so, [&]() -> std::ostream& { return output.open(); }, &done, nullptr);
    } catch (const std::invalid_argument& e) {  // the filter's error, as select_events() gives it loaded
      for (const std::string& w : done.warnings) std::cerr << "gantt-cli: " << w << "\n";  // those read before it
      std::cerr << "gantt-cli: export: " << e.what() << "\n";
      return kExitError;
    }
    if (scanned) {
      for (const std::string& w : done.warnings) std::cerr << "gantt-cli: " << w << "\n";
      if (done.over) return over(0, false);
      if (!output.close()) {
        std::cerr << "gantt-cli: export: writing " << o.output << " failed\n";
        return kExitError;
      }
      return done.corrupt ? kExitError : kExitOk;
    }
    // A capture the scan cannot serve is loaded, within --max-memory, as before.
  }
  gantt::ExportOptions eo;
  eo.folded_root = folded_root(o.root);
  const LoadedJob job = load_captures(o.files, o.load, {"export loads captures whole for standard input, --in-memory, "
                                                        "sqlite or a capture a scan cannot read "
                                                        "(chrome, csv, folded and metrics-csv are scanned)",
                                                        gantt::scan::WholePath::kExport});
  const gantt::Model& model = job.model;
  gantt::Selection sel;
  try {
    sel = gantt::select_events(model, f);
  } catch (const std::invalid_argument& e) {
    std::cerr << "gantt-cli: export: " << e.what() << "\n";
    return kExitError;
  }
  std::ostream& out = output.open();
  try {
    exporter->write(model, sel, eo, out);
  } catch (const std::ios_base::failure&) {
    if (!output.over()) throw;
  }
  const bool within = !output.over();
  if (!output.close()) {
    if (!within) return over(sel.events.size(), true);
    std::cerr << "gantt-cli: export: writing " << o.output << " failed\n";
    return kExitError;
  }
  if (!within) return over(sel.events.size(), true);
  return job.corrupt ? kExitError : kExitOk;
}

}  // namespace

void register_export(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<ExportOptions>();
  std::string formats;
  for (const auto* e : gantt::exporters())
    formats += "\n  " + std::string(e->format()) + ": " + std::string(e->description());
  CLI::App* cmd = app.add_subcommand("export", "Write the events in another format:" + formats +
      "\n\nExamples:\n"
      "  gantt-cli export app.gpuh --format chrome -o app.json     # open in ui.perfetto.dev\n"
      "  gantt-cli export app.gpuh --format chrome -o app.json.gz  # the same, gzipped (any -o name ending in .gz)\n"
      "  gantt-cli export app.gpuh --format csv -o events.csv\n"
      "  gantt-cli export app.gpuh --format folded | flamegraph.pl > flame.svg\n"
      "  gantt-cli export app.gpuh --format sqlite -o app.db       # tables in docs/export.md: kernels, api, nvtx, ...\n"
      "  gantt-cli export rank*.gpuh --format folded --root rank > ranks.folded   # a flame per rank\n"
      "\nFolded stacks weigh each stack by its GPU time in nanoseconds (flamegraph.pl --countname=ns).\n");
  cmd->add_option("files", o->files, "capture files (.gpuh)")->required();
  add_load_flags(*cmd, o->load);
  cmd->add_option("--max-output", o->max_output,
                  "the most the export may write, e.g. 2G; over it the file is removed and one line says so "
                  "(default: 512 bytes a byte of the captures, at least 64 MiB)")
      ->transform(CLI::AsSizeValue(false))
      ->check(CLI::Validator([](std::string& v) -> std::string { return v == "0" ? "0 bytes would write nothing" : ""; }, ""));
  cmd->add_option("-f,--format", o->format, "output format")->capture_default_str();
  cmd->add_option("-o,--output", o->output, "output file, - for stdout")->capture_default_str();
  add_filter_flags(*cmd, o->filter);
  cmd->add_option("-j,--threads", o->threads,
                  "threads that scan one capture's chunks side by side (0 = the CPUs this process may use, at most 16)")
      ->capture_default_str();
  cmd->add_flag("--in-memory", o->load.in_memory,
                "load the captures whole before writing; by default captures are written to chrome, csv, folded or metrics-csv "
                "as they are scanned (several on one clock), the filters applied by the scans, in memory that does "
                "not grow with their events");
  cmd->add_option("--root", o->root, "folded: the frame under every stack: rank (capture), device, or none")
      ->check(CLI::IsMember({"rank", "device", "none"}))
      ->capture_default_str();
  cmd->callback([o, &exit_code] { exit_code = run_export(*o); });
}

}  // namespace gantt_cli
