// SQLite storage of point results: table `points`, one column per PointResult field (the
// list in results.cpp), and table `meta` for the sweep's identity.
#include "vtpu/sweep/database.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <set>
#include <type_traits>

#include "vtpu/support/error.h"

namespace vtpu::sweep {
namespace {

std::string sql_type(const FieldPtr& p) {
  return std::visit(
      [](auto ptr) -> std::string {
        using T = std::decay_t<decltype(PointResult{}.*ptr)>;
        if constexpr (std::is_same_v<T, double>) return "REAL";
        else if constexpr (std::is_integral_v<T>) return "INTEGER";
        else return "TEXT";
      },
      p);
}

std::string column_list() {
  std::string s;
  for (const ResultField& f : result_fields()) s += fmt::format("{}\"{}\"", s.empty() ? "" : ", ", f.name);
  return s;
}

// Prepared statement with automatic finalize.
class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s_, nullptr) != SQLITE_OK)
      throw InternalError(fmt::format("sqlite: {} in: {}", sqlite3_errmsg(db), sql));
  }
  ~Stmt() { sqlite3_finalize(s_); }
  sqlite3_stmt* get() { return s_; }
  bool step() {
    int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw UserError(fmt::format("sweep database: {}", sqlite3_errmsg(db_)));
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* s_ = nullptr;
};

void bind(sqlite3_stmt* s, int i, const PointResult& r, const FieldPtr& p) {
  std::visit(
      [&](auto ptr) {
        const auto& v = r.*ptr;
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>) sqlite3_bind_text(s, i, v.c_str(), int(v.size()), SQLITE_TRANSIENT);
        else if constexpr (std::is_same_v<T, double>) sqlite3_bind_double(s, i, v);
        else if constexpr (std::is_integral_v<T>) sqlite3_bind_int64(s, i, int64_t(v));
        else {
          std::string j = layers_json(v);
          sqlite3_bind_text(s, i, j.c_str(), int(j.size()), SQLITE_TRANSIENT);
        }
      },
      p);
}

void read(sqlite3_stmt* s, int i, PointResult& r, const FieldPtr& p) {
  std::visit(
      [&](auto ptr) {
        auto& v = r.*ptr;
        using T = std::decay_t<decltype(v)>;
        auto text = [&] {
          const unsigned char* t = sqlite3_column_text(s, i);
          return t ? std::string(reinterpret_cast<const char*>(t)) : std::string();
        };
        if constexpr (std::is_same_v<T, std::string>) v = text();
        else if constexpr (std::is_same_v<T, double>) v = sqlite3_column_double(s, i);
        else if constexpr (std::is_integral_v<T>) v = T(sqlite3_column_int64(s, i));
        else v = layers_from_json(text());
      },
      p);
}

}  // namespace

Database::Database(const std::filesystem::path& path, bool read_only) : path_(path) {
  if (read_only && !std::filesystem::exists(path))
    throw UserError(fmt::format("{}: no such sweep database (run the sweep first, or give --db)", path.string()));
  int flags = read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  if (sqlite3_open_v2(path.string().c_str(), &db_, flags, nullptr) != SQLITE_OK) {
    std::string e = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw UserError(fmt::format("{}: cannot open the sweep database: {}", path.string(), e));
  }
  sqlite3_busy_timeout(db_, 10000);
  try {
    if (!read_only) {
      // WAL: a reader (export, plot) never blocks the running sweep; NORMAL sync keeps every
      // committed point across a killed process (not across a power cut of the machine).
      exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;");
      std::string cols;
      for (const ResultField& f : result_fields())
        cols += fmt::format("{}\"{}\" {}{}", cols.empty() ? "" : ", ", f.name, sql_type(f.ptr), f.name == "key" ? " PRIMARY KEY" : "");
      exec(fmt::format("CREATE TABLE IF NOT EXISTS points ({});", cols));
      exec("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);");
    }
    // A database an older vtpu wrote lacks the fields added since: they are added (empty)
    // when writing, and read as empty.
    std::set<std::string> have;
    Stmt info(db_, "PRAGMA table_info(points)");
    while (info.step()) have.insert(reinterpret_cast<const char*>(sqlite3_column_text(info.get(), 1)));
    if (!have.count("key") || !have.count("status")) throw InternalError("no points table with key and status");
    for (const ResultField& f : result_fields()) {
      if (have.count(std::string(f.name))) continue;
      if (read_only) missing_.insert(std::string(f.name));
      else exec(fmt::format("ALTER TABLE points ADD COLUMN \"{}\" {}", f.name, sql_type(f.ptr)));
    }
  } catch (const InternalError& e) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw UserError(fmt::format("{}: not a vtpu sweep database, or one of another version ({})", path.string(), e.what()));
  } catch (...) {  // a UserError of exec() or step(), e.g. a file that is not SQLite: no destructor will close it
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  }
}

Database::~Database() { sqlite3_close(db_); }

void Database::exec(const std::string& sql) const {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string e = err ? err : "?";
    sqlite3_free(err);
    throw UserError(fmt::format("{}: sweep database: {}", path_.string(), e));
  }
}

std::map<std::string, std::string> Database::statuses() const {
  std::map<std::string, std::string> out;
  Stmt s(db_, "SELECT \"key\", \"status\" FROM points");
  while (s.step())
    out[reinterpret_cast<const char*>(sqlite3_column_text(s.get(), 0))] = reinterpret_cast<const char*>(sqlite3_column_text(s.get(), 1));
  return out;
}

bool Database::has(const std::string& key) const {
  Stmt s(db_, "SELECT 1 FROM points WHERE \"key\" = ?");
  sqlite3_bind_text(s.get(), 1, key.c_str(), int(key.size()), SQLITE_TRANSIENT);
  return s.step();
}

void Database::put(const PointResult& r) {
  std::string marks;
  for (size_t i = 0; i < result_fields().size(); ++i) marks += i ? ", ?" : "?";
  Stmt s(db_, fmt::format("INSERT OR REPLACE INTO points ({}) VALUES ({})", column_list(), marks));
  int i = 1;
  for (const ResultField& f : result_fields()) bind(s.get(), i++, r, f.ptr);
  s.step();
}

std::vector<PointResult> Database::all() const {
  std::vector<PointResult> out;
  std::string cols;
  for (const ResultField& f : result_fields())
    if (!missing_.count(std::string(f.name))) cols += fmt::format("{}\"{}\"", cols.empty() ? "" : ", ", f.name);
  Stmt s(db_, "SELECT " + cols + " FROM points ORDER BY \"grid_index\", \"key\"");
  while (s.step()) {
    PointResult r;
    int i = 0;
    for (const ResultField& f : result_fields())
      if (!missing_.count(std::string(f.name))) read(s.get(), i++, r, f.ptr);
    out.push_back(std::move(r));
  }
  return out;
}

size_t Database::count() const {
  Stmt s(db_, "SELECT COUNT(*) FROM points");
  s.step();
  return size_t(sqlite3_column_int64(s.get(), 0));
}

void Database::set_meta(const std::string& key, const std::string& value) {
  Stmt s(db_, "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)");
  sqlite3_bind_text(s.get(), 1, key.c_str(), int(key.size()), SQLITE_TRANSIENT);
  sqlite3_bind_text(s.get(), 2, value.c_str(), int(value.size()), SQLITE_TRANSIENT);
  s.step();
}

std::optional<std::string> Database::meta(const std::string& key) const {
  Stmt s(db_, "SELECT value FROM meta WHERE key = ?");
  sqlite3_bind_text(s.get(), 1, key.c_str(), int(key.size()), SQLITE_TRANSIENT);
  if (!s.step()) return std::nullopt;
  return std::string(reinterpret_cast<const char*>(sqlite3_column_text(s.get(), 0)));
}

Database::MergeStats Database::merge_from(const std::filesystem::path& other) {
  { Database check(other, true); }  // a readable sweep database of this version
  MergeStats m;
  Stmt attach(db_, "ATTACH DATABASE ? AS other");
  std::string p = other.string();
  sqlite3_bind_text(attach.get(), 1, p.c_str(), int(p.size()), SQLITE_TRANSIENT);
  attach.step();
  try {
    exec("BEGIN");
    Stmt dup(db_, "SELECT COUNT(*), COALESCE(SUM(o.\"status\" != p.\"status\" OR o.\"cycles\" != p.\"cycles\"), 0) FROM "
                  "other.points o JOIN main.points p ON o.\"key\" = p.\"key\"");
    dup.step();
    m.duplicates = size_t(sqlite3_column_int64(dup.get(), 0));
    m.conflicts = size_t(sqlite3_column_int64(dup.get(), 1));
    exec(fmt::format("INSERT OR IGNORE INTO main.points ({0}) SELECT {0} FROM other.points", column_list()));
    m.added = size_t(sqlite3_changes(db_));
    exec("INSERT OR IGNORE INTO main.meta (key, value) SELECT key, value FROM other.meta");
    exec("COMMIT");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    exec("DETACH DATABASE other");
    throw;
  }
  exec("DETACH DATABASE other");
  return m;
}

}  // namespace vtpu::sweep
