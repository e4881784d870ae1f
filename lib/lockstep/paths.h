// Where shipped models and data live.
#ifndef LOCKSTEP_LIB_LOCKSTEP_PATHS_H_
#define LOCKSTEP_LIB_LOCKSTEP_PATHS_H_

#include <string>

namespace lockstep {

// The repository's models/ folder: $LOCKSTEP_MODELS if set, else the
// source tree this binary was built from.
std::string models_dir();
// The repository's data/ folder, likewise ($LOCKSTEP_DATA).
std::string data_dir();
// A shipped model name (tiny4, tiny64, tiny128) to its checkpoint path;
// throws lockstep::Error listing the names for anything else.
std::string builtin_model_path(const std::string& name);

}  // namespace lockstep

#endif  // LOCKSTEP_LIB_LOCKSTEP_PATHS_H_
