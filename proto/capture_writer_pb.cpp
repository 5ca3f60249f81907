// CaptureWriter::write for protobuf messages: the CLI's and the tests' way in. Apart from the
// rest of the writer so that the hook, which writes only wire::Record and the plain fields,
// links no libprotobuf and registers no descriptor in the program's pool.
#include <gpuhook/capture.h>

#include "framing.h"
#include "record_codec.h"

namespace gpuhook {

namespace {

// The hand encoders know the declared fields only; a message carrying unknown fields (parsed
// from a newer capture) goes through protobuf so nothing is lost.
bool no_unknown_fields(const google::protobuf::Message& m) {
  return m.GetReflection()->GetUnknownFields(m).empty();
}

}  // namespace

bool CaptureWriter::write(const v1::Record& record) {
  if (!accepting()) return false;
  auto kind = record.kind_case();
  if (kind == v1::Record::kChunkStart || kind == v1::Record::KIND_NOT_SET) {
    return true;  // framing is the writer's job; an empty record carries nothing
  }
  if (kind == v1::Record::kKernel && no_unknown_fields(record.kernel())) return write(kernel_fields(record.kernel()));
  if (kind == v1::Record::kApi && no_unknown_fields(record.api())) return write(api_fields(record.api()));
  // One writer is used by one thread at a time; the message is reused, as its buffers are.
  thread_local v1::Record scratch;
  scratch.CopyFrom(record);
  open_chunk_at(codec::first_time(scratch));
  codec::Cursors& c = cursors();
  int64_t saved_cursor = c[kind];
  codec::delta_encode(scratch, c, [this](int64_t t) { note_time(t); });
  if (!codec::append_record(chunk_bytes(), scratch)) {
    c[kind] = saved_cursor;
    return record_too_large();
  }
  return record_written(kind);
}

}  // namespace gpuhook
