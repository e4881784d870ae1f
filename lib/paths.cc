#include "lockstep/paths.h"

#include <cstdlib>

#include "lockstep/error.h"

namespace lockstep {

std::string models_dir() {
  const char* env = std::getenv("LOCKSTEP_MODELS");
  return env && *env ? env : LOCKSTEP_SOURCE_DIR "/models";
}

std::string data_dir() {
  const char* env = std::getenv("LOCKSTEP_DATA");
  return env && *env ? env : LOCKSTEP_SOURCE_DIR "/data";
}

std::string builtin_model_path(const std::string& name) {
  if (name == "tiny4" || name == "tiny64" || name == "tiny128") {
    return models_dir() + "/" + name + ".lockstep";
  }
  throw Error("unknown model '" + name +
              "': shipped models are tiny4, tiny64, tiny128 (or pass "
              "--weights FILE)");
}

}  // namespace lockstep
