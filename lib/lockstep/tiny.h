// The tiny byte-level GPT-2 models: loading, the checked entry, generation.
// A thin C++ layer over core/ls_tiny.h; all arithmetic happens in the core.
#ifndef LOCKSTEP_LIB_LOCKSTEP_TINY_H_
#define LOCKSTEP_LIB_LOCKSTEP_TINY_H_

#include <array>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "formats/checkpoint.h"
#include "lockstep/sampling.h"

namespace lockstep {

using TinyLogits = std::array<double, 256>;

struct TinyModel {
  int n_ctx = 0;
  std::vector<double> weights;  // 2472 + 4 * n_ctx words, docs/models.md
  std::string path;             // where it was loaded from, if anywhere
  std::string payload_sha256;   // hex, identifies the weights
  std::string file_sha256;      // hex, identifies the artifact
  nlohmann::json meta;          // provenance from the checkpoint header
};

// The tensor table of docs/models.md for a context length.
std::vector<TensorInfo> tiny_tensors(int n_ctx);
// 2472 + 4 * n_ctx; throws for n_ctx outside [1, 1024].
size_t tiny_param_count(int n_ctx);

// Loads a tiny checkpoint and checks it is exactly the documented layout.
TinyModel load_tiny(const std::string& path);
// Writes a tiny checkpoint atomically.
void save_tiny(const std::string& path, int n_ctx,
               const std::vector<double>& weights, const nlohmann::json& meta);

// The checked entry (docs/models.md): throws lockstep::Error naming the
// problem for a bad weight count, non-finite weight, bound outside [0, 10],
// empty or over-long sequence, or token outside [0, 256).
TinyLogits tiny_logits(int n_ctx, std::span<const double> weights,
                       std::span<const int32_t> tokens, double bound);
inline TinyLogits tiny_logits(const TinyModel& m,
                              std::span<const int32_t> tokens, double bound) {
  return tiny_logits(m.n_ctx, m.weights, tokens, bound);
}

// Generates n_new bytes after the prompt (at least one byte), feeding the
// model the last n_ctx bytes each step; on_token sees each byte as chosen.
std::vector<int32_t> tiny_generate(
    const TinyModel& m, std::span<const int32_t> prompt, int n_new,
    double bound, const SamplerOptions& sampler,
    const std::function<void(int32_t)>& on_token = {});

}  // namespace lockstep

#endif  // LOCKSTEP_LIB_LOCKSTEP_TINY_H_
