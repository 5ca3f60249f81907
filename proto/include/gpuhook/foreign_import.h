// Another tool's trace read as a capture. libgantt's scan part (torch.profiler/Kineto JSON,
// Nsight Systems SQLite) sets the importer; CaptureReader calls it for a file whose first bytes
// are not a capture's, so every reader of captures reads those files too.
#pragma once

#include <string>
#include <string_view>

namespace gpuhook {

// Given the file's path, an open descriptor and its first bytes (`head`, up to 64): a
// descriptor of an equivalent capture, which the reader then owns, or -1 when the bytes are
// no format the importer knows. A file of its format that is corrupt throws CaptureError
// naming the file, the offset (or table and row) and what was wrong.
using ForeignImporter = int (*)(const std::string& path, int fd, std::string_view head);

// Set once, before captures are read (gantt-cli's main); nullptr turns it off. `reads` names
// the formats it reads, for the error a file of none of them gets ("a torch.profiler ...").
void set_foreign_importer(ForeignImporter importer, const char* reads = nullptr);

}  // namespace gpuhook
