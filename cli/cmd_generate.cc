// lockstep generate: the next-byte distribution, all logits, or text.
#include <cinttypes>
#include <cstdio>
#include <sstream>

#include "cli/commands.h"
#include "cli/generate_args.h"
#include "hosts/native/wasm_host.h"
#include "lockstep/error.h"
#include "lockstep/tiny.h"

extern "C" {
#include "ls_ops64.h"
}

namespace lockstep::cli {

std::vector<int32_t> parse_token_list(const std::string& list) {
  std::vector<int32_t> out;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t used = 0;
    long v = 0;
    try {
      v = std::stol(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || v < INT32_MIN || v > INT32_MAX) {
      throw Error("--tokens: '" + item +
                  "' is not an integer (expected a comma-separated list such "
                  "as 84,111,32,98)");
    }
    out.push_back(int32_t(v));
  }
  return out;
}

namespace {

// A byte as it would appear in a C string literal.
std::string show_byte(int b) {
  char buf[8];
  if (b == '\n') return "\\n";
  if (b == '\t') return "\\t";
  if (b == '\'') return "\\'";
  if (b == '\\') return "\\\\";
  if (b >= 32 && b < 127) return std::string(1, char(b));
  std::snprintf(buf, sizeof buf, "\\x%02x", b);
  return buf;
}

std::string show_bytes(const std::vector<int32_t>& t) {
  std::string s;
  for (int32_t b : t) s += show_byte(b);
  return s;
}

}  // namespace

std::string escape_bytes(const std::string& bytes) {
  std::string s;
  for (char c : bytes) s += show_byte(uint8_t(c));
  return s;
}

std::string hex_float(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}

// tiny_generate's loop with the logits from the WebAssembly module.
static std::vector<int32_t> wasm_tiny_generate(
    WasmHost& wasm, int n_ctx, const std::vector<int32_t>& prompt,
    const GenerateArgs& a, const std::function<void(int32_t)>& on) {
  Sampler choose(a.sampler, 256);
  std::vector<int32_t> text = prompt, out;
  for (int i = 0; i < a.generate; ++i) {
    const size_t n = std::min(text.size(), size_t(n_ctx));
    const TinyLogits logits = wasm.tiny_logits(
        std::span<const int32_t>(text.data() + text.size() - n, n), a.bound);
    const int32_t next = choose.next(std::span<const double>(logits));
    text.push_back(next);
    out.push_back(next);
    on(next);
  }
  return out;
}

int run_tiny_generate(const GenerateArgs& args) {
  GenerateArgs a = args;
  if (a.sampler.top_k == kWholeVocabulary) a.sampler.top_k = 256;
  const Sampler check_options(a.sampler, 256);  // bad options fail early
  const TinyModel m = load_tiny(a.model.path());
  std::vector<int32_t> prompt =
      a.tokens.empty() ? std::vector<int32_t>(a.text.begin(), a.text.end())
                       : parse_token_list(a.tokens);
  for (auto& t : prompt) {
    if (a.tokens.empty()) t = int32_t(uint8_t(t));  // bytes, not chars
  }
  if (prompt.empty()) {
    throw Error(
        "the prompt is empty: give --text or --tokens with at least "
        "one byte");
  }
  // --backend wasm: the same checked entry in the WebAssembly module.
  std::unique_ptr<WasmHost> wasm;
  if (a.backend == "wasm") wasm = std::make_unique<WasmHost>(a.model.path());

  if (a.generate > 0) {
    std::string out_text;
    if (!a.json) std::fwrite(a.text.data(), 1, a.text.size(), stdout);
    const auto on_byte = [&](int32_t b) {
      out_text.push_back(char(b));
      if (!a.json) {
        std::fputc(b, stdout);
        std::fflush(stdout);
      }
    };
    const auto gen =
        wasm
            ? wasm_tiny_generate(*wasm, m.n_ctx, prompt, a, on_byte)
            : tiny_generate(m, prompt, a.generate, a.bound, a.sampler, on_byte);
    if (a.json) {
      nlohmann::json j = {{"model", a.model.label()},
                          {"payload_sha256", m.payload_sha256},
                          {"prompt_tokens", prompt},
                          {"tokens", gen},
                          {"completion_escaped", show_bytes(gen)}};
      std::printf("%s\n", j.dump().c_str());
    } else {
      std::fputc('\n', stdout);
    }
    return 0;
  }

  // One forward pass over the last n_ctx bytes.
  std::vector<int32_t> window = prompt;
  if (window.size() > size_t(m.n_ctx)) {
    window.erase(window.begin(), window.end() - m.n_ctx);
    std::fprintf(stderr, "note: %s sees only the last %d bytes\n",
                 a.model.label().c_str(), m.n_ctx);
  }
  const TinyLogits logits = wasm ? wasm->tiny_logits(window, a.bound)
                                 : tiny_logits(m, window, a.bound);
  if (a.json) {
    nlohmann::json hexes = nlohmann::json::array();
    nlohmann::json values = nlohmann::json::array();
    for (double v : logits) {
      hexes.push_back(hex_float(v));
      values.push_back(v);
    }
    nlohmann::json j = {
        {"model", a.model.label()}, {"payload_sha256", m.payload_sha256},
        {"tokens", window},         {"bound", a.bound},
        {"logits_hex", hexes},      {"logits", values}};
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  if (a.logits) {
    for (int i = 0; i < 256; ++i) {
      std::printf("%3d %s\n", i, hex_float(logits[size_t(i)]).c_str());
    }
    return 0;
  }
  double probs[256];
  ls_softmax64(logits.data(), 256, probs);
  int order[256];
  for (int i = 0; i < 256; ++i) order[i] = i;
  std::stable_sort(order, order + 256,
                   [&](int x, int y) { return probs[x] > probs[y]; });
  std::printf("next byte after '%s' (%s, last %zu bytes)\n",
              show_bytes(window).c_str(), a.model.label().c_str(),
              window.size());
  std::printf("rank  byte   prob      logit\n");
  for (int r = 0; r < std::min(a.top, 256); ++r) {
    const int b = order[r];
    std::printf("%4d  %-5s  %.5f   %s\n", r + 1,
                ("'" + show_byte(b) + "'").c_str(), probs[b],
                hex_float(logits[size_t(b)]).c_str());
  }
  return 0;
}

Action add_generate(CLI::App& app) {
  auto a = std::make_shared<GenerateArgs>();
  a->model.add(app);
  auto* text = app.add_option("--text,-t", a->text, "prompt text (bytes)");
  auto* toks = app.add_option("--tokens", a->tokens,
                              "prompt as comma-separated byte values, "
                              "e.g. 84,111,32,98");
  text->excludes(toks);
  app.add_option("--generate,-n", a->generate,
                 "bytes to generate (0: print the next-byte distribution)")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--top", a->top, "rows of the distribution to print")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_flag("--logits", a->logits,
               "print all 256 logits as exact hex floats");
  app.add_flag("--json", a->json, "print one JSON object");
  app.add_flag("--full", a->full,
               "GPT-2: recompute the whole prefix for every token instead "
               "of the KV cache (same tokens, slower)");
  app.add_flag("--special", a->special,
               "GPT-2: '<|endoftext|>' in --text is token 50256");
  add_backend_options(app, a->backend, a->threads);
  app.add_option("--bound,-B", a->bound,
                 "clip every weight to [-B, B], B in [0, 10]")
      ->capture_default_str();
  app.add_option("--top-k,-k", a->sampler.top_k,
                 "sample from the k most likely bytes (0: greedy)")
      ->check(CLI::Range(0, 1 << 20));
  app.add_option("--seed,-s", a->sampler.seed,
                 "sampler seed (SplitMix64, docs/arithmetic.md §5)");
  app.add_option("--temperature,-T", a->sampler.temperature,
                 "divide logits by T before top-k sampling (T > 0)");
  app.footer(
      "Examples:\n"
      "  lockstep generate --model tiny4 --text 'To b'\n"
      "  lockstep generate --model tiny128 --text 'ROMEO:' --generate 160\n"
      "  lockstep generate --model tiny64 --text 'KING' --logits --json\n"
      "  lockstep generate --model gpt2.lockstep --text 'Once upon a time' "
      "--generate 32");
  return [a]() {
    if (a->sampler.top_k == 0 && a->sampler.temperature != 1.0) {
      // Temperature without top-k samples from the whole distribution.
      a->sampler.top_k = kWholeVocabulary;
    }
    return a->model.kind() == ModelKind::kGpt2 ? run_gpt2_generate(*a)
                                               : run_tiny_generate(*a);
  };
}

}  // namespace lockstep::cli
