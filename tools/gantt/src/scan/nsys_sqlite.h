// Reading an Nsight Systems SQLite export safely: the database opened read-only and hardened
// against a hostile file, and streamed SELECTs whose columns are found by name, so that the
// several schemas nsys has written read alike (TRACE-FORMATS.md, B1 and B5). Every problem is a
// gpuhook::CaptureError that names the table and the row. Used by nsys_import.cpp and nsys_rows.cpp only.
#pragma once

#include <gpuhook/capture.h>
#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gantt/scan/trace_import.h"

namespace gantt::scan::nsys {

inline std::string quoted(std::string_view name) {
  std::string q = "\"";
  for (char c : name) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

inline bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// The read-only database, hardened against a hostile file: no schema code runs (views and
// triggers are never read; TRUSTED_SCHEMA off), no large value is materialised, no write is
// possible, and damaged pages are caught by cell_size_check rather than read on.
class Db {
 public:
  explicit Db(const std::string& path) : path_(path) {
    sqlite3* db = nullptr;
    const int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr);
    db_.reset(db);  // closed however the constructor ends
    if (rc != SQLITE_OK) {
      const std::string why = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
      throw gpuhook::CaptureError(gpuhook::CaptureErrorKind::kIo, path, 0, "cannot open the SQLite file: " + why);
    }
    sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
    sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
    // No value past 1 MiB is read: names run to kilobytes, and the capture refuses records past
    // 16 MiB. StringIds also holds captured stdout (ProcessStreams), which is never looked up.
    sqlite3_limit(db, SQLITE_LIMIT_LENGTH, 1 << 20);
    exec("PRAGMA query_only = 1");
    exec("PRAGMA cell_size_check = 1");
    exec("PRAGMA cache_size = -16384");  // 16 MiB of pages; ORDER BY spills to temporary files past it
    list_tables();
  }
  sqlite3* get() const { return db_.get(); }
  const std::string& path() const { return path_; }

  [[noreturn]] void fail(const std::string& where) const {
    throw gpuhook::CaptureError(
        gpuhook::CaptureErrorKind::kBadRecord, path_, 0,
        (where.empty() ? "" : where + ": ") + "the SQLite file cannot be read: " + sqlite3_errmsg(get()));
  }

  // The table's name in this file, "" when absent: the plain name, else the highest _V<n>
  // (B5.3; "MEMCPY2" is another CUPTI kind, never a version).
  std::string table(std::string_view base) const {
    std::string best;
    int64_t best_version = -1;
    for (const std::string& t : tables_) {
      if (iequals(t, base)) return t;
      if (t.size() <= base.size() + 2 || !iequals(std::string_view(t).substr(0, base.size()), base)) continue;
      const std::string_view rest = std::string_view(t).substr(base.size());
      if (rest[0] != '_' || (rest[1] != 'V' && rest[1] != 'v')) continue;
      int64_t version = 0;
      const auto [end, ec] = std::from_chars(rest.data() + 2, rest.data() + rest.size(), version);
      if (ec == std::errc() && end == rest.data() + rest.size() && version > best_version) {
        best_version = version;
        best = t;
      }
    }
    return best;
  }

  std::vector<std::string> columns(const std::string& table) const {
    std::vector<std::string> names;
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(get(), ("PRAGMA table_info(" + quoted(table) + ")").c_str(), -1, &st, nullptr) !=
        SQLITE_OK) {
      fail("table " + table);
    }
    int rc = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      const unsigned char* name = sqlite3_column_text(st, 1);
      if (name != nullptr) names.emplace_back(reinterpret_cast<const char*>(name));
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) fail("table " + table);
    return names;
  }

 private:
  void exec(const char* sql) {
    if (sqlite3_exec(get(), sql, nullptr, nullptr, nullptr) != SQLITE_OK) fail("");
  }
  void list_tables() {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(get(), "SELECT name FROM sqlite_master WHERE type = 'table'", -1, &st, nullptr) !=
        SQLITE_OK) {
      fail("the list of tables");
    }
    int rc = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && tables_.size() < 100000) {
      const unsigned char* name = sqlite3_column_text(st, 0);
      if (name != nullptr) tables_.emplace_back(reinterpret_cast<const char*>(name));
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) fail("the list of tables");
  }

  std::string path_;
  // close_v2: the handle goes once the last statement on it is finalised, in whatever order.
  std::unique_ptr<sqlite3, int (*)(sqlite3*)> db_{nullptr, &sqlite3_close_v2};
  std::vector<std::string> tables_;
};

// One streamed SELECT of the wanted columns that the table has. Columns are addressed by their
// index in `wanted`; one the table lacks reads as NULL. Errors name the table and the rowid.
class Query {
 public:
  Query(const Db& db, std::string table, const std::vector<std::string_view>& wanted, const std::string& where,
        const std::string& order)
      : db_(db), table_(std::move(table)), names_(wanted.begin(), wanted.end()), result_(wanted.size(), -1) {
    const std::vector<std::string> present = db.columns(table_);
    std::string list;
    int next = 1;  // result column 0 is the rowid
    for (size_t i = 0; i < wanted.size(); ++i) {
      for (const std::string& p : present) {
        if (!iequals(p, wanted[i])) continue;
        list += ", " + quoted(p);
        result_[i] = next++;
        break;
      }
    }
    for (bool with_rowid : {true, false}) {
      std::string sql = std::string("SELECT ") + (with_rowid ? "rowid" : "NULL") + list + " FROM " + quoted(table_);
      if (!where.empty()) sql += " WHERE " + where;
      std::string keys = order;
      if (with_rowid) keys += keys.empty() ? "rowid" : ", rowid";  // equal starts in file order
      if (!keys.empty()) sql += " ORDER BY " + keys;
      if (sqlite3_prepare_v2(db.get(), sql.c_str(), -1, &st_, nullptr) == SQLITE_OK) return;
      sqlite3_finalize(st_);  // a WITHOUT ROWID table: rows are then counted instead
      st_ = nullptr;
    }
    db.fail("table " + table_);
  }
  ~Query() { sqlite3_finalize(st_); }
  Query(const Query&) = delete;
  Query& operator=(const Query&) = delete;

  bool has(int c) const { return result_[c] >= 0; }
  const std::string& table() const { return table_; }
  const std::string& path() const { return db_.path(); }

  bool step() {
    const int rc = sqlite3_step(st_);
    if (rc == SQLITE_DONE) return false;
    if (rc != SQLITE_ROW) db_.fail("table " + table_ + ", after row " + std::to_string(row_));
    row_ = sqlite3_column_type(st_, 0) == SQLITE_INTEGER ? sqlite3_column_int64(st_, 0) : row_ + 1;
    return true;
  }

  [[noreturn]] void bad(const std::string& what) const {
    throw gpuhook::CaptureError(gpuhook::CaptureErrorKind::kBadRecord, db_.path(), 0,
                                "table " + table_ + ", row " + std::to_string(row_) + ": " + what);
  }
  [[noreturn]] void bad_column(int c, const std::string& what) const { bad("column " + names_[c] + " " + what); }

  // NULL (or an absent column) is "missing"; a TEXT, REAL or BLOB where an integer belongs is an error.
  std::optional<int64_t> integer(int c) const {
    if (result_[c] < 0) return std::nullopt;
    switch (sqlite3_column_type(st_, result_[c])) {
      case SQLITE_NULL:
        return std::nullopt;
      case SQLITE_INTEGER:
        return sqlite3_column_int64(st_, result_[c]);
      case SQLITE_FLOAT:
        bad_column(
            c, "holds the real number " + std::to_string(sqlite3_column_double(st_, result_[c])) + ", not an integer");
      case SQLITE_TEXT: {
        const unsigned char* raw = sqlite3_column_text(st_, result_[c]);  // NULL only when out of memory
        const std::string_view text = raw != nullptr ? reinterpret_cast<const char*>(raw) : "";
        bad_column(c, "holds the text '" + excerpt(text) + "', not an integer");
      }
      default:
        bad_column(c, "holds a blob, not an integer");
    }
  }
  int64_t integer_or(int c, int64_t fallback) const { return integer(c).value_or(fallback); }
  // CUPTI's "none" (-1, 0xFFFFFFFF) folds to its 32-bit pattern, as the capture's fields hold it.
  uint32_t u32(int c) const { return static_cast<uint32_t>(integer_or(c, 0)); }
  int32_t i32(int c) const { return static_cast<int32_t>(std::clamp<int64_t>(integer_or(c, 0), INT32_MIN, INT32_MAX)); }
  uint64_t u64(int c) const { return static_cast<uint64_t>(std::max<int64_t>(0, integer_or(c, 0))); }

  std::optional<std::string> text(int c) const {
    if (result_[c] < 0 || sqlite3_column_type(st_, result_[c]) == SQLITE_NULL) return std::nullopt;
    const void* bytes = sqlite3_column_blob(st_, result_[c]);
    const int size = sqlite3_column_bytes(st_, result_[c]);
    return std::string(static_cast<const char*>(bytes), bytes != nullptr ? static_cast<size_t>(size) : 0);
  }

 private:
  const Db& db_;
  std::string table_;
  std::vector<std::string> names_;
  std::vector<int> result_;  // wanted index -> result column, -1 when absent
  sqlite3_stmt* st_ = nullptr;
  int64_t row_ = 0;
};

}  // namespace gantt::scan::nsys
