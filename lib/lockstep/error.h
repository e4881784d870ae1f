// The one exception type of the lockstep C++ library. Messages name the
// problem (and, for files, the path and offset) so that the CLI can print
// them as they are.
#ifndef LOCKSTEP_LIB_LOCKSTEP_ERROR_H_
#define LOCKSTEP_LIB_LOCKSTEP_ERROR_H_

#include <stdexcept>
#include <string>

namespace lockstep {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace lockstep

#endif  // LOCKSTEP_LIB_LOCKSTEP_ERROR_H_
