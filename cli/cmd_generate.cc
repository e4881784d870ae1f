// lockstep generate: the next-byte distribution, all logits, or text; and
// the pieces generate, logits and tokenize share (generate_args.h).
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "cli/commands.h"
#include "cli/generate_args.h"
#include "cli/output.h"
#include "hosts/native/wasm_host.h"
#include "lockstep/error.h"
#include "lockstep/tiny.h"

extern "C" {
#include "ls_ops64.h"
}

namespace lockstep::cli {

std::vector<int32_t> parse_token_list(const std::string& list) {
  // The grammar (docs/cli.md): ID(,ID)*, ID = -?[0-9]+ within int32. No
  // spaces, no empty items, no trailing comma: "1,2," and " 1" are errors,
  // as in the Node.js host (hosts/node/args.mjs). A negative or too large
  // id is well formed and then refused as outside the vocabulary.
  std::vector<int32_t> out;
  if (list.empty()) return out;  // no ids: "the prompt is empty" later
  size_t start = 0;
  for (size_t index = 1;; ++index) {
    const size_t comma = list.find(',', start);
    const std::string item = list.substr(
        start, comma == std::string::npos ? std::string::npos : comma - start);
    const size_t digits = item.size() - (item.starts_with('-') ? 1 : 0);
    long long v = 0;
    const bool ok =
        digits > 0 && digits <= 10 &&
        item.find_first_not_of("0123456789", item.size() - digits) ==
            std::string::npos &&
        (v = std::stoll(item)) >= INT32_MIN && v <= INT32_MAX;
    if (!ok) {
      throw Error("--tokens: item " + std::to_string(index) + " '" + item +
                  "' is not an integer (expected ids separated by single "
                  "commas, no spaces, such as 84,111,32,98)");
    }
    out.push_back(int32_t(v));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::vector<int32_t> parse_token_text(const std::string& text) {
  std::string list;
  bool sep = true;  // at the start, or after a separator
  for (char ch : text) {
    const bool space = ch == ',' || ch == ' ' || ch == '\t' || ch == '\n' ||
                       ch == '\r' || ch == '\v' || ch == '\f';
    if (space) {
      if (!sep) list.push_back(',');
      sep = true;
    } else {
      list.push_back(ch);
      sep = false;
    }
  }
  if (!list.empty() && list.back() == ',') list.pop_back();
  return list.empty() ? std::vector<int32_t>{} : parse_token_list(list);
}

std::string read_all_bytes(const std::string& path) {
  const bool std_in = path == "-";
  const std::string name = std_in ? "standard input" : "'" + path + "'";
  std::FILE* f = std_in ? stdin : std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    throw Error("cannot open --file " + name + ": " + std::strerror(errno));
  }
  std::string out;
  char buf[1 << 16];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  const int err = errno;
  const bool failed = std::ferror(f) != 0;
  if (!std_in) std::fclose(f);
  if (failed) {
    throw Error("cannot read the prompt from " + name + ": " +
                std::strerror(err));
  }
  return out;
}

void PromptArgs::add(CLI::App& app, const std::string& text_help,
                     const std::string& tokens_help, bool short_text) {
  text_ = app.add_option(short_text ? "--text,-t" : "--text", text, text_help);
  tokens_ = app.add_option("--tokens", tokens, tokens_help);
  file_ = app.add_option("--file,-f", file,
                         "read the prompt's bytes from a file, exactly (NUL "
                         "bytes and any encoding; '-': standard input)")
              ->type_name("PATH");
  dash_ = app.add_option("STDIN", dash,
                         "'-': read the prompt from standard input "
                         "(as --file -)")
              ->check(
                  [](const std::string& v) {
                    return v == "-" ? std::string()
                                    : "'" + v +
                                          "' is not an option; a prompt "
                                          "goes in --text, --file PATH or "
                                          "- (standard input)";
                  },
                  "")
              ->type_name("");
}

void PromptArgs::resolve() {
  std::vector<std::string> given;
  if (text_->count() > 0) given.push_back("--text");
  if (tokens_->count() > 0) given.push_back("--tokens");
  if (file_->count() > 0) given.push_back(file == "-" ? "--file -" : "--file");
  if (dash_->count() > 0) given.push_back("- (standard input)");
  if (given.size() > 1) {
    throw Error("give one prompt source, not both " + given[0] + " and " +
                given[1] +
                " (--text, --tokens, --file PATH and - are alternatives)");
  }
  tokens_given_ = tokens_->count() > 0;
  if (file_->count() > 0 || dash_->count() > 0) {
    text = read_all_bytes(file_->count() > 0 ? file : "-");
    file_given_ = true;
  }
}

StopStream::StopStream(std::vector<std::string> stops, bool print)
    : stops_(std::move(stops)), print_(print) {
  for (const auto& s : stops_) {
    if (s.empty()) throw Error("--stop needs a non-empty string");
  }
}

bool StopStream::add(std::string_view bytes) {
  const size_t old = text_.size();
  text_.append(bytes);
  // A new occurrence ends in the new bytes; the earliest start wins, then
  // the stop string given first.
  size_t best = std::string::npos;
  const std::string* which = nullptr;
  for (const auto& s : stops_) {
    const size_t from = old >= s.size() - 1 ? old - (s.size() - 1) : 0;
    const size_t at = text_.find(s, from);
    if (at < best) {
      best = at;
      which = &s;
    }
  }
  if (which != nullptr) {
    stopped_by_ = *which;
    text_.resize(best);
    emit(best);
    return true;
  }
  // Hold back the longest suffix that could begin a stop string.
  size_t hold = 0;
  for (const auto& s : stops_) {
    for (size_t len = std::min(s.size() - 1, text_.size()); len > hold; --len) {
      if (text_.compare(text_.size() - len, len, s, 0, len) == 0) {
        hold = len;
        break;
      }
    }
  }
  emit(text_.size() - hold);
  return false;
}

void StopStream::finish() { emit(text_.size()); }

void StopStream::emit(size_t end) {
  if (end <= printed_) return;
  if (print_) {
    std::fwrite(text_.data() + printed_, 1, end - printed_, stdout);
    flush_stdout();
  }
  printed_ = end;
}

void print_summary(const GenerationSummary& s, bool quiet) {
  if (quiet) return;
  const char* stop = "length";
  switch (s.stop) {
    case StopReason::kLength:
      stop = "length";
      break;
    case StopReason::kEndOfText:
      stop = "<|endoftext|>";
      break;
    case StopReason::kStopString:
      stop = "stop string";
      break;
    case StopReason::kContext:
      stop = "context limit";
      break;
  }
  char rate[64] = "-";
  if (s.generated > 0 && s.generate_seconds > 0) {
    std::snprintf(rate, sizeof rate, "%.2f",
                  double(s.generated) / s.generate_seconds);
  }
  const auto count = [](size_t n, const char* what) {
    return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
  };
  std::fprintf(stderr,
               "lockstep: prompt %s, prefill %.2f ms; generated %s in %.3f "
               "s, %s tokens/s; backend %s, %s; stop: %s\n",
               count(s.prompt_tokens, "token").c_str(), s.prefill_seconds * 1e3,
               count(s.generated, "token").c_str(), s.generate_seconds, rate,
               s.backend.c_str(), count(size_t(s.threads), "thread").c_str(),
               stop);
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

int run_tiny_generate(const GenerateArgs& args) {
  GenerateArgs a = args;
  if (a.backend != "cpu" && a.backend != "reference" && a.backend != "wasm") {
    throw Error("--backend '" + a.backend +
                "': the tiny models run on the binary64 core (cpu, the "
                "default, or reference: the same code) or wasm");
  }
  if (a.sampler.top_k == kWholeVocabulary) a.sampler.top_k = 256;
  const Sampler check_options(a.sampler, 256);  // bad options fail early
  const TinyModel m = load_tiny(a.model.path());
  std::vector<int32_t> prompt;
  if (a.prompt.from_tokens()) {
    prompt = parse_token_list(a.prompt.tokens);
  } else {
    for (char ch : a.prompt.text) prompt.push_back(uint8_t(ch));  // bytes
  }
  if (prompt.empty()) {
    throw Error(
        "the prompt is empty: give --text, --tokens, --file or - with at "
        "least one byte");
  }
  // --backend wasm: the same checked entry in the WebAssembly module.
  std::unique_ptr<WasmHost> wasm;
  if (a.backend == "wasm") wasm = std::make_unique<WasmHost>(a.model.path());
  // The logits after the last n_ctx bytes of `text`.
  const auto logits_after = [&](const std::vector<int32_t>& text) {
    const size_t n = std::min(text.size(), size_t(m.n_ctx));
    const std::span<const int32_t> window(text.data() + text.size() - n, n);
    return wasm ? wasm->tiny_logits(window, a.bound)
                : tiny_logits(m, window, a.bound);
  };

  if (a.generate > 0) {
    // tiny_generate's loop (a forward pass over the last n_ctx bytes per
    // byte), with stop strings and timing.
    using Clock = std::chrono::steady_clock;
    StopStream out(a.stops, !a.json);
    if (!a.json) {
      std::fwrite(a.prompt.text.data(), 1, a.prompt.text.size(), stdout);
      flush_stdout();
    }
    Sampler choose(a.sampler, 256);
    GenerationSummary sum;
    sum.prompt_tokens = prompt.size();
    sum.backend = wasm ? "wasm (Node.js), tiny binary64" : "tiny binary64";
    sum.threads = 1;
    const auto t0 = Clock::now();
    TinyLogits logits = logits_after(prompt);
    const auto t1 = Clock::now();
    std::vector<int32_t> text = prompt, gen;
    for (int i = 0; i < a.generate; ++i) {
      const int32_t next = choose.next(std::span<const double>(logits));
      text.push_back(next);
      gen.push_back(next);
      const char byte = char(next);
      if (out.add(std::string_view(&byte, 1))) {
        sum.stop = StopReason::kStopString;
        break;
      }
      if (i + 1 < a.generate) logits = logits_after(text);
    }
    out.finish();
    sum.prefill_seconds = std::chrono::duration<double>(t1 - t0).count();
    sum.generated = gen.size();
    sum.generate_seconds =
        std::chrono::duration<double>(Clock::now() - t1).count();
    if (a.json) {
      nlohmann::json j = {{"model", a.model.label()},
                          {"payload_sha256", m.payload_sha256},
                          {"prompt_tokens", prompt},
                          {"tokens", gen},
                          {"completion_escaped", escape_bytes(out.text())}};
      if (sum.stop == StopReason::kStopString) {
        j["stop"] = "string";
        j["stop_string"] = escape_bytes(out.stopped_by());
      }
      std::printf("%s\n", j.dump().c_str());
    } else {
      std::fputc('\n', stdout);
    }
    flush_stdout();
    print_summary(sum, a.quiet);
    return 0;
  }

  // One forward pass over the last n_ctx bytes.
  std::vector<int32_t> window = prompt;
  if (window.size() > size_t(m.n_ctx)) {
    window.erase(window.begin(), window.end() - m.n_ctx);
    std::fprintf(stderr, "note: %s sees only the last %d bytes\n",
                 a.model.label().c_str(), m.n_ctx);
  }
  const TinyLogits logits = logits_after(window);
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
  a->prompt.add(app, "prompt text (bytes)",
                "prompt as comma-separated ids (byte values for the tiny "
                "models), e.g. 84,111,32,98");
  app.add_option("--generate,-n", a->generate,
                 "bytes (tiny) or tokens (GPT-2) to generate at most (0: "
                 "print the next-token distribution)")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--top", a->top, "rows of the distribution to print")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_flag("--logits", a->logits, "print all logits as exact hex floats");
  app.add_flag("--json", a->json, "print one JSON object");
  app.add_flag("--full", a->full,
               "GPT-2: recompute the whole prefix for every token instead "
               "of the KV cache (same tokens, slower)");
  app.add_flag("--special", a->special,
               "GPT-2: '<|endoftext|>' in the prompt is token 50256");
  add_backend_options(app, a->backend, a->threads);
  auto* bound =
      app.add_option("--bound,-B", a->bound,
                     "tiny models: clip every weight to [-B, B], B in [0, "
                     "10] (GPT-2 refuses it: its weights run as they are)")
          ->check(number_in(0.0, 10.0,
                            "weight bound B must be a number in [0, 10]"))
          ->capture_default_str();
  app.add_option("--top-k,-k", a->sampler.top_k,
                 "sample from the k most likely tokens (bytes for the tiny "
                 "models; 0: greedy)")
      ->check(CLI::Range(0, 1 << 20));
  app.add_option("--seed,-s", a->sampler.seed,
                 "sampler seed, 0 to 2^64-1 (SplitMix64, docs/arithmetic.md "
                 "§5)")
      ->check(unsigned64());
  app.add_option("--temperature,-T", a->sampler.temperature,
                 "divide logits by T before sampling (T > 0)");
  auto* top_p = app.add_option(
      "--top-p,-p", a->sampler.top_p,
      "nucleus sampling: keep the fewest most likely tokens whose "
      "probabilities sum to at least P, 0 < P <= 1 (after --top-k and "
      "--temperature; docs/arithmetic.md §5.4)");
  app.add_option("--stop", a->stops,
                 "end when the generated text contains STRING (repeatable; "
                 "the stop string is not printed)")
      ->type_name("STRING")
      ->allow_extra_args(false);  // one value per --stop: "-" stays stdin
  app.add_flag_callback(
      "--no-stop-eot", [a]() { a->stop_eot = false; },
      "GPT-2: keep generating after <|endoftext|> (printed as text) instead "
      "of stopping there");
  app.add_flag("--quiet,-q", a->quiet,
               "no summary (prompt and prefill, tokens/s, backend) on "
               "standard error");
  app.footer(
      "Examples:\n"
      "  lockstep generate --model tiny4 --text 'To b'\n"
      "  lockstep generate --model tiny128 --text 'ROMEO:' --generate 160\n"
      "  lockstep generate --model tiny64 --text 'KING' --logits --json\n"
      "  lockstep generate --model gpt2.lockstep --text 'Once upon a time' "
      "--generate 32\n"
      "  lockstep generate --model gpt2.lockstep --file prompt.txt "
      "--generate 200 --top-p 0.9 --seed 1 --stop $'\\n\\n'\n"
      "  echo 'Hello' | lockstep generate --model gpt2.lockstep - -n 16\n"
      "\n"
      "Output is the prompt, then the generated text on standard output; a "
      "summary\n"
      "follows on standard error. GPT-2 stops at <|endoftext|> (not "
      "printed) unless\n"
      "--no-stop-eot.");
  return [a, top_p, bound]() {
    a->bound_given = bound->count() > 0;
    // Option errors before any model is loaded.
    if (!(a->sampler.top_p > 0.0 && a->sampler.top_p <= 1.0)) {
      throw Error("top-p must be a number in (0, 1]");
    }
    for (const auto& s : a->stops) {
      if (s.empty()) throw Error("--stop needs a non-empty string");
    }
    a->prompt.resolve();
    if (a->sampler.top_k == 0 &&
        (a->sampler.temperature != 1.0 || top_p->count() > 0)) {
      // Temperature or top-p without top-k samples from the whole
      // distribution.
      a->sampler.top_k = kWholeVocabulary;
    }
    return a->model.kind() == ModelKind::kGpt2 ? run_gpt2_generate(*a)
                                               : run_tiny_generate(*a);
  };
}

}  // namespace lockstep::cli
