// How ModelBuilder reads a record's values, for the readers that fold a capture without
// building a model (analysis/stream_stats.cpp, render/stream_read.cpp): they must read every
// time and external id as the loader does, or a streamed chart and a loaded one differ.
#pragma once

#include <cstdint>

namespace gantt::builder {

// A recorded time, or 0 when it is absent or not positive.
inline uint64_t t(bool has, int64_t v) { return has && v > 0 ? static_cast<uint64_t>(v) : 0; }
// The same of a time in a record's plain form (gpuhook::KernelFields), where 0 is unknown.
inline uint64_t known(int64_t v) { return t(v != 0, v); }

// CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2 (cupti_activity.h): the kind the hook pushes its
// NCCL ids under; ids of other kinds belong to other tools (kineto uses CUSTOM0/1).
constexpr uint32_t kHookExternalKind = 5;

}  // namespace gantt::builder
