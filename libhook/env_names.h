// Every environment variable the hook reads: declared in <gpuhook/settings.h> (namespace
// gpuhook::env), shared with `gantt-cli record`, which sets them by the same names.
#pragma once

#include <gpuhook/settings.h>
