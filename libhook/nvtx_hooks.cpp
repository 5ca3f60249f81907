// NVTX injection: InitializeInjectionNvtx2 writes our functions into NVTX's core tables, so
// pushes, pops, start/end, marks and the domain calls of every thread arrive here.
//
// Domains, as NVTX defines them (nvtx3/nvToolsExt.h and nvtx3/nvtx3.hpp of CUDA 13.0):
// - The null handle is the global domain, the one the core calls use: "all events are scoped
//   to a global domain where NULL is provided" (nvToolsExt.h:1544-1545); "nvtxDomainMarkEx(NULL,
//   event) is equivalent to calling nvtxMarkEx(event)" (706-707). nvtx3::scoped_range is
//   scoped_range_in<domain::global> (nvtx3.hpp:2187), which pushes with
//   nvtxDomainRangePushEx(domain::get<D>(), ...) and pops with nvtxDomainRangePop(domain::get<D>())
//   (2120, 2178); domain::get<domain::global>() is a default-constructed domain (982-985) whose
//   handle is value-initialised, i.e. null (946, 965). So a domain call with the null handle
//   shares the core calls' stack, their levels and the capture window.
// - "Nesting is maintained per thread per domain" (nvToolsExt.h:64-65); "Each domain maintains
//   its own nvtxRangePush and nvtxRangePop stack" (1564): one depth per thread per named domain.
// - Push returns the 0-based level started, pop the level ended; "If an error occurs a
//   negative value is returned" (979, 1042): a pop of an empty stack answers -1 and records
//   nothing, so a capture never holds a pop without its push.
// - nvtxDomainDestroy "frees all domain specific resources" (1604). The handle goes back to a
//   free list for the next nvtxDomainCreate; records carry the domain's InternedName
//   (nvtx_names.h), which lives as long as the process, so a record drained after the destroy
//   still names its domain, and 100,000 create/destroy cycles cost no memory per cycle.
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>

#include <gpuhook/v1/capture.pb.h>
#include "clock.h"
#include "nvtx_names.h"
#include "nvtx_range_window.h"
#include "recorder.h"

namespace gpuhook::hook {

// Depth of this thread's stack in each named domain that has had a push on it. Entries at
// depth 0 are reused; the table grows (an allocation, off the steady state) only when more
// domains than it holds have ranges open on this thread at once.
struct DomainDepth {
  const InternedName* domain;
  int32_t depth;
};
struct DomainStacks {
  uint32_t capacity;
  DomainDepth* entry;  // `capacity` entries, in the same allocation, right after this header
};

namespace {

struct DomainHandle {
  std::atomic<const InternedName*> name;  // read on the app's threads while others may create
  bool live;                              // guarded by g_free_domains_mutex: a second destroy is ignored
  DomainHandle* next_free;
  DomainHandle* next_all;  // every handle ever made, so none is lost (they are reused, never freed)
};

std::mutex g_free_domains_mutex;  // domain create/destroy only; nothing is called under it
DomainHandle* g_free_domains = nullptr;
DomainHandle* g_all_domains = nullptr;  // guarded by g_free_domains_mutex

std::atomic<uint64_t> g_next_range_id{1};

constexpr uint32_t kFirstDomainSlots = 8;
// Beyond this many domains open at once on one thread (ranges left open in destroyed domains
// pile up here) a push is recorded but its depth is not tracked: NVTX's "no tracking" answer.
constexpr uint32_t kMaxDomainSlots = 1024;

pthread_key_t g_stacks_key;
pthread_once_t g_stacks_once = PTHREAD_ONCE_INIT;

void free_stacks(void* p) {
  if (t_state.domains == p) t_state.domains = nullptr;
  std::free(p);
}
void make_stacks_key() { pthread_key_create(&g_stacks_key, free_stacks); }

// This thread's depth in domain d; with `create`, a slot for it (nullptr when none can be had).
int32_t* domain_depth(const InternedName* d, bool create) {
  DomainStacks* t = t_state.domains;
  DomainDepth* unused = nullptr;
  if (t != nullptr) {
    for (uint32_t i = 0; i < t->capacity; ++i) {
      DomainDepth& e = t->entry[i];
      if (e.domain == d) return &e.depth;
      if (unused == nullptr && e.depth == 0) unused = &e;
    }
  }
  if (!create) return nullptr;
  if (unused != nullptr) {
    unused->domain = d;
    return &unused->depth;
  }
  uint32_t old_capacity = t != nullptr ? t->capacity : 0;
  uint32_t capacity = t != nullptr ? old_capacity * 2 : kFirstDomainSlots;
  if (capacity > kMaxDomainSlots) return nullptr;
  auto* grown = static_cast<DomainStacks*>(std::calloc(1, sizeof(DomainStacks) + capacity * sizeof(DomainDepth)));
  if (grown == nullptr) return nullptr;
  grown->capacity = capacity;
  grown->entry = reinterpret_cast<DomainDepth*>(grown + 1);
  if (t != nullptr) std::memcpy(grown->entry, t->entry, old_capacity * sizeof(DomainDepth));
  std::free(t);
  t_state.domains = grown;
  pthread_once(&g_stacks_once, make_stacks_key);
  pthread_setspecific(g_stacks_key, grown);  // freed at thread exit
  grown->entry[old_capacity].domain = d;
  return &grown->entry[old_capacity].depth;
}

const InternedName* domain_name(nvtxDomainHandle_t d) {
  if (d == nullptr) return nullptr;
  return reinterpret_cast<const DomainHandle*>(d)->name.load(std::memory_order_relaxed);
}

nvtxDomainHandle_t new_domain(const InternedName* name) {
  DomainHandle* h = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_free_domains_mutex);
    h = g_free_domains;
    if (h != nullptr) {
      g_free_domains = h->next_free;
      h->next_free = nullptr;
      h->live = true;
    }
  }
  if (h == nullptr) {
    h = new (std::nothrow) DomainHandle{{nullptr}, true, nullptr, nullptr};
    if (h == nullptr) return nullptr;  // NVTX takes a null handle as the global domain; the app runs on
    std::lock_guard<std::mutex> lock(g_free_domains_mutex);
    h->next_all = g_all_domains;
    g_all_domains = h;
  }
  h->name.store(name, std::memory_order_relaxed);
  return reinterpret_cast<nvtxDomainHandle_t>(h);
}

// A range's name as the hook received it: `text` is NUL-terminated (the capture window
// compares it); `bytes` is what is kept, at most kMaxNameBytes.
struct Name {
  const char* text = nullptr;
  const InternedName* registered = nullptr;
  size_t bytes = 0;
  bool cut = false;
};

[[gnu::always_inline]] inline Name ascii_name(const char* s) {
  Name n;
  if (s == nullptr) return n;
  n.text = s;
  n.bytes = strnlen(s, kMaxNameBytes + 1);  // a 100 KB name is not measured to its end
  if (n.bytes > kMaxNameBytes) {
    n.bytes = utf8_prefix(s, kMaxNameBytes);
    n.cut = true;
  }
  return n;
}

// Wide names are converted on the stack: no allocation, and no 4 KiB frame on the paths of
// narrow names (hence noinline).
template <typename F>
__attribute__((noinline)) auto with_wide_name(const wchar_t* w, F&& f) {
  char buf[kMaxNameBytes + 8];
  bool cut = false;
  Name n;
  n.text = buf;
  n.bytes = utf8_from_wide(w, buf, sizeof(buf), &cut);
  n.cut = cut;
  if (n.bytes > kMaxNameBytes) {
    n.bytes = utf8_prefix(buf, kMaxNameBytes);
    n.cut = true;
  }
  return f(n);
}

template <typename F>
auto with_name(const nvtxEventAttributes_t* a, F&& f) {
  if (a != nullptr && a->messageType == NVTX_MESSAGE_TYPE_UNICODE && a->message.unicode != nullptr) {
    return with_wide_name(a->message.unicode, f);
  }
  Name n;
  if (a != nullptr && a->messageType == NVTX_MESSAGE_TYPE_ASCII) {
    n = ascii_name(a->message.ascii);
  } else if (a != nullptr && a->messageType == NVTX_MESSAGE_TYPE_REGISTERED && a->message.registered != nullptr) {
    n.registered = reinterpret_cast<const InternedName*>(a->message.registered);
    n.text = n.registered->text;
  }
  return f(n);
}

struct Attributes {
  uint32_t color = 0;     // ARGB, 0 = none
  uint32_t category = 0;
};
Attributes attributes(const nvtxEventAttributes_t* a) {
  Attributes out;
  if (a == nullptr) return out;
  out.category = a->category;
  if (a->colorType == NVTX_COLOR_ARGB) out.color = a->color;
  return out;
}

// One record, and the continuation records of a name longer than the record holds. Inlined
// into every entry point, as are the helpers below: measured with callgrind, calls passing
// a Name and eight arguments cost a push+pop about 25% more instructions than one flat body.
[[gnu::always_inline]] inline void write_range(HostKind kind, v1::RangeType type, const InternedName* domain, const Name& name, Attributes attr,
                 uint64_t range_id, uint8_t source, uint64_t thread_id) {
  int saved_errno = errno;
  RangeEvent e;
  e.kind = kind;
  e.type = static_cast<uint8_t>(type);
  e.source = source;
  e.domain = domain;
  e.registered = name.registered;
  e.name = name.text;
  e.name_bytes = name.bytes;
  e.name_cut = name.cut;
  e.color = attr.color;
  e.category = attr.category;
  e.range_id = range_id;
  e.thread_id = thread_id;
  e.time_ns = now_ns();
  write_range_event(e);
  errno = saved_errno;
}

[[gnu::always_inline]] inline void write_event(v1::RangeType type, const InternedName* domain, const Name& name, Attributes attr,
                 uint64_t range_id = 0, uint8_t source = 0) {
  write_range(HostKind::kRange, type, domain, name, attr, range_id, source, this_thread_id());
}

// --- the global domain: core calls and domain calls with the null handle ---
[[gnu::always_inline]] inline int global_push(const Name& name, Attributes attr, uint8_t source = 0) {
  nvtx_window_push(name.text, t_state.nvtx_depth);
  write_event(v1::RANGE_PUSH, nullptr, name, attr, 0, source);
  return t_state.nvtx_depth++;
}
[[gnu::always_inline]] inline int global_pop(uint8_t source = 0) {
  if (t_state.nvtx_depth == 0) return -1;  // NVTX's answer to a pop without a push
  write_event(v1::RANGE_POP, nullptr, Name{}, Attributes{}, 0, source);
  nvtx_window_pop(--t_state.nvtx_depth);
  return t_state.nvtx_depth;
}
nvtxRangeId_t start_range(const InternedName* domain, const Name& name, Attributes attr) {
  uint64_t id = g_next_range_id.fetch_add(1, std::memory_order_relaxed);
  write_event(v1::RANGE_START, domain, name, attr, id);
  return id;
}

// --- core ---
void NVTX_API mark_a(const char* m) { write_event(v1::RANGE_MARK, nullptr, ascii_name(m), Attributes{}); }
void NVTX_API mark_ex(const nvtxEventAttributes_t* a) {
  with_name(a, [&](const Name& n) { write_event(v1::RANGE_MARK, nullptr, n, attributes(a)); });
}
void NVTX_API mark_w(const wchar_t* m) {
  with_wide_name(m, [&](const Name& n) { write_event(v1::RANGE_MARK, nullptr, n, Attributes{}); });
}
nvtxRangeId_t NVTX_API start_a(const char* m) { return start_range(nullptr, ascii_name(m), Attributes{}); }
nvtxRangeId_t NVTX_API start_ex(const nvtxEventAttributes_t* a) {
  return with_name(a, [&](const Name& n) { return start_range(nullptr, n, attributes(a)); });
}
nvtxRangeId_t NVTX_API start_w(const wchar_t* m) {
  return with_wide_name(m, [&](const Name& n) { return start_range(nullptr, n, Attributes{}); });
}
void NVTX_API range_end(nvtxRangeId_t id) { write_event(v1::RANGE_END, nullptr, Name{}, Attributes{}, id); }

int NVTX_API push_a(const char* m) { return global_push(ascii_name(m), Attributes{}); }
int NVTX_API push_ex(const nvtxEventAttributes_t* a) {
  return with_name(a, [&](const Name& n) { return global_push(n, attributes(a)); });
}
int NVTX_API push_w(const wchar_t* m) {
  return with_wide_name(m, [&](const Name& n) { return global_push(n, Attributes{}); });
}
int NVTX_API pop() { return global_pop(); }

// nvtxNameOsThread: the name of a thread, for the thread lanes of the chart.
void name_thread(uint32_t thread_id, const Name& name) {
  if (name.text == nullptr) return;
  write_range(HostKind::kThreadName, v1::RANGE_MARK, nullptr, name, Attributes{}, 0, 0, thread_id);
}
void NVTX_API name_os_thread_a(uint32_t thread_id, const char* name) { name_thread(thread_id, ascii_name(name)); }
void NVTX_API name_os_thread_w(uint32_t thread_id, const wchar_t* name) {
  if (name == nullptr) return;
  with_wide_name(name, [&](const Name& n) { name_thread(thread_id, n); });
}

// --- core2 (domains) ---
// Creation and destruction take a lock and may allocate (not range paths); errno is kept.
template <typename S>
nvtxDomainHandle_t create_domain(S name) {
  int saved_errno = errno;
  nvtxDomainHandle_t h = new_domain(intern_name(name));
  errno = saved_errno;
  return h;
}
nvtxDomainHandle_t NVTX_API domain_create_a(const char* name) { return create_domain(name); }
nvtxDomainHandle_t NVTX_API domain_create_w(const wchar_t* name) { return create_domain(name); }
void NVTX_API domain_destroy(nvtxDomainHandle_t d) {
  if (d == nullptr) return;  // the global domain is never destroyed
  auto* h = reinterpret_cast<DomainHandle*>(d);
  std::lock_guard<std::mutex> lock(g_free_domains_mutex);
  if (!h->live) return;  // destroyed twice: listing it twice would hand it out twice
  h->live = false;
  h->next_free = g_free_domains;
  g_free_domains = h;
}
// Registered strings are kept for the process's life (interned, one per distinct text), not
// per domain: records in rings may name them after their domain is destroyed.
template <typename S>
nvtxStringHandle_t register_string(S s) {
  int saved_errno = errno;
  auto* name = const_cast<InternedName*>(intern_name(s));
  errno = saved_errno;
  return reinterpret_cast<nvtxStringHandle_t>(name);
}
nvtxStringHandle_t NVTX_API register_string_a(nvtxDomainHandle_t, const char* s) { return register_string(s); }
nvtxStringHandle_t NVTX_API register_string_w(nvtxDomainHandle_t, const wchar_t* s) { return register_string(s); }
void NVTX_API domain_mark_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  with_name(a, [&](const Name& n) { write_event(v1::RANGE_MARK, domain_name(d), n, attributes(a)); });
}
nvtxRangeId_t NVTX_API domain_start_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  return with_name(a, [&](const Name& n) { return start_range(domain_name(d), n, attributes(a)); });
}
void NVTX_API domain_end(nvtxDomainHandle_t d, nvtxRangeId_t id) {
  write_event(v1::RANGE_END, domain_name(d), Name{}, Attributes{}, id);
}
int NVTX_API domain_push_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  return with_name(a, [&](const Name& n) {
    if (d == nullptr) return global_push(n, attributes(a));
    const InternedName* domain = domain_name(d);
    int32_t* depth = domain_depth(domain, true);
    write_event(v1::RANGE_PUSH, domain, n, attributes(a));
    if (depth == nullptr) return static_cast<int>(NVTX_NO_PUSH_POP_TRACKING);
    return (*depth)++;
  });
}
int NVTX_API domain_pop(nvtxDomainHandle_t d) {
  if (d == nullptr) return global_pop();
  const InternedName* domain = domain_name(d);
  int32_t* depth = domain_depth(domain, false);
  if (depth == nullptr || *depth == 0) return -1;
  write_event(v1::RANGE_POP, domain, Name{}, Attributes{});
  return --*depth;
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

// The gpuhook.h API goes through the same path with source = 1, in the global domain.
void annotate_memory(const void* ptr, const char* category) {
  if (ptr == nullptr || category == nullptr) return;
  write_range(HostKind::kMemoryTag, v1::RANGE_MARK, nullptr, ascii_name(category), Attributes{},
              reinterpret_cast<uintptr_t>(ptr), 1, this_thread_id());
}

void annotate_range(v1::RangeType type, const char* name) {
  if (type == v1::RANGE_PUSH) {
    global_push(ascii_name(name), Attributes{}, 1);
  } else if (type == v1::RANGE_POP) {
    // gpuhook_range_pop of an empty stack is still recorded (the CLI counts it as unbalanced).
    if (global_pop(1) < 0) write_event(v1::RANGE_POP, nullptr, Name{}, Attributes{}, 0, 1);
  } else {
    write_event(type, nullptr, ascii_name(name), Attributes{}, 0, 1);
  }
}

}  // namespace gpuhook::hook
