// Interprocess events (cudaEventInterprocess), as the event calls of rt_stream.cpp see them.
// Their state lives in the exporting process's arena (device_arena.h), so a record made in one
// process orders a wait, a query or a synchronise in another (rt_ipc.cpp).
#pragma once

#include "engine.h"
#include "records.h"

namespace gpuhook::sim {

// A new event of the current device (rt_stream.cpp), with no API call of its own.
EventImpl* new_event(unsigned flags);
// cudaEventCreateWithFlags with cudaEventInterprocess: the event gets its shared state.
void ipc_event_created(EventImpl* e);
// cudaEventDestroy: the exporter's event ends its shared state; an opened one lets it go.
void ipc_event_destroyed(EventImpl* e);
// cudaEventRecord outside a capture, after `marker` was enqueued on s: the record is numbered
// now and published when the marker's work is over.
void ipc_event_recorded(const ApiScope& api, EventImpl* e, Stream* s, const CompletionPtr& marker);
// When the event's latest record was made by another process, these do the call and return
// true; otherwise false (the event's own completion answers, as for any event).
bool ipc_event_wait(const ApiScope& api, EventImpl* e, Stream* s);
bool ipc_event_query(EventImpl* e, bool* ready);
bool ipc_event_synchronize(EventImpl* e);

}  // namespace gpuhook::sim
