// Reads the fat binary nvcc links into a program (the layout cuobjdump and the CUDA driver
// read): a wrapper {magic 0x466243b1, version 1, fat binary, ...}; the fat binary a header
// {magic 0xBA55ED50, version, header size, size of the entries} and entries, each a header
// {kind (1 PTX, 2 ELF), ..., header size, payload size, ...} and its payload. An ELF payload is
// the cubin, uncompressed unless the payload does not start with the ELF magic. Every read is
// bounds-checked against the sizes the headers give; what does not parse gives nothing.
#include "fatbin_image.h"

#include <elf.h>

#include <cstdint>
#include <cstring>
#include <string_view>

namespace gpuhook::sim {

namespace {

constexpr uint32_t kWrapperMagic = 0x466243b1;
constexpr uint32_t kFatbinMagic = 0xBA55ED50;
constexpr uint16_t kElfEntry = 2;
// Far above any real program's device code: a wrapper that claims more is not one.
constexpr uint64_t kMaxFatbinBytes = uint64_t{1} << 32;

struct Wrapper {
  uint32_t magic;
  uint32_t version;
  const unsigned char* fatbin;
  const void* unused;
};
struct FatbinHeader {
  uint32_t magic;
  uint16_t version;
  uint16_t header_bytes;
  uint64_t entries_bytes;
};
struct EntryHeader {
  uint16_t kind;
  uint16_t unknown;
  uint32_t header_bytes;
  uint64_t payload_bytes;
};

template <class T>
bool read_at(const unsigned char* base, uint64_t size, uint64_t offset, T* out) {
  if (offset > size || sizeof(T) > size - offset) return false;
  std::memcpy(out, base + offset, sizeof(T));
  return true;
}

// The initialiser of `name` in one cubin, if it has one.
std::vector<unsigned char> from_cubin(const unsigned char* elf, uint64_t size, std::string_view name, size_t bytes) {
  Elf64_Ehdr eh;
  if (!read_at(elf, size, 0, &eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_shentsize != sizeof(Elf64_Shdr)) {
    return {};
  }
  auto section = [&](uint32_t index, Elf64_Shdr* sh) {
    return index < eh.e_shnum && read_at(elf, size, eh.e_shoff + uint64_t{index} * sizeof(Elf64_Shdr), sh);
  };
  for (uint32_t s = 0; s < eh.e_shnum; ++s) {
    Elf64_Shdr symtab, strtab;
    if (!section(s, &symtab) || symtab.sh_type != SHT_SYMTAB || !section(symtab.sh_link, &strtab)) continue;
    if (symtab.sh_offset > size || symtab.sh_size > size - symtab.sh_offset) return {};
    for (uint64_t at = 0; at + sizeof(Elf64_Sym) <= symtab.sh_size; at += sizeof(Elf64_Sym)) {
      Elf64_Sym sym;
      if (!read_at(elf, size, symtab.sh_offset + at, &sym) || sym.st_name >= strtab.sh_size) continue;
      const uint64_t name_at = strtab.sh_offset + sym.st_name;
      if (name_at >= size) continue;
      const auto* text = reinterpret_cast<const char*>(elf + name_at);
      const size_t length = strnlen(text, size - name_at);
      if (std::string_view(text, length) != name) continue;
      // An initialised variable's bytes are in a PROGBITS section; a NOBITS one (.nv.global)
      // holds zeros.
      Elf64_Shdr data;
      if (!section(sym.st_shndx, &data) || data.sh_type != SHT_PROGBITS) return {};
      if (sym.st_value > data.sh_size || bytes > data.sh_size - sym.st_value || data.sh_offset > size ||
          data.sh_size > size - data.sh_offset) {
        return {};
      }
      std::vector<unsigned char> initial(bytes);
      std::memcpy(initial.data(), elf + data.sh_offset + sym.st_value, bytes);
      return initial;
    }
  }
  return {};
}

}  // namespace

std::vector<unsigned char> variable_initialiser(const void* fat_cubin, const char* device_name, size_t bytes) {
  if (fat_cubin == nullptr || device_name == nullptr || bytes == 0) return {};
  Wrapper w;
  std::memcpy(&w, fat_cubin, sizeof w);
  if (w.magic != kWrapperMagic || w.version != 1 || w.fatbin == nullptr) return {};
  FatbinHeader h;
  std::memcpy(&h, w.fatbin, sizeof h);
  if (h.magic != kFatbinMagic || h.header_bytes < sizeof h || h.entries_bytes > kMaxFatbinBytes) return {};
  const unsigned char* entries = w.fatbin + h.header_bytes;
  for (uint64_t at = 0; at < h.entries_bytes;) {
    EntryHeader e;
    if (!read_at(entries, h.entries_bytes, at, &e) || e.header_bytes < sizeof e) break;
    const uint64_t payload = at + e.header_bytes;
    if (payload > h.entries_bytes || e.payload_bytes > h.entries_bytes - payload) break;
    if (e.kind == kElfEntry) {
      std::vector<unsigned char> init = from_cubin(entries + payload, e.payload_bytes, device_name, bytes);
      if (!init.empty()) return init;
    }
    at = payload + e.payload_bytes;
  }
  return {};
}

}  // namespace gpuhook::sim
