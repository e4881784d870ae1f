// lockstep verify: every backend over seeded contexts, every logit and
// cache word compared byte for byte across the cached step, the full-prefix
// pass and the prefill, and across backends; an evidence bundle; --against
// an earlier bundle. lockstep bisect: where two bundles (or two backends of
// one) first differ. docs/verify.md.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <sstream>

#include "backends/backend.h"
#include "cli/commands.h"
#include "cli/generate_args.h"
#include "cli/model_args.h"
#include "cli/progress.h"
#include "formats/gpt2_checkpoint.h"
#include "formats/gpt2_q8.h"
#include "hosts/native/wasm_host.h"
#include "lib/verify.h"
#include "lib/verify_bundle.h"
#include "lib/verify_tiny.h"
#include "lockstep/error.h"
#include "lockstep/paths.h"
#include "tokenizer/bpe.h"

namespace lockstep::cli {
namespace {

namespace fs = std::filesystem;

struct VerifyArgs {
  ModelArgs model;
  VerifyOptions options;
  std::string backends;  // comma-separated; empty: every available one
  std::string threads = "0";
  std::string bundle, against;
  bool bisect = false, quiet = false;
  std::string command;
  // Given on the command line (the tiny models take --bound and refuse
  // --threads and --quant).
  bool threads_given = false, quant_given = false, bound_given = false;
};

std::vector<std::string> split_list(const std::string& s, const char* what) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) throw Error(std::string("empty item in ") + what);
    out.push_back(item);
  }
  if (out.empty()) throw Error(std::string("empty ") + what);
  if (s.back() == ',') throw Error(std::string("empty item in ") + what);
  return out;
}

// True when this build made the WebAssembly module and node can run it.
bool wasm_available() {
  if (wasm_module_sha256() == "(not built)") return false;
  if (!fs::exists(wasm_module_path())) return false;
  const char* path = std::getenv("PATH");
  std::stringstream in(path ? path : "");
  std::string dir;
  while (std::getline(in, dir, ':')) {
    if (!dir.empty() && access((dir + "/node").c_str(), X_OK) == 0) {
      return true;
    }
  }
  return false;
}

// A packed copy of HF weights for the wasm backend, removed afterwards.
struct TempPacked {
  std::string path;
  ~TempPacked() {
    if (!path.empty()) {
      std::error_code ec;
      fs::remove(path, ec);
    }
  }
};

// 1234567 -> "1,234,567".
std::string human(uint64_t n) {
  const std::string digits = std::to_string(n);
  std::string s;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) s.push_back(',');
    s.push_back(digits[i]);
  }
  return s;
}

// "random:124M:SEED" (or 355M, 774M, 1558M): the seeded random GPT-2 of
// docs/gpt2-format.md "Random checkpoints", or nullopt for anything else.
std::optional<std::pair<ls_gpt2_config, uint64_t>> random_model(
    const std::string& spec) {
  if (spec.rfind("random:", 0) != 0) return std::nullopt;
  const std::string rest = spec.substr(7);
  const size_t colon = rest.find(':');
  std::vector<std::string> parts = {rest.substr(0, colon)};
  if (colon != std::string::npos) parts.push_back(rest.substr(colon + 1));
  const std::map<std::string, ls_gpt2_config> sizes = {{"124M", kGpt2_124M},
                                                       {"355M", kGpt2_355M},
                                                       {"774M", kGpt2_774M},
                                                       {"1558M", kGpt2_1558M}};
  size_t used = 0;
  uint64_t seed = 0;
  try {
    if (parts.size() == 2) seed = std::stoull(parts[1], &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (parts.size() != 2 || !sizes.count(parts[0]) || used != parts[1].size()) {
    throw Error("--model '" + spec +
                "': a random model is random:SIZE:SEED, SIZE one of 124M, "
                "355M, 774M, 1558M");
  }
  return std::make_pair(sizes.at(parts[0]), seed);
}

// A temporary packed file, removed when this goes.
std::string temp_packed_path(const char* what) {
  std::string name = "lockstep-verify-";
  name += what;
  name += '-';
  name += std::to_string(getpid());
  name += ".lockstep";
  return (fs::temp_directory_path() / name).string();
}

bool record_is_tiny(const nlohmann::json& rec) {
  return rec.at("model").value("kind", "gpt2") == "tiny";
}

// --backends wasm where it cannot run.
void require_wasm() {
  if (!wasm_available()) {
    throw Error(
        "--backends wasm: this build has no WebAssembly module or node is "
        "not on PATH (docs/wasm.md)");
  }
}

// --against: the earlier record, which must be of the same kind of model
// (tiny or GPT-2), with the settings both kinds take from it (contexts,
// lengths, seed, completions, operation digests) put into a.options; the
// record's options are returned for what only one kind takes.
VerifyOptions read_against(VerifyArgs& a, bool tiny, nlohmann::json& before) {
  before = read_verify_record(a.against);
  if (record_is_tiny(before) != tiny) {
    const char* record_kind = tiny ? "a GPT-2 model" : "a tiny model";
    const char* model_kind = tiny ? "a tiny model" : "a GPT-2 model";
    throw Error("--against '" + a.against + "': the record is of " +
                record_kind + ", --model '" + a.model.label() + "' is " +
                model_kind);
  }
  const VerifyOptions o = options_from_record(before);
  a.options.contexts = o.contexts;
  a.options.min_length = o.min_length;
  a.options.max_length = o.max_length;
  a.options.seed = o.seed;
  a.options.completion_tokens = o.completion_tokens;
  a.options.op_hashes = o.op_hashes;
  return o;
}

// The progress bar of a run (none with --quiet), made at the first report.
struct Progress {
  bool quiet;
  std::unique_ptr<ProgressBar> bar;
  VerifyProgress report() {
    return [this](long done, long total, const std::string& status) {
      if (quiet) return;
      if (!bar) bar = std::make_unique<ProgressBar>("verify", total);
      bar->update(done, status);
    };
  }
  void finish() {
    if (bar) bar->finish();
  }
};

// The summary both kinds print: `model` is what follows the label in
// parentheses, `unit` what the contexts are counted in ("" or "; bytes"),
// `paths` and `cache` their lines.
void print_summary(const VerifyArgs& a, const VerifyResult& r, int n_ctx,
                   const std::string& model, const char* unit,
                   const std::string& paths, const std::string& cache) {
  std::string backends_run;
  for (const auto& b : r.backends) {
    backends_run += (backends_run.empty() ? "" : ", ") + b.name;
  }
  const int max_len =
      a.options.max_length > 0 ? std::min(a.options.max_length, n_ctx) : n_ctx;
  std::printf("lockstep verify: %s\n", r.mismatches == 0 ? "PASSED" : "FAILED");
  std::printf("  model                 %s (%s)\n", a.model.label().c_str(),
              model.c_str());
  std::printf("  backends              %s\n", backends_run.c_str());
  std::printf(
      "  contexts              %d (%s positions; seed %llu; lengths "
      "%d..%d%s)\n",
      r.contexts, human(r.positions).c_str(),
      (unsigned long long)a.options.seed,
      std::clamp(a.options.min_length, 1, max_len), max_len, unit);
  std::printf("  paths                 %s\n", paths.c_str());
  std::printf("  logits compared       %s\n", human(r.logits_compared).c_str());
  std::printf("  cache words compared  %s\n", cache.c_str());
  std::printf("  mismatches            %s\n", human(r.mismatches).c_str());
  if (r.first) {
    std::printf("  first mismatch        %s\n", r.first->describe().c_str());
  }
}

// The record's command, model and the files both kinds name first: this
// binary and, when wasm ran, the module.
VerifyProvenance base_provenance(const VerifyArgs& a, bool uses_wasm) {
  VerifyProvenance p;
  p.command = a.command;
  p.model = a.model.label();
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  p.files.push_back({"lockstep binary", ec ? "/proc/self/exe" : exe.string()});
  if (uses_wasm) p.files.push_back({"wasm module", wasm_module_path()});
  return p;
}

// Prints the lines both kinds share after the run: bisect, the bundle,
// --against. Returns the status.
int finish(const VerifyArgs& a, bool pass, const nlohmann::json& before,
           const nlohmann::json& record) {
  if (a.bisect) {
    const std::vector<std::string> lines = bisect_backends(record);
    for (const auto& l : lines)
      std::printf("  bisect                %s\n", l.c_str());
    if (lines.empty())
      std::printf("  bisect                every backend's digests agree\n");
  }
  if (!a.bundle.empty()) {
    write_verify_bundle(a.bundle, record);
    std::printf(
        "  bundle                %s (record.json, report.md, steps.svg)\n",
        a.bundle.c_str());
  }
  int rc = pass ? 0 : 1;
  if (!a.against.empty()) {
    const std::vector<std::string> diffs = compare_records(before, record);
    if (diffs.empty()) {
      std::printf("  against               %s: every digest agrees\n",
                  a.against.c_str());
    } else {
      for (const auto& d : diffs) {
        std::printf("  against               DIFFERS: %s\n", d.c_str());
      }
      rc = 1;
    }
  }
  return rc;
}

// The tiny binary64 models (docs/verify.md "Tiny models"): the native
// core's checked entry and the WebAssembly module's at every prefix, the
// every-position pass, operation digests, the same record and checks.
int run_tiny(VerifyArgs& a) {
  if (a.quant_given && a.options.quant != "none") {
    throw Error("--quant " + a.options.quant +
                ": the tiny models are binary64 and have no int8 form "
                "(--quant is for GPT-2 models)");
  }
  if (a.threads_given) {
    throw Error(
        "--threads: the tiny models have no multi-threaded backend (the "
        "reference and wasm run one thread); leave --threads out");
  }
  const TinyModel m = load_tiny(a.model.path());
  nlohmann::json before;
  if (!a.against.empty()) {
    const VerifyOptions o = read_against(a, true, before);
    if (a.bound_given && a.options.bound != o.bound) {
      throw Error("--bound " + std::to_string(a.options.bound) +
                  ": the record was made with bound " +
                  std::to_string(o.bound) + " (leave --bound out)");
    }
    a.options.bound = o.bound;
  }
  a.options.quant = "none";
  a.options.threads = {1};
  std::vector<std::string> names;
  if (a.backends.empty()) {
    names = {"reference"};
    if (wasm_available()) names.push_back("wasm");
  } else {
    names = split_list(a.backends, "--backends");
    const auto& known = tiny_verify_backend_names();
    for (const std::string& n : names) {
      if (std::find(known.begin(), known.end(), n) == known.end()) {
        throw Error("--backends: '" + n +
                    "' does not run the tiny models: they run on the "
                    "binary64 core (reference) and in the WebAssembly "
                    "module (wasm)");
      }
      if (n == "wasm") require_wasm();
    }
  }
  a.options.backends = names;
  const bool uses_wasm =
      std::find(names.begin(), names.end(), "wasm") != names.end();

  const std::string text_path = data_dir() + "/tinyshakespeare.txt";
  const std::vector<VerifyContext> contexts =
      make_tiny_verify_contexts(m.n_ctx, read_all_bytes(text_path), a.options);
  Progress progress{a.quiet, nullptr};
  const VerifyResult r =
      run_verify_tiny(m, contexts, a.options, progress.report());
  progress.finish();

  const bool pass = r.mismatches == 0;
  char model[96];
  std::snprintf(model, sizeof model,
                "tiny binary64, 1 layer, n_embd 4, n_ctx %d; bound %g", m.n_ctx,
                a.options.bound);
  print_summary(a, r, m.n_ctx, model, "; bytes",
                std::string("checked entry at every prefix, every-position "
                            "pass") +
                    (a.options.op_hashes ? " (with operation digests)" : ""),
                "0 (the tiny models keep no cache: no cached step or prefill)");

  VerifyProvenance p = base_provenance(a, uses_wasm);
  p.files.push_back({"weights", a.model.path()});
  p.files.push_back({"tinyshakespeare.txt", text_path});
  const nlohmann::json record = verify_tiny_record(r, a.options, m, p);
  return finish(a, pass, before, record);
}

int run(VerifyArgs& a) {
  const auto random = random_model(a.model.model);
  if (!random && a.model.kind() == ModelKind::kTiny) return run_tiny(a);
  if (a.bound_given) {
    throw Error(
        "--bound: the weight bound is the tiny models' (a GPT-2 model has "
        "none)");
  }
  nlohmann::json before;
  if (!a.against.empty()) {
    read_against(a, false, before);
    // An int8 record checked from the binary32 model: quantize it here
    // first, as the record's run did or as `convert --quant int8` does
    // (the same bytes either way; the int8 payload digest is compared).
    const bool int8_record = before.at("model").value("quant", "f32") == "int8";
    a.options.quant =
        int8_record && (random || !is_gpt2_q8_file(a.model.path())) ? "int8"
                                                                    : "none";
  }
  std::vector<std::string> names;
  if (a.backends.empty()) {
    names = backends::available_gpt2_backends();
    if (wasm_available()) names.push_back("wasm");
  } else {
    names = split_list(a.backends, "--backends");
    // Checked before anything runs: a name this machine cannot run.
    std::vector<std::string> known = backends::available_gpt2_backends();
    known.push_back("cpu");
    std::string list;
    for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
    for (const std::string& n : names) {
      if (n == "wasm") {
        require_wasm();
      } else if (std::find(known.begin(), known.end(), n) == known.end()) {
        throw Error("--backends: '" + n +
                    "' is not a backend this machine can run (" + list +
                    ", wasm)");
      }
    }
  }
  a.options.backends = names;
  a.options.threads.clear();
  for (const std::string& t : split_list(a.threads, "--threads")) {
    size_t used = 0;
    int v = -1;
    try {
      v = std::stoi(t, &used);
    } catch (const std::exception&) {
    }
    if (used != t.size() || v < 0 || v > 256) {
      throw Error("--threads: '" + t + "' is not a count in 0..256");
    }
    a.options.threads.push_back(v);
  }

  // A random model is written to a temporary packed file (no weights to
  // download or commit; the record's digest pins them); with --quant int8
  // to a temporary int8 file instead, quantized in memory.
  const bool quantize = a.options.quant == "int8";
  TempPacked random_file, q8_file;
  if (random) {
    const std::vector<float> words =
        random_gpt2_weights(random->first, random->second);
    if (quantize) {
      random_file.path = temp_packed_path("random-int8");
      write_gpt2_q8(random_file.path, random->first, words.data(),
                    {{"source", a.model.model}});
    } else {
      random_file.path = temp_packed_path("random");
      write_gpt2_packed(random_file.path, random->first, words.data(),
                        words.size());
    }
  }
  std::string path = random ? random_file.path : a.model.path();
  if (quantize && !random) {
    if (is_gpt2_q8_file(path)) {
      throw Error("--quant int8: '" + path +
                  "' is already an int8 file (verify it without --quant)");
    }
    // As `lockstep convert --quant int8` writes it (the source validated,
    // digest included).
    q8_file.path = temp_packed_path("int8");
    convert_gpt2_q8(path, q8_file.path);
    path = q8_file.path;
  }
  // The one place weights are loaded: a binary32 file or folder, or an
  // int8 file (docs/int8.md), whose int8 view every backend then runs and
  // whose reference operations are the int8 pass's.
  Gpt2Weights w = load_gpt2_any(path);
  const bool int8 = w.quant == "int8";
  std::string given_format = random                             ? "random"
                             : !quantize                        ? w.format
                             : fs::is_directory(a.model.path()) ? "hf"
                                                                : "packed";
  if (int8) {
    given_format +=
        quantize ? ", quantized here to int8 q8g64" : ", int8 q8g64";
  }

  // The wasm backend reads packed files only: an HF folder is packed to a
  // temporary file (plain layout, the same weights) and every backend runs
  // from it.
  TempPacked temp;
  std::string run_path = path;
  bool uses_wasm = false;
  for (const auto& n : names) uses_wasm = uses_wasm || n == "wasm";
  if (uses_wasm && !int8 && w.format != "packed") {
    temp.path = temp_packed_path("hf");
    write_gpt2_packed(temp.path, w.config, w.data(), w.words());
    w = load_gpt2(temp.path);
    run_path = temp.path;
  }
  const ls_gpt2_config& c = w.config;

  const std::string gpt2_dir = data_dir() + "/gpt2";
  const std::string text_path = data_dir() + "/tinyshakespeare.txt";
  const Tokenizer tok = Tokenizer::load(gpt2_dir);
  const std::vector<VerifyContext> contexts =
      make_verify_contexts(c, tok, read_all_bytes(text_path), a.options);

  Progress progress{a.quiet, nullptr};
  const VerifyResult r =
      run_verify(w, run_path, contexts, tok, a.options, progress.report());
  progress.finish();

  const bool pass = r.mismatches == 0;
  print_summary(a, r, c.n_ctx,
                given_format + ", " + std::to_string(c.n_layer) +
                    " layers, n_embd " + std::to_string(c.n_embd) + ", n_ctx " +
                    std::to_string(c.n_ctx),
                "",
                std::string("cached step, full-prefix pass, prefill (whole "
                            "and chunked)") +
                    (a.options.op_hashes ? ", observed reference pass" : ""),
                human(r.cache_words_compared));

  VerifyProvenance p = base_provenance(a, uses_wasm);
  // The weights as given (with --quant int8 the binary32 source; the int8
  // file made from it is temporary, pinned by the record's digests).
  const std::string given = random ? "" : a.model.path();
  if (random) {
    // Nothing to hash but the weights' digest, in the record's "model".
  } else if (fs::is_directory(given)) {
    p.files.push_back(
        {"config.json", (fs::path(given) / "config.json").string()});
    p.files.push_back({"model.safetensors",
                       (fs::path(given) / "model.safetensors").string()});
  } else {
    p.files.push_back({quantize ? "binary32 weights" : "weights", given});
  }
  p.files.push_back({"encoder.json", gpt2_dir + "/encoder.json"});
  p.files.push_back({"vocab.bpe", gpt2_dir + "/vocab.bpe"});
  p.files.push_back({"tinyshakespeare.txt", text_path});
  nlohmann::json record = verify_record(r, a.options, w, p);
  if (!temp.path.empty()) {
    record["model"]["format"] = given_format + " (run from a packed copy)";
  }
  return finish(a, pass, before, record);
}

int run_bisect(const std::vector<std::string>& bundles) {
  std::vector<std::string> lines;
  if (bundles.size() == 1) {
    lines = bisect_backends(read_verify_record(bundles[0]));
  } else {
    lines = bisect_records(read_verify_record(bundles[0]),
                           read_verify_record(bundles[1]));
  }
  if (lines.empty()) {
    std::printf("no difference: every digest agrees\n");
    return 0;
  }
  for (const auto& l : lines) std::printf("%s\n", l.c_str());
  return 1;
}

std::string joined_args() {
  // The command line as given, for the record (from /proc/self/cmdline).
  std::FILE* f = std::fopen("/proc/self/cmdline", "rb");
  if (!f) return "lockstep verify";
  std::string s;
  int ch;
  while ((ch = std::fgetc(f)) != EOF) s.push_back(ch == 0 ? ' ' : char(ch));
  std::fclose(f);
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

}  // namespace

Action add_verify(CLI::App& app) {
  auto a = std::make_shared<VerifyArgs>();
  a->model.add(app);
  app.add_option("--contexts", a->options.contexts,
                 "prompts to run (alternately Tiny Shakespeare and random ids; "
                 "bytes for the tiny models)")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_option("--max-length", a->options.max_length,
                 "longest context in tokens; 0: n_ctx (the first context has "
                 "this length)")
      ->check(CLI::Range(0, 1 << 20))
      ->capture_default_str();
  app.add_option("--min-length", a->options.min_length, "shortest context")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--seed", a->options.seed, "seed of lengths, offsets, ids")
      ->capture_default_str();
  app.add_option("--backends", a->backends,
                 "comma-separated: reference, cpu, cpu-avx512, cpu-avx2, "
                 "cpu-generic, wasm (tiny models: reference, wasm); "
                 "default: every one this machine and build can run");
  auto* threads =
      app.add_option("--threads", a->threads,
                     "comma-separated thread counts for each cpu backend (0: "
                     "all cores); every count is run (GPT-2 only)")
          ->capture_default_str();
  auto* quant =
      app.add_option(
             "--quant", a->options.quant,
             "none, or int8: quantize a binary32 model (folder, file or "
             "random:SIZE:SEED) to a temporary int8 file first, as "
             "`lockstep convert --quant int8` does, and verify that "
             "(an int8 file is verified as it is, without --quant)")
          ->check(CLI::IsMember({"none", "int8"}))
          ->capture_default_str();
  auto* bound =
      app.add_option("--bound,-B", a->options.bound,
                     "tiny models: the checked entry's weight bound B (every "
                     "weight clipped to [-B, B]), as `generate --bound`")
          ->check(number_in(0.0, 10.0,
                            "weight bound B must be a number in [0, 10]"))
          ->capture_default_str();
  app.add_option("--completion-tokens", a->options.completion_tokens,
                 "greedy tokens per completion prompt")
      ->check(CLI::Range(0, 4096))
      ->capture_default_str();
  app.add_flag(
      "--no-op-hashes", [a](int64_t) { a->options.op_hashes = false; },
      "skip the reference's per-operation digests (one pass less)");
  app.add_option("--bundle", a->bundle,
                 "write DIR/record.json, report.md and steps.svg");
  app.add_option("--against", a->against,
                 "an earlier bundle (folder or record.json): run with its "
                 "settings and check every digest")
      ->check(CLI::ExistingPath);
  app.add_flag("--bisect", a->bisect,
               "name the first layer and operation where backends differ");
  app.add_flag("--quiet,-q", a->quiet, "no progress bar");
  app.footer(
      "Cost: every backend runs each context four ways (cached step, full "
      "pass,\nwhole and chunked prefill), plus one observed reference pass. "
      "For a 124M\nmodel on 2 cores start with --contexts 4 --max-length 64 "
      "(docs/verify.md).\n\n"
      "Examples:\n"
      "  lockstep verify --model tests/data/hf-gpt2-A --contexts 16\n"
      "  lockstep verify --model gpt2.lockstep --contexts 4 --max-length 64 "
      "--bundle ev\n"
      "  lockstep verify --model gpt2.lockstep --against ev\n"
      "  lockstep verify --model gpt2-int8.lockstep --contexts 4 "
      "--max-length 64\n"
      "  lockstep verify --model random:124M:1 --quant int8 --contexts 2\n"
      "  lockstep verify --model random:124M:1 --contexts 2 --max-length 16\n"
      "    (a seeded random full-size GPT-2, generated on the fly: SIZE "
      "124M,\n    355M, 774M or 1558M)\n"
      "  lockstep verify --model tiny128 --bundle ev-tiny128\n"
      "    (a tiny binary64 model: the checked entry natively and in wasm at\n"
      "    every prefix, and the every-position pass; docs/verify.md)\n");
  return [a, threads, quant, bound]() {
    a->command = joined_args();
    a->threads_given = threads->count() > 0;
    a->quant_given = quant->count() > 0;
    a->bound_given = bound->count() > 0;
    return run(*a);
  };
}

Action add_bisect(CLI::App& app) {
  auto bundles = std::make_shared<std::vector<std::string>>();
  app.add_option("bundles", *bundles,
                 "one bundle (its backends compared) or two (compared with "
                 "each other)")
      ->required()
      ->expected(1, 2)
      ->check(CLI::ExistingPath);
  app.footer(
      "Names the first layer and operation where the digests differ: the "
      "reference's\noperations in pass order (embed, h0.ln1, h0.qkv, ..., "
      "ln_f, logits), then each\nbackend's per-layer keys and values and "
      "its logits. Exit 1 when something differs.");
  return [bundles]() { return run_bisect(*bundles); };
}

}  // namespace lockstep::cli
