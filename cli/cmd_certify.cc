// lockstep certify: a greedy GPT-2 run on a binary32 backend, and around it
// the real-arithmetic model in interval arithmetic (lib/certify.h), which
// proves at each step that the real model's argmax is lockstep's token, or
// says it cannot. docs/certify.md.
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/generate_args.h"
#include "cli/gpt2_runner.h"
#include "cli/output.h"
#include "cli/progress.h"
#include "formats/gpt2_checkpoint.h"
#include "lib/certify.h"
#include "lockstep/error.h"
#include "lockstep/paths.h"
#include "lockstep/sampling.h"
#include "tokenizer/bpe.h"

namespace lockstep::cli {
namespace {

struct CertifyArgs {
  ModelArgs model;
  PromptArgs prompt;
  int generate = 0;
  bool all_positions = false;
  bool json = false;
  bool special = false;
  bool stop_eot = true;
  bool quiet = false;
  std::string backend = "cpu";
  int threads = 0;
  int precision = 128;
};

struct StepRecord {
  int position;  // the position whose logits choose the token
  bool prompt;   // a prompt position (--all-positions) or a generated one
  int32_t token;
  ChoiceCertificate cert;
  double float_error;  // max |binary32 logit - real logit| bound
};

// The largest distance of a binary32 logit from the far end of its real
// enclosure: a bound on |lockstep's logit - the real logit|.
double float_error_bound(std::span<const float> f,
                         const std::vector<Interval>& L) {
  double e = 0.0;
  for (size_t v = 0; v < L.size(); ++v) {
    const double x = f[v];
    e = std::max(e, std::max(x - L[v].lo, L[v].hi - x));
  }
  return e;
}

void write_out(const std::string& s) {
  std::fwrite(s.data(), 1, s.size(), stdout);
  flush_stdout();
}

int32_t argmax(std::span<const float> logits) {
  Sampler greedy({}, int(logits.size()));
  return greedy.next(logits);
}

std::string piece(const Tokenizer& tok, int32_t id) {
  return escape_bytes(tok.token_bytes(id));
}

int run(const CertifyArgs& a) {
  if (a.model.kind() != ModelKind::kGpt2) {
    throw Error(
        "lockstep certify is for GPT-2 models (the tiny models' "
        "certificates are another part of issue 14)");
  }
  const Gpt2Weights w = load_gpt2(a.model.path());
  if (w.quant != "f32") {
    throw Error("lockstep certify needs binary32 weights, not " + w.quant);
  }
  const ls_gpt2_config& c = w.config;
  std::vector<float> plain;
  const float* pw = w.data();
  if (w.layout != LS_GPT2_LAYOUT_PLAIN) {
    plain.resize(w.words());
    ls_gpt2_from_panels(&c, w.data(), plain.data());
    pw = plain.data();
  }
  const Tokenizer tok = Tokenizer::load(data_dir() + "/gpt2");
  const std::vector<int32_t> prompt =
      a.prompt.from_tokens() ? parse_token_list(a.prompt.tokens)
                             : tok.encode(a.prompt.text, a.special);
  if (prompt.empty())
    throw Error("no tokens: give --tokens, --text, --file or -");
  for (int32_t t : prompt) {
    if (t < 0 || t >= c.n_vocab) {
      throw Error("token " + std::to_string(t) +
                  " is outside the vocabulary of " + std::to_string(c.n_vocab));
    }
  }
  if (prompt.size() > size_t(c.n_ctx)) {
    throw Error(std::to_string(prompt.size()) +
                " tokens exceed the context of " + std::to_string(c.n_ctx));
  }
  const auto t0 = std::chrono::steady_clock::now();
  // The binary32 run: the prompt's logits (every position's with
  // --all-positions), then greedy steps.
  Gpt2Runner session(a.model.path(), w, a.backend, a.threads,
                     int(std::min<size_t>(prompt.size(), 128)));
  const size_t V = size_t(c.n_vocab);
  std::vector<float> prompt_logits;
  {
    const std::span<const float> l = session.prefill(prompt, a.all_positions);
    prompt_logits.assign(l.begin(), l.end());
  }
  const int room = c.n_ctx - int(prompt.size());
  const int steps = std::min(a.generate, room);
  if (a.generate > room && !a.quiet) {
    std::fprintf(stderr,
                 "lockstep: note: the context of %d ends the run after %d "
                 "generated tokens\n",
                 c.n_ctx, steps);
  }
  const int total =
      (a.all_positions ? int(prompt.size()) : 1) + std::max(0, steps - 1);
  std::optional<ProgressBar> bar;
  if (!a.quiet) bar.emplace("certify", total);
  IntervalGpt2 real(c, pw, w.words(), a.precision);
  std::vector<StepRecord> records;
  double seconds_real = 0;
  auto certify_here = [&](std::span<const float> f, bool in_prompt,
                          int32_t chosen) {
    StepRecord r{real.position() - 1, in_prompt, chosen,
                 certify_choice(real, chosen),
                 float_error_bound(f, real.logits())};
    records.push_back(r);
    int ok = 0;
    for (const auto& x : records) ok += x.cert.certified ? 1 : 0;
    if (bar)
      bar->update(long(records.size()), std::to_string(ok) + " certified");
  };
  // Prompt positions.
  std::vector<int32_t> context = prompt;
  std::span<const float> last;
  for (size_t p = 0; p < prompt.size(); ++p) {
    const bool last_prompt = p + 1 == prompt.size();
    const bool check = a.all_positions || (last_prompt && steps > 0);
    const auto r0 = std::chrono::steady_clock::now();
    real.step(prompt[p], check);
    seconds_real +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - r0)
            .count();
    if (!check) continue;
    const std::span<const float> f =
        a.all_positions
            ? std::span<const float>(prompt_logits).subspan(p * V, V)
            : std::span<const float>(prompt_logits);
    // At a prompt position before the last, lockstep's greedy choice is the
    // argmax there (the prompt goes on with its own next token).
    certify_here(f, !last_prompt, argmax(f));
  }
  last = a.all_positions ? std::span<const float>(prompt_logits)
                               .subspan((prompt.size() - 1) * V, V)
                         : std::span<const float>(prompt_logits);
  // Generated tokens: each chosen token is fed back to both models.
  std::string stop = "length";
  for (int s = 0; s < steps; ++s) {
    const int32_t next = argmax(last);
    context.push_back(next);
    if (a.stop_eot && next == Tokenizer::kEndOfText) {
      stop = "eot";
      break;
    }
    if (s + 1 == steps) break;
    last = session.step(next);
    const auto r0 = std::chrono::steady_clock::now();
    real.step(next, true);
    seconds_real +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - r0)
            .count();
    certify_here(last, false, argmax(last));
  }
  if (bar) bar->finish();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  int certified = 0, by_difference = 0;
  double worst_width = 0, worst_float = 0;
  for (const auto& r : records) {
    certified += r.cert.certified ? 1 : 0;
    by_difference += r.cert.certified && r.cert.overlapping > 0 ? 1 : 0;
    worst_width = std::max(worst_width, r.cert.max_width);
    worst_float = std::max(worst_float, r.float_error);
  }
  const double fraction =
      records.empty() ? 0.0 : double(certified) / double(records.size());
  if (a.json) {
    nlohmann::json j;
    j["model"] = a.model.label();
    j["config"] = {{"n_vocab", c.n_vocab},
                   {"n_ctx", c.n_ctx},
                   {"n_embd", c.n_embd},
                   {"n_head", c.n_head},
                   {"n_layer", c.n_layer}};
    j["weights_sha256"] = w.plain_sha256;
    j["backend"] = session.backend_name();
    j["precision"] = a.precision;
    j["prompt_tokens"] = prompt;
    j["tokens"] = std::vector<int32_t>(context.begin() + long(prompt.size()),
                                       context.end());
    j["text"] =
        tok.decode(std::span<const int32_t>(context).subspan(prompt.size()));
    j["stop"] = stop;
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& r : records) {
      arr.push_back({{"position", r.position},
                     {"prompt", r.prompt},
                     {"token", r.token},
                     {"certified", r.cert.certified},
                     {"margin", r.cert.margin},
                     {"chosen_lo", r.cert.chosen_logit.lo},
                     {"chosen_hi", r.cert.chosen_logit.hi},
                     {"rival", r.cert.rival},
                     {"rival_hi", r.cert.rival_hi},
                     {"overlapping", r.cert.overlapping},
                     {"difference_margin", r.cert.difference_margin},
                     {"chosen_width", r.cert.chosen_logit.width()},
                     {"max_width", r.cert.max_width},
                     {"float_error_bound", r.float_error}});
    }
    j["positions"] = arr;
    j["summary"] = {{"positions", records.size()},
                    {"certified", certified},
                    {"certified_by_difference", by_difference},
                    {"fraction", fraction},
                    {"max_width", worst_width},
                    {"float_error_bound", worst_float},
                    {"seconds", seconds},
                    {"seconds_interval", seconds_real}};
    write_out(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
              "\n");
  } else {
    std::string out;
    char line[512];
    std::snprintf(line, sizeof line, "%-5s %-8s %-7s %-12s %-11s %-9s %s\n",
                  "pos", "token", "result", "margin", "width", "float err",
                  "text");
    out += line;
    for (const auto& r : records) {
      std::snprintf(
          line, sizeof line, "%-5d %-8d %-7s %-+12.4e %-11.3e %-9.2e '%s'%s\n",
          r.position, r.token, r.cert.certified ? "yes" : "NO", r.cert.margin,
          r.cert.chosen_logit.width(), r.float_error,
          piece(tok, r.token).c_str(),
          r.cert.certified && r.cert.overlapping > 0 ? " (by difference)" : "");
      out += line;
    }
    std::snprintf(line, sizeof line,
                  "certified %d of %zu positions (%.1f%%); widest logit "
                  "interval %.3e; |binary32 - real| <= %.3e; %.2f s (%.2f s "
                  "interval)\n",
                  certified, records.size(), 100.0 * fraction, worst_width,
                  worst_float, seconds, seconds_real);
    out += line;
    write_out(out);
  }
  return 0;
}

}  // namespace

Action add_certify(CLI::App& app) {
  auto a = std::make_shared<CertifyArgs>();
  a->model.add(app);
  a->prompt.add(app, "text to tokenize first", "token ids, e.g. 15496,995");
  app.add_option("--generate,-n", a->generate,
                 "greedy tokens to generate and certify, 0 to 100000 (each "
                 "choice is one position)")
      ->check(CLI::Range(0, 100000));
  app.add_flag("--all-positions", a->all_positions,
               "also certify lockstep's argmax at every prompt position");
  app.add_flag("--json", a->json,
               "one JSON record: every position and a summary");
  app.add_flag("--special", a->special, "'<|endoftext|>' is token 50256");
  app.add_flag("!--no-stop-eot", a->stop_eot,
               "go on after <|endoftext|> (by default it ends the run)");
  app.add_flag("--quiet,-q", a->quiet,
               "no progress or notes on standard error");
  app.add_option("--precision", a->precision,
                 "bits of the blocks' MPFR intervals, 53 to 4096 (53 is "
                 "binary64's precision: too wide for a trained model, "
                 "docs/certify.md)")
      ->check(CLI::Range(53, 4096))
      ->capture_default_str();
  add_backend_options(app, a->backend, a->threads);
  app.footer(
      "Examples:\n"
      "  lockstep certify --model models/shakespeare-gpt2 --text 'ROMEO:' "
      "--generate 50\n"
      "  lockstep certify --model HF_DIR --file prompt.txt --all-positions "
      "--json");
  return [a]() {
    a->prompt.resolve();
    if (a->generate == 0 && !a->all_positions) {
      throw Error(
          "nothing to certify: give --generate N and/or --all-positions");
    }
    return run(*a);
  };
}

}  // namespace lockstep::cli
