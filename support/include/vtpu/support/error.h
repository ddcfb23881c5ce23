#pragma once
// Error types shared by every vtpu library. The command-line tool maps them to exit codes:
//   0 success, 1 bad user input (UserError), 2 bad command line, 3 internal error.
// A UserError's message must say what is wrong, where (file:line:column or the bundle),
// and how to fix it; it is printed as is.
#include <stdexcept>
#include <string>

namespace vtpu {

enum ExitCode : int { kExitOk = 0, kExitUserError = 1, kExitUsage = 2, kExitInternal = 3 };

class UserError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An invariant of vtpu itself was broken: a bug, not the user's fault.
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

}  // namespace vtpu
