#include <algorithm>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include <gpuhook/capture.h>
#include <gpuhook/summary_file.h>
#include <gpuhook/version.h>

#include "commands.h"

namespace {

// Edits between a and b (insert, delete, substitute): how far a typo is from a name.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// The subcommand a mistyped word was meant to be: the nearest within two edits, or a name it
// starts.
std::string nearest(const std::string& word, const std::vector<std::string>& names) {
  std::string best;
  size_t best_d = 3;
  for (const std::string& n : names) {
    const size_t d = n.rfind(word, 0) == 0 && word.size() >= 2 ? 0 : edit_distance(word, n);
    if (d < best_d) best_d = d, best = n;
  }
  return best;
}

}  // namespace

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
      "Wherever a capture is read, a torch.profiler/Kineto trace (rank0.pt.trace.json, or .json.gz) or an\n"
      "Nsight Systems SQLite export (nsys export --type sqlite) is read as one, told by its content:\n"
      "  gantt-cli render rank0.pt.trace.json.gz -o g.png\n"
      "  gantt-cli diff before.pt.trace.json.gz after.pt.trace.json.gz\n"
      "\n"
      "Exit codes: 0 success, 1 a check failed (diff, diagnose --fail-on), 2 usage or input error,\n"
      "3 record: the program succeeded but nothing was recorded (the reason is printed).\n"
      "'gantt-cli SUBCOMMAND --help' (or 'gantt-cli help SUBCOMMAND') explains each one with examples;\n"
      "'gantt-cli version' or --version prints the version.\n",
      "gantt-cli"};
  app.set_version_flag("--version", std::string("gantt-cli ") + GPUHOOK_VERSION);
  app.require_subcommand(1);

  int exit_code = gantt_cli::kExitOk;
  // `gantt-cli --help` lists each subcommand with its one line from the table; its own --help
  // shows the whole description, with examples, after the options.
  std::vector<std::string> names;
  for (const gantt_cli::Subcommand& s : gantt_cli::kSubcommands) {
    s.add(app, exit_code);
    CLI::App* sub = app.get_subcommand(s.name);
    sub->footer(sub->get_description() + "\nThe whole page: " + s.doc + " (installed under share/doc/gpuhook/).\n");
    sub->description(s.summary);
    sub->set_version_flag("--version", std::string("gantt-cli ") + GPUHOOK_VERSION);
    names.emplace_back(s.name);
  }
  gantt_cli::register_generate(app, exit_code);
  // `gantt-cli version` and `gantt-cli help [SUBCOMMAND]`, as people type them.
  if (argc >= 2 && std::string(argv[1]) == "version") {
    std::cout << "gantt-cli " << GPUHOOK_VERSION << "\n";
    return gantt_cli::kExitOk;
  }
  if (argc >= 2 && std::string(argv[1]) == "help") {
    if (argc == 2) {
      std::cout << app.help();
      return gantt_cli::kExitOk;
    }
    for (const std::string& n : names)
      if (n == argv[2]) {
        std::cout << app.get_subcommand(n)->help();
        return gantt_cli::kExitOk;
      }
    std::cerr << "gantt-cli: help: no subcommand '" << argv[2] << "'\n";
    return gantt_cli::kExitError;
  }
  if (argc >= 2 && argv[1][0] != '-' && std::find(names.begin(), names.end(), argv[1]) == names.end() &&
      std::string(argv[1]) != "generate") {
    const std::string guess = nearest(argv[1], names);
    std::cerr << "gantt-cli: no subcommand '" << argv[1] << "'";
    if (!guess.empty()) std::cerr << "; did you mean '" << guess << "'?";
    std::cerr << " (subcommands:";
    for (const std::string& n : names) std::cerr << " " << n;
    std::cerr << ")\n";
    return gantt_cli::kExitError;
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
      std::cerr << "; it is a stats summary (.gsum): only `gantt-cli stats`, `gantt-cli diff` and `gantt-cli diagnose` read summaries";
    std::cerr << "\n";
    return gantt_cli::kExitError;
  } catch (const std::exception& e) {
    std::cerr << "gantt-cli: " << e.what() << "\n";
    return gantt_cli::kExitError;
  }
  return exit_code;
}
