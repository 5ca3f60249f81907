#include <exception>
#include <iostream>

#include <gpuhook/capture.h>
#include <gpuhook/summary_file.h>
#include <gpuhook/version.h>

#include "commands.h"

int main(int argc, char** argv) {
  CLI::App app{
      "gantt-cli: read gpuhook captures (.gpuh), draw them as Gantt charts, compare and diagnose them.\n"
      "\n"
      "  gantt-cli record -o app-%p.gpuh -- ./app   # or: LD_PRELOAD=libgpuhook.so ./app\n"
      "  gantt-cli render app-1234.gpuh -o gantt.png # also .svg, .pdf\n"
      "  gantt-cli stats app-1234.gpuh               # where the GPU time goes\n"
      "  gantt-cli diagnose app-1234.gpuh            # the classic scheduling mistakes, with the fix\n"
      "  gantt-cli diff before.gpuh after.gpuh       # exit 1 on a real regression: a CI gate\n"
      "\n"
      "Exit codes: 0 success, 1 a check failed (diff, diagnose --fail-on), 2 usage or input error.\n"
      "'gantt-cli SUBCOMMAND --help' explains each one with examples.\n",
      "gantt-cli"};
  app.set_version_flag("--version", std::string("gantt-cli ") + GPUHOOK_VERSION);
  app.require_subcommand(1);

  int exit_code = gantt_cli::kExitOk;
  gantt_cli::register_record(app, exit_code);
  gantt_cli::register_info(app, exit_code);
  gantt_cli::register_dump(app, exit_code);
  gantt_cli::register_render(app, exit_code);
  gantt_cli::register_stats(app, exit_code);
  gantt_cli::register_diff(app, exit_code);
  gantt_cli::register_diagnose(app, exit_code);
  gantt_cli::register_export(app, exit_code);
  gantt_cli::register_merge(app, exit_code);

  // `gantt-cli --help` lists each subcommand with one line; its own --help shows the whole
  // description, with examples, after the options.
  const std::pair<const char*, const char*> kSummaries[] = {
      {"record", "run a command under libgpuhook.so and say where the capture went"},
      {"info", "what a capture holds and whether it is intact"},
      {"dump", "every record as one stable line"},
      {"render", "draw captures as a Gantt chart or flame graph (SVG, PNG, PDF)"},
      {"stats", "per kernel, stream, device, range or collective: counts, times, stages, busy %"},
      {"diff", "compare two runs, noise-aware; exit 1 on a regression"},
      {"diagnose", "the classic scheduling mistakes, with evidence and the fix"},
      {"export", "Chrome trace JSON (Perfetto), CSV, folded stacks"},
      {"merge", "the captures of a multi-rank job as one capture on one clock"},
  };
  for (const auto& [name, summary] : kSummaries) {
    CLI::App* sub = app.get_subcommand(name);
    sub->footer(sub->get_description());
    sub->description(summary);
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return gantt_cli::kExitError;
  } catch (const gpuhook::CaptureError& e) {
    std::cerr << "gantt-cli: " << e.file() << ": byte " << e.offset() << ": " << e.what();
    // A summary where a capture was wanted: say what it is and who reads it.
    if (e.kind() == gpuhook::CaptureErrorKind::kNotACapture && gpuhook::is_summary_file(e.file()))
      std::cerr << "; it is a stats summary (.gsum), which only `gantt-cli stats` reads";
    std::cerr << "\n";
    return gantt_cli::kExitError;
  } catch (const std::exception& e) {
    std::cerr << "gantt-cli: " << e.what() << "\n";
    return gantt_cli::kExitError;
  }
  return exit_code;
}
