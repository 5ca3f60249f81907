// NCCL's topology XML, read into the matrix `nvidia-smi topo -m` prints (analysis/topology.h).
//
// The file NCCL writes with NCCL_TOPO_DUMP_FILE and reads back from NCCL_TOPO_FILE (NCCL's
// src/graph/xml.cc writes and parses it, src/graph/topo.cc builds NCCL's graph from it):
//
//   <system version="1">
//     <cpu numaid="0" host_hash=".." affinity=".." arch="x86_64" ...>   a NUMA node
//       <pci busid="0000:15:00.0" class="0x060400" ...>                 a PCIe switch
//         <pci busid="0000:18:00.0" class="0x030200" ...>               a GPU's own function
//           <gpu dev="0" sm="90" rank="0" gdr="1">                      dev: its NVML index (GPU0)
//             <nvlink target="0000:05:00.0" count="5" tclass="0x068000"/>
//           </gpu>
//         </pci>
//         <pci busid="0000:17:00.0" class="0x020000" ...>
//           <nic><net name="mlx5_0" dev="0" speed="400000" .../></nic>
//         </pci>
//       </pci>
//       <nic><net name="eth0" .../></nic>                                a NIC with no PCI place
//     </cpu>
//   </system>
//
// NCCL climbs sysfs two levels per <pci> (xml.cc, ncclTopoGetXmlFromSys: past the downstream
// port to the switch's upstream port), so each <pci> above a device is one PCIe switch, and it
// stops at the root complex under a <cpu> that stands for a whole NUMA node. The links, in
// nvidia-smi's words:
//   PIX   the two devices hang off the same switch;
//   PXB   they share a switch, but not the one right above both;
//   NODE  they share only the <cpu>. Not PHB: NCCL merges a NUMA node's host bridges into one
//         <cpu>, so whether two devices share one (PHB) or not (NODE) is not in the file. NODE
//         is the slower of the two, and what nvidia-smi prints on machines with a root port
//         per device (DGX H100: a GPU and another switch's NIC on its socket). NCCL itself calls
//         either PATH_PHB; the chart ranks PHB and NODE alike.
//   SYS   different <cpu> elements: another NUMA node.
//   NV#   NVLink, from <nvlink> by its target's class (topo.cc, ncclTopoAddNvLinks): 0x03....
//         is a GPU, found by its bus id; 0x068001 is the CPU (POWER9), no GPU pair; any other
//         class (0x068000, also what NCCL writes for a switch a VM hides, target
//         "fffffff:ff:ff.0") is the NVSwitch fabric, one node in NCCL's graph that all such GPUs
//         reach. Two GPUs that both reach it are NV<the smaller count>: a DGX H100 GPU has
//         5+5+4+4 links to four switches, and nvidia-smi prints NV18.
#include "topology_xml.h"

#include <libxml/SAX2.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <vector>

namespace gantt::analysis {

namespace {

// PCIe switches above a device: 2 to 4 on real machines. It bounds our recursion whatever
// libxml2's own limit (256 levels by default).
constexpr size_t kMaxPciDepth = 64;
// Links in one <nvlink>: NCCL counts them one per NVML link, 18 on an H100 and 36 on a Rubin GPU.
constexpr int64_t kMaxNvlinkCount = 1024;
// Places one <net> name is listed in: NCCL lists a NIC it cannot place once per <cpu>.
constexpr size_t kMaxNicPlaces = 8;
// NCCL's own limit on an attribute value (xml.h, MAX_STR_LEN).
constexpr size_t kMaxAttrBytes = 255;
// Attributes in one tag: NCCL writes at most 16 (xml.h, MAX_ATTR_COUNT). See refuse_crowded_tags.
constexpr size_t kMaxAttributes = 256;

const xmlChar* xml_str(const char* s) { return reinterpret_cast<const xmlChar*>(s); }

bool is(const xmlNode* n, const char* tag) { return n->type == XML_ELEMENT_NODE && xmlStrEqual(n->name, xml_str(tag)); }

[[noreturn]] void fail(const std::string& name, long line, const std::string& what) {
  throw std::invalid_argument(name + ": line " + std::to_string(line) + ": " + what);
}

// libxml2 before 2.12 compares each attribute of a start tag with every one before it: one tag
// with 130,000 attributes (1 MiB) took 135 s in 2.9.14, Debian 12's. Attribute values cannot
// hold '<', so all of a tag's attributes lie between its '<' and the next one: more '=' than
// kMaxAttributes there is refused before libxml2 reads it. Comments, CDATA and processing
// instructions ("<!", "<?") are not counted.
void refuse_crowded_tags(const std::string& text, const std::string& name) {
  long line = 1;
  size_t equals = 0;
  bool counting = false;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
    } else if (text[i] == '<') {
      equals = 0;
      counting = i + 1 < text.size() && text[i + 1] != '!' && text[i + 1] != '?';
    } else if (text[i] == '=' && counting && ++equals > kMaxAttributes) {
      fail(name, line, "a tag with more than " + std::to_string(kMaxAttributes) + " attributes (NCCL writes at most 16)");
    }
  }
}

struct ParseState {
  bool doctype = false;
  long doctype_line = 0;
};

// libxml2 calls this at "<!DOCTYPE", before it reads the internal subset and with it any entity
// declaration (billion laughs, external entities). NCCL's files have none: the parse stops here.
void refuse_doctype(void* ctx, const xmlChar*, const xmlChar*, const xmlChar*) {
  auto* ctxt = static_cast<xmlParserCtxtPtr>(ctx);
  auto* state = static_cast<ParseState*>(ctxt->_private);
  state->doctype = true;
  state->doctype_line = xmlSAX2GetLineNumber(ctx);
  xmlStopParser(ctxt);
}

using XmlDoc = std::unique_ptr<xmlDoc, decltype(&xmlFreeDoc)>;

XmlDoc parse_xml(const std::string& text, const std::string& name) {
  // libxml2's global tables, set up once before threads parse, as its documentation asks.
  static const bool initialised = (xmlInitParser(), true);
  (void)initialised;
  std::unique_ptr<xmlParserCtxt, decltype(&xmlFreeParserCtxt)> ctxt(xmlNewParserCtxt(), xmlFreeParserCtxt);
  if (!ctxt) throw std::invalid_argument(name + ": the XML parser could not start");
  ctxt->sax->internalSubset = refuse_doctype;
  ParseState state;
  ctxt->_private = &state;
  // NONET: nothing fetched. No NOENT, DTDLOAD or HUGE: no entity substituted, no DTD loaded, and
  // libxml2's default limits kept (256 levels of nesting). NOERROR, NOWARNING: the error stays
  // in the context, to be reported under the file's name rather than printed.
  XmlDoc doc(xmlCtxtReadMemory(ctxt.get(), text.data(), static_cast<int>(text.size()), nullptr, nullptr,
                               XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING | XML_PARSE_BIG_LINES),
             xmlFreeDoc);
  if (state.doctype) fail(name, state.doctype_line, "a DOCTYPE: NCCL's topology has none, and its entities are not read");
  if (!doc) {
    const xmlError* e = xmlCtxtGetLastError(ctxt.get());
    std::string what = e && e->message ? e->message : "";
    while (!what.empty() && (what.back() == '\n' || what.back() == ' ')) what.pop_back();
    fail(name, e ? e->line : 0, "not well-formed XML: " + what.substr(0, 200));
  }
  return doc;
}

// As NCCL compares bus ids (utils.cc, busIdToInt64): the first 16 hex digits, ':' and '.'
// skipped, so NVML's "00000000:18:00.0" and sysfs's "0000:18:00.0" are one device.
std::optional<uint64_t> bus_id(const std::string& s) {
  uint64_t id = 0;
  int digits = 0;
  for (const char c : s) {
    if (c == ':' || c == '.') continue;
    const int d = c >= '0' && c <= '9'   ? c - '0'
                  : c >= 'a' && c <= 'f' ? c - 'a' + 10
                  : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                         : -1;
    if (d < 0 || digits == 16) break;
    id = id << 4 | static_cast<uint64_t>(d);
    ++digits;
  }
  if (digits == 0) return std::nullopt;
  return id;
}

// Where a device hangs: its NUMA node, and the outermost and innermost PCIe switch above it
// (not its own <pci>). The <pci> elements nest as a tree, so two devices share a switch at all
// only if they share the outermost one, and hang off the same one only if the innermost is the same.
struct Place {
  const xmlNode* cpu = nullptr;
  const xmlNode* top_switch = nullptr;
  const xmlNode* switch_above = nullptr;
  bool operator==(const Place&) const = default;
};

// SYS, NODE, PXB, PIX: nearer is larger.
constexpr const char* kPcieLinks[] = {"SYS", "NODE", "PXB", "PIX"};

size_t pcie_link(const Place& a, const Place& b) {
  if (a.cpu != b.cpu) return 0;
  if (!a.top_switch || a.top_switch != b.top_switch) return 1;
  return a.switch_above == b.switch_above ? 3 : 2;
}

struct Gpu {
  const xmlNode* pci = nullptr;  // its own <pci>
  long line = 0;
  std::optional<uint64_t> busid;
  Place place;
  uint64_t nvswitch_links = 0;
  std::map<uint64_t, uint64_t> peer_links;  // by the peer's bus id
};

struct Nic {
  std::vector<Place> places;
};

class Reader {
 public:
  explicit Reader(const std::string& name) : name_(name) {}

  Topology read(const xmlNode* root) {
    if (!is(root, "system"))
      fail(root, "the root element is <" + std::string(reinterpret_cast<const char*>(root->name)).substr(0, 40) +
                     ">, not NCCL's <system>");
    const int64_t version = integer(root, "version", 0, INT32_MAX);
    if (version != 1)
      fail(root, "topology version " + std::to_string(version) + ": this reads NCCL's version 1 (NCCL_TOPO_XML_VERSION)");
    for (const xmlNode* c = root->children; c; c = c->next)
      if (is(c, "cpu")) under(c, Place{c, nullptr, nullptr}, 0);
    if (gpus_.empty()) fail(root, "no <gpu> under <system><cpu><pci>: no GPU to draw");
    return topology();
  }

 private:
  [[noreturn]] void fail(const xmlNode* n, const std::string& what) const { analysis::fail(name_, xmlGetLineNo(n), what); }

  std::optional<std::string> attr(const xmlNode* n, const char* key) const {
    xmlChar* value = xmlGetNoNsProp(n, xml_str(key));
    if (!value) return std::nullopt;
    std::string s(reinterpret_cast<const char*>(value));
    xmlFree(value);
    if (s.size() > kMaxAttrBytes)
      fail(n, std::string(key) + "=\"" + s.substr(0, 20) + "...\": longer than " + std::to_string(kMaxAttrBytes) +
                  " bytes, NCCL's own limit");
    return s;
  }

  std::string required(const xmlNode* n, const char* key) const {
    std::optional<std::string> s = attr(n, key);
    if (!s) fail(n, "<" + std::string(reinterpret_cast<const char*>(n->name)) + "> without " + key);
    return *s;
  }

  int64_t integer(const xmlNode* n, const char* key, int64_t lo, int64_t hi) const {
    const std::string s = required(n, key);
    int64_t value = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (ec != std::errc() || end != s.data() + s.size() || value < lo || value > hi)
      fail(n, std::string(key) + "=\"" + s.substr(0, 40) + "\": not a number from " + std::to_string(lo) + " to " +
                  std::to_string(hi));
    return value;
  }

  // The children of a <cpu> or a <pci>, which hang at `place`; `depth` switches above them.
  void under(const xmlNode* parent, const Place& place, size_t depth) {
    for (const xmlNode* c = parent->children; c; c = c->next) {
      if (is(c, "nic")) {
        nic(c, place);
      } else if (is(c, "gpu") && is(parent, "pci")) {
        gpu(c, parent, place);
      } else if (is(c, "pci") && !is(parent, "pci")) {
        under(c, place, depth);
      } else if (is(c, "pci")) {
        if (depth == kMaxPciDepth) fail(c, "PCIe switches nested deeper than " + std::to_string(kMaxPciDepth));
        under(c, Place{place.cpu, place.top_switch ? place.top_switch : parent, parent}, depth + 1);
      }
    }
  }

  void count_device(const xmlNode* n) const {
    if (gpus_.size() + nics_.size() >= kMaxTopologyDevices)
      fail(n, "more than " + std::to_string(kMaxTopologyDevices) + " devices");
  }

  // Several <gpu> of one dev under one <pci> are one GPU: ranks sharing it, or its MLOPart
  // halves, each listed with the whole GPU's links (so they are not added up).
  void gpu(const xmlNode* g, const xmlNode* pci, const Place& place) {
    const int64_t dev = integer(g, "dev", 0, static_cast<int64_t>(kMaxTopologyDevices) - 1);
    auto it = gpus_.find(dev);
    if (it == gpus_.end()) {
      count_device(g);
      const std::optional<std::string> busid = attr(pci, "busid");
      it = gpus_.emplace(dev, Gpu{pci, xmlGetLineNo(g), busid ? bus_id(*busid) : std::nullopt, place, 0, {}}).first;
    } else if (it->second.pci != pci) {
      fail(g, "GPU dev " + std::to_string(dev) + " again, under another <pci> than at line " +
                  std::to_string(it->second.line));
    }
    Gpu& gpu = it->second;
    uint64_t nvswitch = 0;
    std::map<uint64_t, uint64_t> peers;
    for (const xmlNode* l = g->children; l; l = l->next) {
      if (!is(l, "nvlink")) continue;
      const auto count = static_cast<uint64_t>(integer(l, "count", 0, kMaxNvlinkCount));
      std::string tclass = required(l, "tclass");
      std::transform(tclass.begin(), tclass.end(), tclass.begin(), [](unsigned char c) { return std::tolower(c); });
      if (tclass.rfind("0x03", 0) == 0) {
        // A GPU that is not in the file is no link, as in NCCL.
        if (const std::optional<uint64_t> target = bus_id(required(l, "target"))) peers[*target] += count;
      } else if (tclass.rfind("0x068001", 0) != 0) {
        nvswitch += count;
      }
    }
    gpu.nvswitch_links = std::max(gpu.nvswitch_links, nvswitch);
    for (const auto& [target, count] : peers) gpu.peer_links[target] = std::max(gpu.peer_links[target], count);
  }

  // A <net> name listed again (NCCL lists a NIC it cannot place under each <cpu>) is one NIC,
  // as near to each device as its nearest listing.
  void nic(const xmlNode* n, const Place& place) {
    for (const xmlNode* c = n->children; c; c = c->next) {
      if (!is(c, "net")) continue;
      const std::optional<std::string> net = attr(c, "name");
      const auto named = net ? nic_by_name_.find(*net) : nic_by_name_.end();
      if (named != nic_by_name_.end()) {
        std::vector<Place>& places = nics_[named->second].places;
        if (std::find(places.begin(), places.end(), place) != places.end()) continue;
        if (places.size() == kMaxNicPlaces)
          fail(c, "<net name=\"" + *net + "\"> listed in more than " + std::to_string(kMaxNicPlaces) + " places");
        places.push_back(place);
        continue;
      }
      count_device(c);
      if (net) nic_by_name_.emplace(*net, nics_.size());
      nics_.push_back(Nic{{place}});
    }
  }

  static uint64_t nvlinks(const Gpu& a, const Gpu& b) {
    auto direct = [](const Gpu& from, const Gpu& to) -> uint64_t {
      if (!to.busid) return 0;
      const auto it = from.peer_links.find(*to.busid);
      return it == from.peer_links.end() ? 0 : it->second;
    };
    // Both ends list a direct link; if they disagree, the bonded set is as wide as its narrower end.
    const uint64_t ab = direct(a, b), ba = direct(b, a);
    const uint64_t bridged = ab && ba ? std::min(ab, ba) : std::max(ab, ba);
    const uint64_t switched = std::min(a.nvswitch_links, b.nvswitch_links);
    return std::max(bridged, switched);
  }

  Topology topology() const {
    Topology t;
    std::vector<const Gpu*> gpus;
    std::vector<std::vector<const Place*>> places;
    for (const auto& [dev, gpu] : gpus_) {
      t.devices.push_back("GPU" + std::to_string(dev));
      gpus.push_back(&gpu);
      places.push_back({&gpu.place});
    }
    for (size_t i = 0; i < nics_.size(); ++i) {
      t.devices.push_back("NIC" + std::to_string(i));
      places.emplace_back();
      for (const Place& p : nics_[i].places) places.back().push_back(&p);
    }
    const size_t n = t.devices.size();
    t.links.assign(n * n, "X");
    for (size_t i = 0; i < n; ++i)
      for (size_t j = i + 1; j < n; ++j) {
        std::string link;
        if (j < gpus.size())
          if (const uint64_t count = nvlinks(*gpus[i], *gpus[j])) link = "NV" + std::to_string(count);
        if (link.empty()) {
          size_t nearest = 0;
          for (const Place* a : places[i])
            for (const Place* b : places[j]) nearest = std::max(nearest, pcie_link(*a, *b));
          link = kPcieLinks[nearest];
        }
        t.links[i * n + j] = t.links[j * n + i] = link;
      }
    return t;
  }

  const std::string& name_;
  std::map<int64_t, Gpu> gpus_;  // by dev: the matrix's order
  std::vector<Nic> nics_;        // in document order
  std::map<std::string, size_t> nic_by_name_;
};

}  // namespace

Topology parse_nccl_topology_xml(const std::string& text, const std::string& name) {
  refuse_crowded_tags(text, name);
  const XmlDoc doc = parse_xml(text, name);
  const xmlNode* root = xmlDocGetRootElement(doc.get());
  if (!root) throw std::invalid_argument(name + ": no root element");
  return Reader(name).read(root);
}

}  // namespace gantt::analysis
