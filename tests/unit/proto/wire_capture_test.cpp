// The hook's protobuf-free records (proto/gen_wire.py) against protobuf itself: the same
// values give the same bytes, for every record kind, and every string they carry parses.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>

#include <gpuhook/v1/capture.pb.h>
#include "wire_capture.h"
#include "wire_from_proto.h"

namespace gpuhook {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

std::string wire_bytes(const wire::Record& r) {
  std::string out(r.ByteSizeLong(), '\0');
  uint8_t* end = r.Write(reinterpret_cast<uint8_t*>(out.data()));
  EXPECT_EQ(end, reinterpret_cast<uint8_t*>(out.data()) + out.size()) << "ByteSizeLong and Write disagree";
  return out;
}

class Filler {
 public:
  explicit Filler(uint64_t seed) : rng_(seed) {}

  // Every field of `m`: unset, zero, small, or at the edges of its type.
  void fill(Message& m) {
    const auto* d = m.GetDescriptor();
    const auto* r = m.GetReflection();
    for (int i = 0; i < d->field_count(); ++i) {
      const FieldDescriptor* f = d->field(i);
      if (f->is_repeated()) {
        int n = pick(4);
        for (int k = 0; k < n; ++k) {
          if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) fill(*r->AddMessage(&m, f));
          else r->AddString(&m, f, text(f));
        }
        continue;
      }
      if (pick(4) == 0) continue;  // unset
      switch (f->cpp_type()) {
        case FieldDescriptor::CPPTYPE_UINT32: r->SetUInt32(&m, f, static_cast<uint32_t>(number())); break;
        case FieldDescriptor::CPPTYPE_UINT64: r->SetUInt64(&m, f, number()); break;
        case FieldDescriptor::CPPTYPE_INT32: r->SetInt32(&m, f, static_cast<int32_t>(number())); break;
        case FieldDescriptor::CPPTYPE_INT64: r->SetInt64(&m, f, static_cast<int64_t>(number())); break;
        case FieldDescriptor::CPPTYPE_BOOL: r->SetBool(&m, f, pick(2) == 1); break;
        // proto3 enums are open: values outside the enum, negative ones too, go through.
        case FieldDescriptor::CPPTYPE_ENUM: r->SetEnumValue(&m, f, static_cast<int32_t>(number())); break;
        case FieldDescriptor::CPPTYPE_STRING: r->SetString(&m, f, text(f)); break;
        default: ADD_FAILURE() << "unexpected field type of " << f->full_name(); break;
      }
    }
  }

 private:
  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  uint64_t number() {
    switch (pick(6)) {
      case 0: return 0;
      case 1: return rng_() % 128;
      case 2: return rng_() % 100000;
      case 3: return rng_();
      case 4: return UINT64_MAX - rng_() % 3;  // -1, -2, -3 as signed
      default: return uint64_t{1} << pick(64);
    }
  }
  // `string` fields get UTF-8 (protobuf refuses anything else), `bytes` fields anything.
  std::string text(const FieldDescriptor* f) {
    static const char* const kUtf8[] = {"", "a", "gpuhook 0.1.0", "schritt-ü-步", "🚀", "CLOCK_MONOTONIC_RAW"};
    if (f->type() == FieldDescriptor::TYPE_STRING) return kUtf8[pick(6)];
    std::string s(static_cast<size_t>(pick(3) == 0 ? pick(300) : pick(8)), '\0');
    for (char& c : s) c = static_cast<char>(rng_());
    return s;
  }
  std::mt19937_64 rng_;
};

TEST(WireCapture, EveryRecordKindSerialisesToTheBytesProtobufWrites) {
  const auto* oneof = v1::Record::descriptor()->FindOneofByName("kind");
  ASSERT_NE(oneof, nullptr);
  Filler filler(42);
  for (int k = 0; k < oneof->field_count(); ++k) {
    const FieldDescriptor* kind = oneof->field(k);
    for (int round = 0; round < 300; ++round) {
      v1::Record pb;
      filler.fill(*pb.GetReflection()->MutableMessage(&pb, kind));
      wire::Record w;
      wire::from_proto(pb, &w);
      ASSERT_EQ(static_cast<int>(w.kind_case()), kind->number());
      ASSERT_EQ(wire_bytes(w), pb.SerializeAsString()) << kind->name() << " round " << round << ": "
                                                        << pb.ShortDebugString();
    }
  }
}

TEST(WireCapture, AnEmptyRecordOfAKindStillNamesItsKind) {
  wire::Record w;
  w.mutable_footer();
  v1::Record pb;
  pb.mutable_footer();
  EXPECT_EQ(wire_bytes(w), pb.SerializeAsString());
  EXPECT_EQ(wire_bytes(wire::Record{}), "");
}

TEST(WireCapture, TheChunkIndexSerialisesToTheBytesProtobufWrites) {
  Filler filler(7);
  for (int round = 0; round < 200; ++round) {
    v1::ChunkIndex pb;
    filler.fill(pb);
    wire::ChunkIndex w;
    wire::from_proto(pb, &w);
    std::string bytes(w.ByteSizeLong(), '\0');
    w.Write(reinterpret_cast<uint8_t*>(bytes.data()));
    ASSERT_EQ(bytes, pb.SerializeAsString()) << pb.ShortDebugString();
  }
}

TEST(WireCapture, ValidUtf8KeepsUtf8AndReplacesEveryOtherByte) {
  for (const char* ok : {"", "plain", "schritt-ü-步", "🚀 U+10FFFF: \xF4\x8F\xBF\xBF", "\xED\x9F\xBF"}) {
    EXPECT_EQ(wire::ValidUtf8(ok), ok);
  }
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(wire::ValidUtf8("boot-\xff-id"), "boot-" + fffd + "-id");
  EXPECT_EQ(wire::ValidUtf8("\xC0\xAF"), fffd + fffd);             // overlong '/'
  EXPECT_EQ(wire::ValidUtf8("\xED\xA0\x80"), fffd + fffd + fffd);  // a surrogate
  EXPECT_EQ(wire::ValidUtf8("\xF4\x90\x80\x80"), fffd + fffd + fffd + fffd);  // past U+10FFFF
  EXPECT_EQ(wire::ValidUtf8("x\xE6\xAD"), "x" + fffd + fffd);      // cut short
}

TEST(WireCapture, AStringFieldSetFromAnyBytesParsesInProtobuf) {
  std::mt19937_64 rng(3);
  for (int round = 0; round < 2000; ++round) {
    std::string s(rng() % 12, '\0');
    for (char& c : s) c = static_cast<char>(rng() % 4 == 0 ? rng() : 0x80 | rng());
    wire::Record w;
    w.mutable_header()->set_boot_id(s);
    v1::Record pb;
    ASSERT_TRUE(pb.ParseFromString(wire_bytes(w))) << "round " << round;
  }
}

}  // namespace
}  // namespace gpuhook
