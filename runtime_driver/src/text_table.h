#pragma once
// Internal to the runtime: text tables whose columns are as wide as their widest cell.
#include <algorithm>
#include <string>
#include <vector>

namespace vtpu::runtime::detail {

// Display width of a UTF-8 string: code points, not bytes (names may be non-ASCII).
inline size_t width(const std::string& s) {
  return size_t(std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

// A text table whose every column is as wide as its widest cell; numbers right-aligned.
struct TextTable {
  std::vector<std::string> header;
  std::vector<bool> right;  // per column
  std::vector<std::vector<std::string>> rows;

  std::string render() const {
    std::vector<size_t> w(header.size());
    for (size_t c = 0; c < header.size(); ++c) w[c] = width(header[c]);
    for (const auto& r : rows)
      for (size_t c = 0; c < r.size(); ++c) w[c] = std::max(w[c], width(r[c]));
    std::string o;
    auto line = [&](const std::vector<std::string>& cells) {
      std::string l;
      for (size_t c = 0; c < cells.size(); ++c) {
        std::string pad(w[c] - width(cells[c]), ' ');
        if (c) l += "  ";
        l += right[c] ? pad + cells[c] : cells[c] + pad;
      }
      while (!l.empty() && l.back() == ' ') l.pop_back();
      o += l + "\n";
    };
    line(header);
    for (const auto& r : rows) line(r);
    return o;
  }
};

}  // namespace vtpu::runtime::detail
