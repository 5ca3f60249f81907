// CUDA user objects: a reference count and a destructor, whose references a program, a graph
// and an executable graph can own (cuda_runtime_api.h, cudaUserObjectCreate; "CUDA User
// Objects" in the CUDA C++ Programming Guide). A graph's references are copied into its
// clones and into every executable graph instantiated from it; destroying a graph or an
// executable graph releases them, the latter once its launches in flight are done. The
// destructor runs when the count reaches zero, on whichever thread released the last
// reference (CUDA runs it on an internal thread; either way it may make no CUDA call).
#include <cuda_runtime_api.h>

#include <atomic>
#include <climits>

#include "graph.h"
#include "records.h"

namespace gpuhook::sim {

struct UserObject {
  std::atomic<unsigned long long> refs{0};
  void* ptr = nullptr;
  cudaHostFn_t destroy = nullptr;
};

namespace {

UserObject* object_of(cudaUserObject_t o) { return reinterpret_cast<UserObject*>(o); }

void release(UserObject* o, unsigned long long count) {
  if (o->refs.fetch_sub(count, std::memory_order_acq_rel) == count) {
    o->destroy(o->ptr);
    delete o;
  }
}

// "count: ... Must be nonzero and not larger than INT_MAX."
bool valid_count(unsigned int count) { return count != 0 && count <= static_cast<unsigned int>(INT_MAX); }

}  // namespace

void retain_user_objects(const UserObjectRefs& refs) {
  for (const auto& [object, count] : refs) object->refs.fetch_add(count, std::memory_order_relaxed);
}

void release_user_objects(UserObjectRefs& refs) {
  for (const auto& [object, count] : refs) release(object, count);
  refs.clear();
}

}  // namespace gpuhook::sim

using namespace gpuhook::sim;

extern "C" {

cudaError_t cudaUserObjectCreate(cudaUserObject_t* object_out, void* ptr, cudaHostFn_t destroy,
                                 unsigned int initial_refcount, unsigned int flags) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaUserObjectCreate_v11030, "cudaUserObjectCreate");
  // "Currently it is required to pass cudaUserObjectNoDestructorSync."
  if (object_out == nullptr || destroy == nullptr || !valid_count(initial_refcount) ||
      flags != cudaUserObjectNoDestructorSync) {
    return api.ret(cudaErrorInvalidValue);
  }
  auto* o = new UserObject();
  o->refs.store(initial_refcount, std::memory_order_relaxed);
  o->ptr = ptr;
  o->destroy = destroy;
  *object_out = reinterpret_cast<cudaUserObject_t>(o);
  return api.ret(cudaSuccess);
}

cudaError_t cudaUserObjectRetain(cudaUserObject_t object, unsigned int count) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaUserObjectRetain_v11030, "cudaUserObjectRetain");
  if (object == nullptr || !valid_count(count)) return api.ret(cudaErrorInvalidValue);
  object_of(object)->refs.fetch_add(count, std::memory_order_relaxed);
  return api.ret(cudaSuccess);
}

cudaError_t cudaUserObjectRelease(cudaUserObject_t object, unsigned int count) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaUserObjectRelease_v11030, "cudaUserObjectRelease");
  if (object == nullptr || !valid_count(count)) return api.ret(cudaErrorInvalidValue);
  release(object_of(object), count);
  return api.ret(cudaSuccess);
}

cudaError_t cudaGraphRetainUserObject(cudaGraph_t graph, cudaUserObject_t object, unsigned int count,
                                      unsigned int flags) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaGraphRetainUserObject_v11030, "cudaGraphRetainUserObject");
  if (graph == nullptr || object == nullptr || !valid_count(count) ||
      (flags != 0 && flags != cudaGraphUserObjectMove)) {
    return api.ret(cudaErrorInvalidValue);
  }
  UserObject* o = object_of(object);
  // cudaGraphUserObjectMove "transfers references from the calling thread, rather than create
  // new references".
  if (flags != cudaGraphUserObjectMove) o->refs.fetch_add(count, std::memory_order_relaxed);
  reinterpret_cast<Graph*>(graph)->user_objects[o] += count;
  return api.ret(cudaSuccess);
}

cudaError_t cudaGraphReleaseUserObject(cudaGraph_t graph, cudaUserObject_t object, unsigned int count) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaGraphReleaseUserObject_v11030, "cudaGraphReleaseUserObject");
  if (graph == nullptr || object == nullptr || !valid_count(count)) return api.ret(cudaErrorInvalidValue);
  UserObjectRefs& refs = reinterpret_cast<Graph*>(graph)->user_objects;
  UserObject* o = object_of(object);
  const auto it = refs.find(o);
  // Releasing references the graph does not own is undefined in CUDA; refused here.
  if (it == refs.end() || it->second < count) return api.ret(cudaErrorInvalidValue);
  if ((it->second -= count) == 0) refs.erase(it);
  release(o, count);
  return api.ret(cudaSuccess);
}

}  // extern "C"
