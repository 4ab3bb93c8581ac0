// nsys_sqlite.h — imports an Nsight Systems SQLite export (nsys export --type sqlite).
//
// Tables read: CUPTI_ACTIVITY_KIND_RUNTIME (CPU API calls: start, end, globalTid, correlationId,
// nameId), CUPTI_ACTIVITY_KIND_KERNEL / _MEMCPY / _MEMSET (GPU ops: start, end, deviceId,
// streamId, correlationId, names), CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (syncType, streamId,
// eventId, and eventSyncId from schema 3.17 on), NVTX_EVENTS (iteration ranges) and StringIds.
// Timestamps are already nanoseconds. A table other than RUNTIME/KERNEL may be absent.
#pragma once

#include <string>

#include "trace/trace.h"

namespace emo {

// Appends one RankTrace per process found in the file. On failure returns false and sets *err
// to one line naming the file and what is wrong (not SQLite, missing table/column, bad row).
bool LoadNsysSqlite(const std::string& path, Trace* trace, std::string* err);

}  // namespace emo
