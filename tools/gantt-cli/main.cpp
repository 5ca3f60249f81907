#include <exception>
#include <iostream>

#include <gpuhook/capture.h>

#include "commands.h"

int main(int argc, char** argv) {
  CLI::App app{
      "gantt-cli: read gpuhook captures (.gpuh), draw them as Gantt charts, compare and diagnose them.\n"
      "\n"
      "  LD_PRELOAD=libgpuhook.so ./app      # writes gpuhook-<host>-<pid>.gpuh\n"
      "  gantt-cli info app.gpuh             # what is in it, is it intact\n",
      "gantt-cli"};
  app.set_version_flag("--version", std::string("gantt-cli ") + GPUHOOK_VERSION);
  app.require_subcommand(1);

  int exit_code = gantt_cli::kExitOk;
  gantt_cli::register_info(app, exit_code);
  gantt_cli::register_dump(app, exit_code);
  gantt_cli::register_record(app, exit_code);
  gantt_cli::register_stats(app, exit_code);
  gantt_cli::register_diff(app, exit_code);
  gantt_cli::register_diagnose(app, exit_code);
  gantt_cli::register_export(app, exit_code);
  gantt_cli::register_render(app, exit_code);
  gantt_cli::register_merge(app, exit_code);

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
    std::cerr << "gantt-cli: " << e.file() << ": byte " << e.offset() << ": " << e.what() << "\n";
    return gantt_cli::kExitError;
  } catch (const std::exception& e) {
    std::cerr << "gantt-cli: " << e.what() << "\n";
    return gantt_cli::kExitError;
  }
  return exit_code;
}
