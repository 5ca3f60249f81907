// NVTX injection: InitializeInjectionNvtx2 writes our functions into NVTX's core tables, so
// pushes, pops, start/end, marks and the domain calls of every thread arrive here. Domain
// and registered-string handles are ours: a NamedHandle whose first member is the name,
// which the writer interns by pointer.
#include <nvtx3/nvToolsExt.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <cwchar>
#include <new>
#include <string>

#include "capture.pb.h"
#include "clock.h"
#include "nvtx_range_window.h"
#include "recorder.h"

namespace gpuhook::hook {
namespace {

struct NamedHandle {
  const char* name;  // must stay first: the writer reads it through the handle pointer
  std::string storage;
  NamedHandle* next;  // every handle stays listed (and reachable) for the process's life
};

std::atomic<NamedHandle*> g_handles{nullptr};

std::atomic<uint64_t> g_next_range_id{1};

NamedHandle* make_handle(const char* s) noexcept {
  try {
    auto* h = new NamedHandle{nullptr, std::string(s != nullptr ? s : ""), nullptr};
    h->name = h->storage.c_str();
    NamedHandle* head = g_handles.load(std::memory_order_relaxed);
    do {
      h->next = head;
    } while (!g_handles.compare_exchange_weak(head, h, std::memory_order_release, std::memory_order_relaxed));
    return h;
  } catch (...) {
    return nullptr;  // NVTX treats a null handle as "no name"; the app runs on
  }
}

std::string narrow(const wchar_t* w) noexcept;

NamedHandle* make_handle(const wchar_t* s) noexcept {
  try {
    return make_handle(narrow(s).c_str());
  } catch (...) {
    return nullptr;
  }
}

// Wide NVTX strings are rare; converting allocates, and a failed allocation gives "".
std::string narrow(const wchar_t* w) noexcept try {
  std::string out;
  if (w == nullptr) return out;
  std::mbstate_t state{};
  char buf[MB_LEN_MAX];
  for (; *w != L'\0'; ++w) {
    size_t n = std::wcrtomb(buf, *w, &state);
    if (n == static_cast<size_t>(-1)) out += '?';
    else out.append(buf, n);
  }
  return out;
} catch (...) {
  return std::string();
}

void copy_name(RangePayload& p, const char* s, size_t n) {
  p.name_truncated = n > kInlineNameBytes;
  if (n > kInlineNameBytes) n = kInlineNameBytes;
  std::memcpy(p.name, s, n);
  p.name_bytes = static_cast<uint8_t>(n);
}

// One range event. `attr` may be null (A variants pass the message only).
void record_range(v1::RangeType type, const void* domain, const nvtxEventAttributes_t* attr, const char* message,
                  uint64_t range_id, uint8_t source = 0) {
  int saved_errno = errno;
  uint64_t t = now_ns();
  HostRecord* r = begin_record();
  if (r != nullptr) {
    r->kind = HostKind::kRange;
    r->thread_id = this_thread_id();
    r->start_ns = t;
    r->end_ns = 0;
    RangePayload& p = r->range;
    p.domain = domain;
    p.registered_name = nullptr;
    p.range_id = range_id;
    p.color = 0;
    p.category = 0;
    p.type = static_cast<uint8_t>(type);
    p.source = source;
    p.name_bytes = 0;
    p.name_truncated = 0;
    if (attr != nullptr) {
      p.category = attr->category;
      if (attr->colorType == NVTX_COLOR_ARGB) p.color = attr->color;
      switch (attr->messageType) {
        case NVTX_MESSAGE_TYPE_ASCII:
          if (attr->message.ascii != nullptr) copy_name(p, attr->message.ascii, std::strlen(attr->message.ascii));
          break;
        case NVTX_MESSAGE_TYPE_REGISTERED:
          p.registered_name = attr->message.registered;
          break;
        case NVTX_MESSAGE_TYPE_UNICODE: {
          // Rare: converting allocates, which the hot path otherwise never does.
          std::string s = narrow(attr->message.unicode);
          copy_name(p, s.data(), s.size());
          break;
        }
        default: break;
      }
    } else if (message != nullptr) {
      copy_name(p, message, std::strlen(message));
    }
    end_record();
  }
  errno = saved_errno;
}

const char* attr_ascii(const nvtxEventAttributes_t* a) {
  if (a == nullptr) return nullptr;
  if (a->messageType == NVTX_MESSAGE_TYPE_ASCII) return a->message.ascii;
  if (a->messageType == NVTX_MESSAGE_TYPE_REGISTERED && a->message.registered != nullptr) {
    return reinterpret_cast<const NamedHandle*>(a->message.registered)->name;
  }
  return nullptr;
}

// --- core ---
void NVTX_API mark_a(const char* m) { record_range(v1::RANGE_MARK, nullptr, nullptr, m, 0); }
void NVTX_API mark_ex(const nvtxEventAttributes_t* a) { record_range(v1::RANGE_MARK, nullptr, a, nullptr, 0); }
void NVTX_API mark_w(const wchar_t* m) {
  std::string s = narrow(m);
  record_range(v1::RANGE_MARK, nullptr, nullptr, s.c_str(), 0);
}
nvtxRangeId_t NVTX_API start_a(const char* m) {
  uint64_t id = g_next_range_id.fetch_add(1, std::memory_order_relaxed);
  record_range(v1::RANGE_START, nullptr, nullptr, m, id);
  return id;
}
nvtxRangeId_t NVTX_API start_ex(const nvtxEventAttributes_t* a) {
  uint64_t id = g_next_range_id.fetch_add(1, std::memory_order_relaxed);
  record_range(v1::RANGE_START, nullptr, a, nullptr, id);
  return id;
}
nvtxRangeId_t NVTX_API start_w(const wchar_t* m) {
  std::string s = narrow(m);
  return start_a(s.c_str());
}
void NVTX_API range_end(nvtxRangeId_t id) { record_range(v1::RANGE_END, nullptr, nullptr, nullptr, id); }


int NVTX_API push_a(const char* m) {
  nvtx_window_push(m, t_state.nvtx_depth);
  record_range(v1::RANGE_PUSH, nullptr, nullptr, m, 0);
  return t_state.nvtx_depth++;
}
int NVTX_API push_ex(const nvtxEventAttributes_t* a) {
  nvtx_window_push(attr_ascii(a), t_state.nvtx_depth);
  record_range(v1::RANGE_PUSH, nullptr, a, nullptr, 0);
  return t_state.nvtx_depth++;
}
int NVTX_API push_w(const wchar_t* m) {
  std::string s = narrow(m);
  return push_a(s.c_str());
}
int NVTX_API pop() {
  if (t_state.nvtx_depth == 0) return -1;  // NVTX's answer to a pop without a push
  record_range(v1::RANGE_POP, nullptr, nullptr, nullptr, 0);
  nvtx_window_pop(--t_state.nvtx_depth);
  return t_state.nvtx_depth;
}

// nvtxNameOsThread: the name of a thread, for the thread lanes of the chart.
void NVTX_API name_os_thread_a(uint32_t thread_id, const char* name) {
  if (name == nullptr) return;
  int saved_errno = errno;
  HostRecord* r = begin_record();
  if (r != nullptr) {
    r->kind = HostKind::kThreadName;
    r->thread_id = thread_id;
    r->start_ns = now_ns();
    r->end_ns = 0;
    r->range.domain = nullptr;
    r->range.registered_name = nullptr;
    copy_name(r->range, name, std::strlen(name));
    end_record();
  }
  errno = saved_errno;
}
void NVTX_API name_os_thread_w(uint32_t thread_id, const wchar_t* name) {
  std::string s = narrow(name);
  name_os_thread_a(thread_id, s.c_str());
}

// --- core2 (domains) ---

nvtxDomainHandle_t NVTX_API domain_create_a(const char* name) {
  return reinterpret_cast<nvtxDomainHandle_t>(make_handle(name));
}
nvtxDomainHandle_t NVTX_API domain_create_w(const wchar_t* name) {
  return reinterpret_cast<nvtxDomainHandle_t>(make_handle(name));
}
void NVTX_API domain_destroy(nvtxDomainHandle_t) {
  // Kept: records still in rings may point at it; domains are few.
}
nvtxStringHandle_t NVTX_API register_string_a(nvtxDomainHandle_t, const char* s) {
  return reinterpret_cast<nvtxStringHandle_t>(make_handle(s));
}
nvtxStringHandle_t NVTX_API register_string_w(nvtxDomainHandle_t, const wchar_t* s) {
  return reinterpret_cast<nvtxStringHandle_t>(make_handle(s));
}
void NVTX_API domain_mark_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  record_range(v1::RANGE_MARK, d, a, nullptr, 0);
}
nvtxRangeId_t NVTX_API domain_start_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  uint64_t id = g_next_range_id.fetch_add(1, std::memory_order_relaxed);
  record_range(v1::RANGE_START, d, a, nullptr, id);
  return id;
}
void NVTX_API domain_end(nvtxDomainHandle_t d, nvtxRangeId_t id) {
  record_range(v1::RANGE_END, d, nullptr, nullptr, id);
}
int NVTX_API domain_push_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  record_range(v1::RANGE_PUSH, d, a, nullptr, 0);
  return t_state.domain_depth++;
}
int NVTX_API domain_pop(nvtxDomainHandle_t d) {
  if (t_state.domain_depth == 0) return -1;
  record_range(v1::RANGE_POP, d, nullptr, nullptr, 0);
  return --t_state.domain_depth;
}

template <typename F>
void set_slot(NvtxFunctionTable table, unsigned int size, unsigned int index, F fn) {
  if (table != nullptr && index < size && table[index] != nullptr) {
    *table[index] = reinterpret_cast<NvtxFunctionPointer>(fn);
  }
}

}  // namespace

// Called by InitializeInjectionNvtx2. Returns 1 when the core table was filled.
int install_nvtx(NvtxGetExportTableFunc_t get_export_table) {
  if (get_export_table == nullptr) return 0;
  auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr || callbacks->GetModuleFunctionTable == nullptr) return 0;
  NvtxFunctionTable core = nullptr;
  unsigned int core_size = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &core_size) == 0 || core == nullptr) return 0;
  set_slot(core, core_size, NVTX_CBID_CORE_MarkEx, &mark_ex);
  set_slot(core, core_size, NVTX_CBID_CORE_MarkA, &mark_a);
  set_slot(core, core_size, NVTX_CBID_CORE_MarkW, &mark_w);
  set_slot(core, core_size, NVTX_CBID_CORE_RangeStartEx, &start_ex);
  set_slot(core, core_size, NVTX_CBID_CORE_RangeStartA, &start_a);
  set_slot(core, core_size, NVTX_CBID_CORE_RangeStartW, &start_w);
  set_slot(core, core_size, NVTX_CBID_CORE_RangeEnd, &range_end);
  set_slot(core, core_size, NVTX_CBID_CORE_RangePushEx, &push_ex);
  set_slot(core, core_size, NVTX_CBID_CORE_RangePushA, &push_a);
  set_slot(core, core_size, NVTX_CBID_CORE_RangePushW, &push_w);
  set_slot(core, core_size, NVTX_CBID_CORE_RangePop, &pop);
  set_slot(core, core_size, NVTX_CBID_CORE_NameOsThreadA, &name_os_thread_a);
  set_slot(core, core_size, NVTX_CBID_CORE_NameOsThreadW, &name_os_thread_w);
  NvtxFunctionTable core2 = nullptr;
  unsigned int core2_size = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &core2_size) != 0 && core2 != nullptr) {
    set_slot(core2, core2_size, NVTX_CBID_CORE2_DomainMarkEx, &domain_mark_ex);
    set_slot(core2, core2_size, NVTX_CBID_CORE2_DomainRangeStartEx, &domain_start_ex);
    set_slot(core2, core2_size, NVTX_CBID_CORE2_DomainRangeEnd, &domain_end);
    set_slot(core2, core2_size, NVTX_CBID_CORE2_DomainRangePushEx, &domain_push_ex);
    set_slot(core2, core2_size, NVTX_CBID_CORE2_DomainRangePop, &domain_pop);
    set_slot(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringA, &register_string_a);
    set_slot(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringW, &register_string_w);
    set_slot(core2, core2_size, NVTX_CBID_CORE2_DomainCreateA, &domain_create_a);
    set_slot(core2, core2_size, NVTX_CBID_CORE2_DomainCreateW, &domain_create_w);
    set_slot(core2, core2_size, NVTX_CBID_CORE2_DomainDestroy, &domain_destroy);
  }
  return 1;
}

// The gpuhook.h API goes through the same path with source = 1.
void annotate_range(v1::RangeType type, const char* name) {
  if (type == v1::RANGE_PUSH) nvtx_window_push(name, t_state.nvtx_depth);
  record_range(type, nullptr, nullptr, name, 0, 1);
  if (type == v1::RANGE_PUSH) ++t_state.nvtx_depth;
  if (type == v1::RANGE_POP && t_state.nvtx_depth > 0) nvtx_window_pop(--t_state.nvtx_depth);
}

}  // namespace gpuhook::hook
