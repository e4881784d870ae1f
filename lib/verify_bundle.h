// The evidence bundle of lockstep verify (docs/verify.md): record.json,
// report.md and steps.svg in one folder; and the checks of --against and
// `lockstep bisect` on records.
#ifndef LOCKSTEP_LIB_VERIFY_BUNDLE_H_
#define LOCKSTEP_LIB_VERIFY_BUNDLE_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "formats/gpt2_checkpoint.h"
#include "lib/verify.h"
#include "lockstep/tiny.h"

namespace lockstep {

// What the record says about where the run happened, besides the result.
struct VerifyProvenance {
  std::string command;                                     // the command line
  std::string model;                                       // --model as given
  std::vector<std::pair<std::string, std::string>> files;  // label, path
  std::string wasm_module;  // path of the module used, or empty
};

// The JSON record (format "lockstep-verify/1"): settings, digests of the
// binary, module, weights, tokenizer and text files, the build (compiler,
// flags, recorded at configure time), the machine, totals, the first
// mismatch, per-layer and per-operation digests, completions, timings and
// memory per backend.
nlohmann::json verify_record(const VerifyResult& r, const VerifyOptions& o,
                             const Gpt2Weights& w, const VerifyProvenance& p);
// The same for a tiny model (run_verify_tiny): model.kind "tiny", its
// payload and file digests, settings.bound; no cache digests.
nlohmann::json verify_tiny_record(const VerifyResult& r, const VerifyOptions& o,
                                  const TinyModel& m,
                                  const VerifyProvenance& p);

// Writes DIR/record.json, DIR/report.md and DIR/steps.svg (each to a
// temporary, then renamed); creates DIR.
void write_verify_bundle(const std::string& dir, const nlohmann::json& record);

// Reads DIR/record.json (or the file itself); throws lockstep::Error
// naming the problem.
nlohmann::json read_verify_record(const std::string& path);

// The options a record was made with (contexts, lengths, seed, completion
// length, op hashes), for --against.
VerifyOptions options_from_record(const nlohmann::json& record);

// The differences between an earlier record and one computed now, each a
// line naming what differs: the weights, the contexts, each operation's
// digest (the first in pass order), each backend's logits and per-layer
// cache digests against the earlier record's first backend, the
// completions. Empty when everything agrees.
std::vector<std::string> compare_records(const nlohmann::json& before,
                                         const nlohmann::json& now);

// Bisect: the first layer and operation where two records differ (their
// reference operations, then each backend's per-layer cache digests), or
// where two backends of one record differ. Lines for the user; empty when
// nothing differs.
std::vector<std::string> bisect_records(const nlohmann::json& a,
                                        const nlohmann::json& b);
std::vector<std::string> bisect_backends(const nlohmann::json& record);

}  // namespace lockstep

#endif  // LOCKSTEP_LIB_VERIFY_BUNDLE_H_
