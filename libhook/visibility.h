// The library is built with -fvisibility=hidden; only the three doors, the interposed NCCL and
// exec functions and the gpuhook.h API are exported (see exports.map).
#pragma once
#define GPUHOOK_EXPORT __attribute__((visibility("default")))
