// Reads a capture with gpuhook::CaptureReader and checks what the hook promises about it.
//   capture_check FILE [--expect KIND=N]... [--min KIND=N]... [--nesting] [--kernels]
//                      [--copies] [--nccl] [--nccl-device] [--nccl-kernels] [--nccl-function NAME=N]...
//                      [--header FIELD=VALUE]... [--allow-truncated]
//                      [--threads] [--sync-returns] [--graph] [--host-functions] [--domain-nesting] [--range-name NAME=N]... [--domain-name NAME=N]...
//                      [--range-color NAME=ARGB]... [--range-category NAME=N]... [--devices N]
// KIND: kernel memcpy memset api sync nccl range memory overhead device footer drops.
// Prints one "kind count" line per kind, then "FAIL: ..." lines; exit 0 when all checks hold.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include <gpuhook/capture.h>

namespace v1 = gpuhook::v1;

namespace {

const std::map<std::string, int> kKinds = {
    {"header", v1::Record::kHeader}, {"device", v1::Record::kDevice},   {"api", v1::Record::kApi},
    {"kernel", v1::Record::kKernel}, {"memcpy", v1::Record::kMemcpy},   {"memset", v1::Record::kMemset},
    {"sync", v1::Record::kSync},     {"nccl", v1::Record::kNccl},       {"range", v1::Record::kRange},
    {"memory", v1::Record::kMemory}, {"overhead", v1::Record::kOverhead}, {"drops", v1::Record::kDrops},
    {"footer", v1::Record::kFooter},  {"thread", v1::Record::kThread}, {"notice", v1::Record::kNotice},
    {"stream", v1::Record::kStream}, {"cuda_event", v1::Record::kCudaEvent},
    {"external_correlation", v1::Record::kExternalCorrelation}, {"host_function", v1::Record::kHostFunction}};

int failures = 0;
void fail(const std::string& what) {
  // The first 20 say what is wrong; a broken capture of 200k kernels need not print them all.
  if (++failures <= 20) std::printf("FAIL: %s\n", what.c_str());
  if (failures == 21) std::printf("FAIL: (more failures not shown)\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: capture_check FILE [checks]\n");
    return 2;
  }
  std::map<std::string, uint64_t> expect, minimum;
  std::map<std::string, std::string> header_expect;
  bool nesting = false, kernels = false, copies = false, nccl = false, allow_truncated = false;
  bool nccl_device = false;  // every collective names its communicator's CUDA device
  // Every successful collective and send/recv carries an external id that CUPTI tied to a
  // kernel launched through the driver (cuLaunchKernelEx), as NCCL launches.
  bool nccl_kernels = false;
  std::map<std::string, uint64_t> nccl_functions;  // NcclCall records per entry-point name
  bool threads = false;      // API records carry Linux tids, the same ids as NVTX/NCCL records
  bool sync_returns = false;  // a Synchronization record says what its API call returned
  bool host_functions = false;  // host functions: on a stream, tied to the call that queued them
  bool graph = false;         // graph kernels: unknown stamps, the launch's correlation id
  bool domain_nesting = false;  // like --nesting, for every domain: one stack per (thread, domain)
  // Several devices: one DeviceInfo and some kernels per device, peer copies name two devices.
  uint64_t devices = 0;
  // Ranges by name: how many push/start/mark records carry it, their colour and category.
  std::map<std::string, uint64_t> name_expect, domain_expect, color_expect, category_expect;
  auto named = [&](std::map<std::string, uint64_t>& m, const std::string& s) {
    size_t eq = s.rfind('=');  // names may hold '=', numbers do not
    m[s.substr(0, eq)] = std::strtoull(s.c_str() + eq + 1, nullptr, 0);
  };
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    auto kv = [&](std::map<std::string, uint64_t>& m) {
      std::string s = argv[++i];
      size_t eq = s.find('=');
      m[s.substr(0, eq)] = std::strtoull(s.c_str() + eq + 1, nullptr, 10);
    };
    if (a == "--expect") kv(expect);
    else if (a == "--min") kv(minimum);
    else if (a == "--nesting") nesting = true;
    else if (a == "--kernels") kernels = true;
    else if (a == "--copies") copies = true;
    else if (a == "--nccl") nccl = true;
    else if (a == "--nccl-device") nccl_device = nccl = true;
    else if (a == "--nccl-kernels") nccl_kernels = true;
    else if (a == "--nccl-function") kv(nccl_functions);
    else if (a == "--allow-truncated") allow_truncated = true;
    else if (a == "--threads") threads = true;
    else if (a == "--sync-returns") sync_returns = true;
    else if (a == "--graph") graph = true;
    else if (a == "--host-functions") host_functions = true;
    else if (a == "--domain-nesting") domain_nesting = true;
    else if (a == "--devices") devices = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--range-name") named(name_expect, argv[++i]);
    else if (a == "--domain-name") named(domain_expect, argv[++i]);
    else if (a == "--range-color") named(color_expect, argv[++i]);
    else if (a == "--range-category") named(category_expect, argv[++i]);
    else if (a == "--header") {
      std::string s = argv[++i];
      size_t eq = s.find('=');
      header_expect[s.substr(0, eq)] = s.substr(eq + 1);
    }
  }

  std::vector<v1::Record> records;
  std::vector<std::string> strings;
  std::map<int, uint64_t> counts;
  try {
    gpuhook::CaptureReader reader(argv[1]);
    v1::Record r;
    while (reader.next(r)) {
      if (r.kind_case() == v1::Record::kStringDef) continue;
      counts[r.kind_case()]++;
      records.push_back(r);
    }
    if (reader.integrity().truncated && !allow_truncated) fail("the file ends inside a frame");
    strings = reader.strings();
  } catch (const gpuhook::CaptureError& e) {
    std::printf("FAIL: %s at byte %llu: %s\n", gpuhook::to_string(e.kind()),
                static_cast<unsigned long long>(e.offset()), e.what());
    return 1;
  }
  for (const auto& [name, kind] : kKinds) std::printf("%s %llu\n", name.c_str(), static_cast<unsigned long long>(counts[kind]));
  std::map<int, uint64_t> dropped;
  for (const auto& r : records) {
    if (r.has_drops()) dropped[r.drops().source()] += r.drops().count();
  }
  std::printf("dropped_ring %llu\ndropped_invalid_time %llu\ndropped_cupti %llu\nclean %d\n",
              static_cast<unsigned long long>(dropped[v1::DROP_RING_FULL]),
              static_cast<unsigned long long>(dropped[v1::DROP_INVALID_TIME]),
              static_cast<unsigned long long>(dropped[v1::DROP_CUPTI]),
              !records.empty() && records.back().has_footer() && records.back().footer().clean() ? 1 : 0);

  // Stream-ordered allocations and frees that name their pool.
  uint64_t memory_async = 0;
  for (const auto& r : records) memory_async += r.has_memory() && r.memory().async() && r.memory().pool_address() != 0;
  std::printf("memory_async %llu\n", static_cast<unsigned long long>(memory_async));

  // Communicators of collectives, sorted: ranks of one job must print the same line.
  std::vector<uint64_t> comms;
  for (const auto& r : records) {
    if (r.has_nccl() && r.nccl().op() >= v1::NCCL_ALL_REDUCE && r.nccl().op() <= v1::NCCL_SCATTER) {
      comms.push_back(r.nccl().comm_id());
    }
  }
  std::sort(comms.begin(), comms.end());
  comms.erase(std::unique(comms.begin(), comms.end()), comms.end());
  std::printf("nccl_comms");
  for (uint64_t c : comms) std::printf(" %016llx", static_cast<unsigned long long>(c));
  std::printf("\n");

  if (records.empty() || !records[0].has_header()) fail("the first record is not a Header");
  for (const auto& [name, n] : expect) {
    if (counts[kKinds.at(name)] != n) fail(name + ": " + std::to_string(counts[kKinds.at(name)]) + " != " + std::to_string(n));
  }
  for (const auto& [name, n] : minimum) {
    if (counts[kKinds.at(name)] < n) fail(name + ": " + std::to_string(counts[kKinds.at(name)]) + " < " + std::to_string(n));
  }
  if (!records.empty() && records[0].has_header()) {
    const v1::Header& h = records[0].header();
    for (const auto& [field, value] : header_expect) {
      std::string got;
      if (field == "host") got = h.host_name();
      else if (field == "boot_id") got = h.boot_id();
      else if (field == "rank") got = h.has_rank() ? std::to_string(h.rank()) : "none";
      else if (field == "simulator") got = (h.features() & v1::FEATURE_SIMULATOR) ? "1" : "0";
      else if (field == "latency") got = (h.features() & v1::FEATURE_LATENCY_TIMESTAMPS) ? "1" : "0";
      else if (field == "pid") got = std::to_string(h.pid());
      else if (field == "note_has") got = h.note().find(value) != std::string::npos ? value : h.note();
      if (got != value) fail("header " + field + " is '" + got + "', want '" + value + "'");
    }
  }

  if (nesting) {
    // Per thread: every pop closes a push, nothing left open, times never go backwards.
    std::unordered_map<uint64_t, int> depth;
    std::unordered_map<uint64_t, int64_t> last_time;
    for (const auto& r : records) {
      if (!r.has_range()) continue;
      const v1::Range& g = r.range();
      if (g.domain_id() != 0) continue;  // domain stacks are separate
      if (g.time_ns() < last_time[g.thread_id()]) fail("range times go backwards on a thread");
      last_time[g.thread_id()] = g.time_ns();
      if (g.type() == v1::RANGE_PUSH) depth[g.thread_id()]++;
      if (g.type() == v1::RANGE_POP && --depth[g.thread_id()] < 0) fail("a pop without a push");
    }
    for (const auto& [tid, d] : depth) {
      if (d != 0) fail("thread " + std::to_string(tid) + " ends with " + std::to_string(d) + " open ranges");
    }
  }

  if (domain_nesting) {
    // NVTX keeps one push/pop stack per thread per domain (nvToolsExt.h:64-65).
    std::map<std::pair<uint64_t, uint32_t>, int> depth;
    for (const auto& r : records) {
      if (!r.has_range()) continue;
      const v1::Range& g = r.range();
      auto key = std::make_pair(g.thread_id(), g.domain_id());
      if (g.type() == v1::RANGE_PUSH) depth[key]++;
      if (g.type() == v1::RANGE_POP && --depth[key] < 0) {
        fail("a pop without a push in domain " + std::to_string(g.domain_id()));
      }
    }
    for (const auto& [key, d] : depth) {
      if (d != 0) fail("domain " + std::to_string(key.second) + " ends with " + std::to_string(d) + " open ranges");
    }
  }

  if (!name_expect.empty() || !domain_expect.empty() || !color_expect.empty() || !category_expect.empty()) {
    auto text = [&](uint32_t id) { return id < strings.size() ? strings[id] : std::string(); };
    std::map<std::string, uint64_t> names, domains;
    for (const auto& r : records) {
      if (!r.has_range() || r.range().type() == v1::RANGE_POP || r.range().type() == v1::RANGE_END) continue;
      const v1::Range& g = r.range();
      const std::string name = text(g.name_id());
      names[name]++;
      if (g.domain_id() != 0) domains[text(g.domain_id())]++;
      auto c = color_expect.find(name);
      if (c != color_expect.end() && g.color() != c->second) {
        fail("range '" + name + "' has colour " + std::to_string(g.color()) + ", want " + std::to_string(c->second));
      }
      auto k = category_expect.find(name);
      if (k != category_expect.end() && g.category() != k->second) {
        fail("range '" + name + "' has category " + std::to_string(g.category()) + ", want " + std::to_string(k->second));
      }
    }
    auto shown = [](const std::string& s) {
      return s.size() <= 80 ? s : s.substr(0, 40) + "...(" + std::to_string(s.size()) + " bytes)..." + s.substr(s.size() - 20);
    };
    for (const auto& [name, n] : name_expect) {
      if (names[name] == n) continue;
      std::string seen;
      for (const auto& [other, m] : names) seen += " '" + shown(other) + "' x" + std::to_string(m);
      fail("range name '" + shown(name) + "': " + std::to_string(names[name]) + " != " + std::to_string(n) + "; names:" + seen);
    }
    for (const auto& [name, n] : domain_expect) {
      if (domains[name] == n) continue;
      std::string seen;
      for (const auto& [other, m] : domains) seen += " '" + shown(other) + "' x" + std::to_string(m);
      fail("domain '" + shown(name) + "': " + std::to_string(domains[name]) + " != " + std::to_string(n) + "; domains:" + seen);
    }
  }

  if (kernels) {
    std::unordered_map<uint32_t, const v1::ApiCall*> api_by_corr;
    for (const auto& r : records) {
      if (r.has_api()) api_by_corr[r.api().correlation_id()] = &r.api();
    }
    uint64_t unknown_submitted = 0;
    // Every launch call got exactly one kernel record: counts match what the program launched.
    uint64_t launches = 0;
    for (const auto& r : records) {
      if (!r.has_api() || r.api().name_id() >= strings.size()) continue;
      const std::string& name = strings[r.api().name_id()];
      if (name.find("LaunchKernel") != std::string::npos || name.find("LaunchCooperativeKernel") != std::string::npos) {
        ++launches;
      }
    }
    if (launches != counts[v1::Record::kKernel]) {
      fail(std::to_string(counts[v1::Record::kKernel]) + " kernels for " + std::to_string(launches) + " launch calls");
    }
    for (const auto& r : records) {
      if (!r.has_kernel()) continue;
      const v1::Kernel& k = r.kernel();
      // submitted may be unknown (0): it is a CPU stamp that can pass the GPU's start.
      const bool submitted_ok = k.submitted_ns() == 0 || (k.queued_ns() <= k.submitted_ns() && k.submitted_ns() <= k.start_ns());
      if (!(k.queued_ns() > 0 && k.queued_ns() <= k.start_ns() && submitted_ok && k.start_ns() <= k.end_ns())) {
        fail("kernel " + std::to_string(k.correlation_id()) + ": not queued <= submitted <= start <= end");
      }
      if (k.submitted_ns() == 0) ++unknown_submitted;
      auto it = api_by_corr.find(k.correlation_id());
      if (it == api_by_corr.end()) fail("kernel " + std::to_string(k.correlation_id()) + " has no API record");
      else if (it->second->start_ns() > k.queued_ns()) fail("kernel queued before its launch call entered");
    }
    std::printf("kernels_unknown_submitted %llu\n", static_cast<unsigned long long>(unknown_submitted));
  }

  if (threads) {
    // CUPTI stamps API records with pthread_self() unless told otherwise (cupti_activity.h,
    // CUpti_ActivityThreadIdType); the capture promises Linux tids, which never exceed pid_max.
    uint64_t pid_max = 4194304;  // PID_MAX_LIMIT on 64-bit Linux
    if (FILE* f = std::fopen("/proc/sys/kernel/pid_max", "r")) {
      unsigned long long v = 0;
      if (std::fscanf(f, "%llu", &v) == 1 && v > 0) pid_max = v;
      std::fclose(f);
    }
    std::unordered_map<uint64_t, int> api_threads;
    for (const auto& r : records) {
      if (!r.has_api()) continue;
      if (r.api().thread_id() == 0 || r.api().thread_id() > pid_max) {
        fail("API record " + std::to_string(r.api().correlation_id()) + " has thread id " +
             std::to_string(r.api().thread_id()) + ", not a Linux tid");
        break;
      }
      api_threads[r.api().thread_id()]++;
    }
    bool ranges = false, shared = false;
    for (const auto& r : records) {
      if (!r.has_range()) continue;
      ranges = true;
      if (api_threads.count(r.range().thread_id())) shared = true;
    }
    if (ranges && !api_threads.empty() && !shared) fail("no NVTX range shares a thread id with an API record");
  }

  if (graph) {
    // CUPTI cannot stamp queued/submitted of graph kernels (CUPTI_TIMESTAMP_UNKNOWN) and gives
    // all kernels of a graph launch that launch's correlation id.
    std::unordered_map<uint32_t, std::string> api_name;
    for (const auto& r : records) {
      if (r.has_api() && r.api().name_id() < strings.size()) api_name[r.api().correlation_id()] = strings[r.api().name_id()];
    }
    uint64_t graph_kernels = 0;
    for (const auto& r : records) {
      if (!r.has_kernel() || r.kernel().graph_id() == 0) continue;
      const v1::Kernel& k = r.kernel();
      ++graph_kernels;
      if (k.queued_ns() != 0 || k.submitted_ns() != 0) fail("graph kernel " + std::to_string(k.correlation_id()) + " has stamps");
      if (k.start_ns() == 0 || k.end_ns() < k.start_ns()) fail("graph kernel " + std::to_string(k.correlation_id()) + " has no start/end");
      auto it = api_name.find(k.correlation_id());
      if (it == api_name.end() || it->second.find("GraphLaunch") == std::string::npos) {
        fail("graph kernel " + std::to_string(k.correlation_id()) + " is not tied to a graph launch");
        break;
      }
    }
    std::printf("graph_kernels %llu\n", static_cast<unsigned long long>(graph_kernels));
  }

  if (host_functions) {
    // Each host function ran on a thread other than the one that queued it (a runtime thread),
    // on a stream the kernels also use, and its external id leads to the enqueueing call.
    std::unordered_map<uint32_t, std::string> api_name;
    for (const auto& r : records) {
      if (r.has_api() && r.api().name_id() < strings.size()) api_name[r.api().correlation_id()] = strings[r.api().name_id()];
    }
    std::unordered_map<uint64_t, uint32_t> corr_of;
    for (const auto& r : records) {
      if (r.has_external_correlation()) corr_of[r.external_correlation().external_id()] = r.external_correlation().correlation_id();
    }
    std::unordered_map<uint32_t, bool> kernel_streams;
    for (const auto& r : records) {
      if (r.has_kernel()) kernel_streams[r.kernel().stream()] = true;
    }
    uint64_t joined = 0;
    for (const auto& r : records) {
      if (!r.has_host_function()) continue;
      const v1::HostFunction& h = r.host_function();
      const std::string what = "host function " + std::to_string(h.external_id());
      if (h.start_ns() == 0 || h.end_ns() < h.start_ns()) fail(what + " has no start/end");
      if (h.thread_id() == 0 || h.thread_id() == h.launch_thread_id()) fail(what + " ran on the thread that queued it");
      if (h.stream() == 0 || !kernel_streams.count(h.stream())) fail(what + " has stream " + std::to_string(h.stream()));
      if (h.name_id() == 0 || h.name_id() >= strings.size()) fail(what + " has no name");
      auto c = corr_of.find(h.external_id());
      auto a = c == corr_of.end() ? api_name.end() : api_name.find(c->second);
      if (a == api_name.end() || (a->second.find("LaunchHostFunc") == std::string::npos &&
                                  a->second.find("StreamAddCallback") == std::string::npos)) {
        fail(what + " is not tied to the call that queued it");
      } else {
        ++joined;
      }
    }
    std::printf("host_functions_joined %llu\n", static_cast<unsigned long long>(joined));
  }

  if (sync_returns) {
    // CUDA 13 writes SYNCHRONIZATION records for cudaEventQuery/cudaStreamQuery too; one for a
    // query that found work pending (CUDA_ERROR_NOT_READY) did not block and must say so.
    std::unordered_map<uint32_t, int32_t> api_return;
    for (const auto& r : records) {
      if (r.has_api()) api_return[r.api().correlation_id()] = r.api().return_value();
    }
    uint64_t pending = 0;
    for (const auto& r : records) {
      if (!r.has_sync()) continue;
      if (r.sync().return_value() == 600) ++pending;
      auto it = api_return.find(r.sync().correlation_id());
      if (it == api_return.end()) continue;
      // cudaErrorNotReady (runtime, 600) and CUDA_ERROR_NOT_READY (driver, 600) agree.
      if (it->second != r.sync().return_value()) {
        fail("sync record " + std::to_string(r.sync().correlation_id()) + " says " +
             std::to_string(r.sync().return_value()) + ", its call returned " + std::to_string(it->second));
        break;
      }
    }
    std::printf("sync_pending %llu\n", static_cast<unsigned long long>(pending));
  }

  if (copies) {
    for (const auto& r : records) {
      if (r.has_memcpy() && (r.memcpy().bytes() == 0 || r.memcpy().copy_kind() == v1::COPY_UNKNOWN)) {
        fail("a memcpy without bytes or direction");
      }
      if (r.has_memset() && r.memset().bytes() == 0) fail("a memset without bytes");
    }
  }

  if (nccl) {
    // Per communicator and rank: collective sequence numbers are 0,1,2,..., and so are the
    // send/recv numbers, counted apart (p2p_sequence).
    std::map<std::pair<uint64_t, int32_t>, std::vector<uint64_t>> seqs, p2p_seqs;
    for (const auto& r : records) {
      if (!r.has_nccl()) continue;
      const v1::NcclCall& n = r.nccl();
      if (n.start_ns() <= 0 || n.end_ns() < n.start_ns()) fail("an NCCL call without enter <= exit");
      if (n.op() >= v1::NCCL_ALL_REDUCE && n.op() <= v1::NCCL_SCATTER) {
        if (n.comm_id() == 0) fail("a collective without a communicator id");
        if (nccl_device && n.device() < 0) fail("a collective without its communicator's device");
        const bool p2p = n.op() == v1::NCCL_SEND || n.op() == v1::NCCL_RECV;
        if (p2p) p2p_seqs[{n.comm_id(), n.rank()}].push_back(n.p2p_sequence());
        else seqs[{n.comm_id(), n.rank()}].push_back(n.sequence());
      }
    }
    for (auto* numbers : {&seqs, &p2p_seqs}) {
      for (auto& [comm, s] : *numbers) {
        std::sort(s.begin(), s.end());
        for (size_t i = 0; i < s.size(); ++i) {
          if (s[i] != i) {
            fail("communicator " + std::to_string(comm.first) + " rank " + std::to_string(comm.second) +
                 (numbers == &seqs ? ": collective" : ": send/recv") + " sequence numbers are not 0..n-1");
            break;
          }
        }
      }
    }
  }
  if (!nccl_functions.empty()) {
    std::map<std::string, uint64_t> got;
    for (const auto& r : records) {
      if (r.has_nccl() && r.nccl().name_id() < strings.size()) got[strings[r.nccl().name_id()]]++;
    }
    for (const auto& [name, n] : nccl_functions) {
      if (got[name] != n) fail(name + ": " + std::to_string(got[name]) + " records, want " + std::to_string(n));
    }
  }

  if (nccl_kernels) {
    constexpr uint32_t kCustom2 = 5;  // CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, the hook's kind
    std::multimap<uint64_t, uint32_t> correlations;  // external id -> CUPTI correlation id
    std::map<uint32_t, const v1::ApiCall*> api_by_corr;
    std::map<uint32_t, int> kernels_by_corr;
    for (const auto& r : records) {
      if (r.has_external_correlation() && r.external_correlation().kind() == kCustom2)
        correlations.emplace(r.external_correlation().external_id(), r.external_correlation().correlation_id());
      if (r.has_api()) api_by_corr[r.api().correlation_id()] = &r.api();
      if (r.has_kernel()) kernels_by_corr[r.kernel().correlation_id()]++;
    }
    // A grouped call (group_depth > 0) launches nothing itself: its kernels come from the
    // outermost ncclGroupEnd (group_depth 0) after it on its thread, under that call's id.
    std::vector<std::pair<const v1::NcclCall*, uint64_t>> calls;  // call, id that launched for it
    std::map<uint64_t, std::vector<size_t>> open_group;           // thread -> calls waiting for GroupEnd
    for (const auto& r : records) {
      if (!r.has_nccl()) continue;
      const v1::NcclCall& n = r.nccl();
      if (n.op() == v1::NCCL_GROUP_END && n.group_depth() == 0) {
        for (size_t i : open_group[n.thread_id()]) calls[i].second = n.external_id();
        open_group[n.thread_id()].clear();
        continue;
      }
      const bool moves_data = n.op() >= v1::NCCL_ALL_REDUCE && n.op() <= v1::NCCL_SCATTER;
      if (!moves_data || n.return_value() != 0) continue;
      if (n.external_id() == 0) fail(std::string(v1::NcclOp_Name(n.op())) + ": no external correlation id");
      calls.push_back({&n, n.group_depth() > 0 ? 0 : n.external_id()});
      if (n.group_depth() > 0) open_group[n.thread_id()].push_back(calls.size() - 1);
    }
    uint64_t tied = 0;
    for (const auto& [call, launching_id] : calls) {
      const v1::NcclCall& n = *call;
      const bool p2p = n.op() == v1::NCCL_SEND || n.op() == v1::NCCL_RECV;
      const std::string what = std::string(v1::NcclOp_Name(n.op())) + (p2p ? " p2p_sequence " : " sequence ") +
                               std::to_string(p2p ? n.p2p_sequence() : n.sequence());
      if (n.external_id() == 0) continue;  // said above
      if (launching_id == 0) {
        fail(what + ": its group never ended");
        continue;
      }
      bool kernel = false;
      auto [lo, hi] = correlations.equal_range(launching_id);
      for (auto it = lo; it != hi; ++it) {
        if (kernels_by_corr.count(it->second) == 0) continue;
        kernel = true;
        auto api = api_by_corr.find(it->second);
        const std::string name = api == api_by_corr.end() || api->second->name_id() >= strings.size()
                                     ? std::string("(none)")
                                     : strings[api->second->name_id()];
        if (api == api_by_corr.end() || api->second->domain() != v1::API_DOMAIN_DRIVER ||
            name.rfind("cuLaunchKernelEx", 0) != 0) {
          fail(what + ": its kernel was launched by " + name + ", not the driver's cuLaunchKernelEx");
        }
      }
      if (!kernel) fail(what + ": external id " + std::to_string(launching_id) + " leads to no kernel");
      tied += kernel;
    }
    std::printf("nccl_tied %llu\n", static_cast<unsigned long long>(tied));
  }
  if (devices > 0) {
    std::map<uint32_t, uint64_t> kernels_on, infos;
    uint64_t peer = 0;
    for (const auto& r : records) {
      if (r.has_kernel()) ++kernels_on[r.kernel().device()];
      if (r.has_device()) ++infos[r.device().ordinal()];
      if (!r.has_memcpy()) continue;
      const auto& m = r.memcpy();
      const bool across = m.src_device() != m.dst_device();
      if (across != (m.copy_kind() == v1::COPY_PTOP)) {
        fail("a " + std::to_string(m.copy_kind()) + " copy from device " + std::to_string(m.src_device()) +
             " to device " + std::to_string(m.dst_device()));
      }
      peer += across;
    }
    for (uint32_t d = 0; d < devices; ++d) {
      std::printf("kernels_device_%u %llu\n", d, static_cast<unsigned long long>(kernels_on[d]));
      if (kernels_on[d] == 0) fail("no kernel on device " + std::to_string(d));
      if (infos[d] != 1) fail(std::to_string(infos[d]) + " DeviceInfo records for device " + std::to_string(d));
    }
    if (kernels_on.size() > devices || infos.size() > devices) fail("records name more than " + std::to_string(devices) + " devices");
    std::printf("peer_copies %llu\n", static_cast<unsigned long long>(peer));
  }
  return failures == 0 ? 0 : 1;
}
