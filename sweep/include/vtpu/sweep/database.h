#pragma once
// The results of a sweep in SQLite: one row per point, keyed by the point's identity, so a
// killed sweep resumes where it stopped and a finished point never runs twice. Shards of a
// Slurm array job write databases of their own; merge() joins them (docs/sweeps.md).
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "vtpu/sweep/results.h"

struct sqlite3;

namespace vtpu::sweep {

class Database {
 public:
  // Opens (creating it and its table when missing) the database at `path`.
  explicit Database(const std::filesystem::path& path, bool read_only = false);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // Keys of the points recorded, with their status.
  std::map<std::string, std::string> statuses() const;
  bool has(const std::string& key) const;
  // Writes one point (replacing a row of the same key) in its own transaction.
  void put(const PointResult& r);
  std::vector<PointResult> all() const;  // by grid index
  size_t count() const;

  void set_meta(const std::string& key, const std::string& value);
  std::optional<std::string> meta(const std::string& key) const;

  struct MergeStats {
    size_t added = 0, duplicates = 0, conflicts = 0;  // conflicts: same key, other figures
  };
  // Adds the rows of another database; a key present in both keeps the row here.
  MergeStats merge_from(const std::filesystem::path& other);

  const std::filesystem::path& path() const { return path_; }

 private:
  void exec(const std::string& sql) const;
  std::filesystem::path path_;
  sqlite3* db_ = nullptr;
  std::set<std::string> missing_;  // fields an older database lacks (read-only opens)
};

}  // namespace vtpu::sweep
