// nsys_sqlite_fuzz.cc — libFuzzer target for the Nsight Systems SQLite importer (trace/nsys_sqlite.h).
// The input is an SQL script, run against an empty database file; the seed (fuzz/nsys_seed.sql) is an
// export's tables with odd rows, which mutations turn into other values, types, NULLs, missing rows,
// tables and columns. Whatever database results must import or give a clean one-line error, and
// what imports must build a graph or give a clean error: never a crash or a sanitizer report.
// The script may only create, fill and change tables and views (an authorizer refuses the rest, such
// as ATTACH, which would write files elsewhere), and long statements are cut short.
#include <sqlite3.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "graph/analysis.h"
#include "graph/builder.h"
#include "trace/nsys_sqlite.h"

namespace {

int OnlyTables(void*, int action, const char*, const char*, const char*, const char*) {
  switch (action) {
    case SQLITE_CREATE_TABLE:
    case SQLITE_CREATE_VIEW:
    case SQLITE_CREATE_INDEX:
    case SQLITE_DROP_TABLE:
    case SQLITE_DROP_VIEW:
    case SQLITE_ALTER_TABLE:
    case SQLITE_INSERT:
    case SQLITE_UPDATE:
    case SQLITE_DELETE:
    case SQLITE_READ:
    case SQLITE_SELECT:
    case SQLITE_FUNCTION:
    case SQLITE_TRANSACTION:
    case SQLITE_SAVEPOINT:
    case SQLITE_RECURSIVE:
      return SQLITE_OK;
    default:
      return SQLITE_DENY;
  }
}

int StopLongStatements(void* steps) { return ++*static_cast<int*>(steps) > 1000; }  // × 1000 VM steps

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/emo_nsys_fuzz_" + std::to_string(getpid()) + ".sqlite";
  std::remove(path.c_str());
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
    sqlite3_close(db);
    return 0;
  }
  sqlite3_limit(db, SQLITE_LIMIT_LENGTH, 1 << 20);
  sqlite3_set_authorizer(db, OnlyTables, nullptr);
  int steps = 0;
  sqlite3_progress_handler(db, 1000, StopLongStatements, &steps);
  const std::string sql(reinterpret_cast<const char*>(data), size);
  sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);  // the script stops at its first failing statement
  sqlite3_close(db);

  emo::Trace trace;
  std::string err;
  const bool ok = emo::LoadNsysSqlite(path, &trace, &err);
  std::remove(path.c_str());
  if (!ok) {
    if (err.empty() || err.find('\n') != std::string::npos) __builtin_trap();  // a refusal names what, on one line
    return 0;
  }
  emo::Graph g;
  emo::BuildReport report;
  if (emo::BuildGraph(trace, &g, &report, &err)) emo::Analyze(trace, g);
  return 0;
}
