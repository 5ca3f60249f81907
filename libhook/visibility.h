// The library is built with -fvisibility=hidden; only the three doors, the interposed NCCL
// functions and the gpuhook.h API are exported (see exports.map).
#pragma once
#define GPUHOOK_EXPORT __attribute__((visibility("default")))
