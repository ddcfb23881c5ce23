#pragma once
// Reading and writing files named by the user, and names that come from inputs (graph
// output names, a program's tensor names) that become file names: nothing is read from
// an endless device, no write fails silently, nothing is written outside the directory
// the user gave. Errors are UserErrors naming the file.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iostream>
#include <ostream>
#include <string>
#include <string_view>

#include "vtpu/support/error.h"

namespace vtpu {

// A name that is one file name and nothing more: not empty, at most 255 bytes, no '/'
// and no NUL, not "." or "..". Graph output names and a program's tensor names must be
// such names before they become NAME.npy in an output directory.
inline bool is_plain_file_name(std::string_view name) {
  return !name.empty() && name.size() <= 255 && name != "." && name != ".." &&
         name.find('/') == std::string_view::npos && name.find('\0') == std::string_view::npos;
}

// `dir / (name + suffix)` for a name from an input file; throws when the name is not a
// plain file name (so `../x` or `/abs/x` can never leave `dir`). `what` says whose name.
inline std::filesystem::path file_in_dir(const std::filesystem::path& dir, const std::string& name,
                                         const std::string& suffix, const std::string& what) {
  if (!is_plain_file_name(name + suffix))
    throw UserError(what + " '" + name +
                    "' cannot be a file name (it is empty, '.', '..', longer than 255 bytes or holds '/' or NUL); "
                    "nothing was written for it");
  return dir / (name + suffix);
}

// Throws unless `path` names something vtpu can read to its end: a regular file or a
// pipe, not a directory or a device such as /dev/zero that never ends.
inline void require_readable_file(const std::filesystem::path& path, const std::string& what) {
  std::error_code ec;
  auto st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st))
    throw UserError(path.string() + ": cannot open " + what + " (does the file exist?)");
  if (std::filesystem::is_directory(st)) throw UserError(path.string() + ": is a directory, not " + what);
  if (!std::filesystem::is_regular_file(st) && !std::filesystem::is_fifo(st))
    throw UserError(path.string() + ": is not a regular file (a device?); give " + what + " as a file");
}

// Creates `dir` (and its parents) for output files; an error names it.
inline void make_output_dir(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir))
    throw UserError(dir.string() + ": cannot create the output directory (" +
                    (ec ? ec.message() : std::string("a file of that name exists")) + ")");
}

// Writes `bytes` (or the pieces, one after the other) to `path`, replacing it. Every failure
// (cannot create, disk full, a directory in the way) is a UserError naming the file: a report
// half-written is never reported as written.
template <typename Pieces>
void write_file_pieces(const std::filesystem::path& path, const Pieces& pieces) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw UserError(path.string() + ": cannot open for writing (" + std::strerror(errno) + ")");
  bool ok = true;
  for (std::string_view bytes : pieces)
    if (ok && !bytes.empty()) ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  int err = ok && std::fflush(f) == 0 ? 0 : errno;
  if (std::fclose(f) != 0 && err == 0) err = errno ? errno : EIO;
  if (err) throw UserError(path.string() + ": write failed (" + std::strerror(err) + ")");
}
inline void write_file(const std::filesystem::path& path, std::string_view bytes) {
  write_file_pieces(path, std::initializer_list<std::string_view>{bytes});
}

// A file written as a stream (a trace of millions of events): close() reports what the
// stream could not write, naming the file; a file never closed is a bug of the caller.
class OutputFile {
 public:
  explicit OutputFile(std::filesystem::path path) : path_(std::move(path)), f_(path_, std::ios::binary) {
    if (!f_) throw UserError(path_.string() + ": cannot open for writing (" + std::strerror(errno) + ")");
  }
  std::ostream& stream() { return f_; }
  void close() {
    f_.close();
    if (f_.fail()) throw UserError(path_.string() + ": write failed (disk full?)");
  }

 private:
  std::filesystem::path path_;
  std::ofstream f_;
};

// Flushes standard output and throws if anything written to it (std::cout or stdio) was
// lost: a full disk or a closed pipe behind stdout is an error, not a silent success.
inline void check_stdout() {
  std::cout.flush();
  std::fflush(stdout);
  if (std::ferror(stdout) || !std::cout) throw UserError("standard output: write failed (disk full or pipe closed?)");
}

// A command's exit code, after check_stdout().
inline int with_stdout_checked(int rc) {
  check_stdout();
  return rc;
}

}  // namespace vtpu
