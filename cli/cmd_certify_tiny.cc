// lockstep certify-tiny: bounds on |computed logit - real logit| for the
// tiny binary64 models (lib/tiny_certify.h, docs/certify-tiny.md): per
// input by interval arithmetic, over all 2^32 four-byte inputs of tiny4
// (--all-inputs, sharded), on windows of a corpus (--corpus), and the
// a-priori bound for every input and all weights clipped to B (--a-priori).
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cli/commands.h"
#include "cli/generate_args.h"
#include "cli/model_args.h"
#include "cli/output.h"
#include "cli/progress.h"
#include "lib/tiny_certify.h"
#include "lockstep/error.h"
#include "lockstep/tiny.h"

namespace lockstep::cli {
namespace {

namespace tc = lockstep::tiny_certify;

struct CertifyTinyArgs {
  ModelArgs model;
  PromptArgs prompt;
  double bound = 10.0;
  bool bound_given = false;
  bool logits = false;
  bool json = false;
  bool all_inputs = false;
  bool apriori = false;
  std::string shard = "0/1";
  int stride = 1;
  int threads = 1;
  std::string corpus;
  int windows = 100;
};

std::string hexf(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}

void print_json(const nlohmann::json& j) {
  std::printf("%s\n", j.dump(2).c_str());
}

int run_apriori(const CertifyTinyArgs& a, int n_ctx) {
  std::vector<double> bs = {0.5, 1, 2, 5, 10};
  if (a.bound_given) bs = {a.bound};
  nlohmann::json rows = nlohmann::json::array();
  for (double B : bs) {
    const tc::Apriori ap = tc::apriori_bound(B, n_ctx);
    nlohmann::json stages = nlohmann::json::array();
    for (const auto& s : ap.stages)
      stages.push_back(
          {{"stage", s.name}, {"magnitude", s.magnitude}, {"error", s.error}});
    rows.push_back({{"B", B},
                    {"n_ctx", n_ctx},
                    {"bound", ap.bound},
                    {"gelu_lipschitz", ap.gelu_lipschitz},
                    {"stages", stages}});
    if (!a.json) {
      std::printf("B = %g, n_ctx = %d: |computed - real| <= %.4g per logit\n",
                  B, n_ctx, ap.bound);
      if (bs.size() == 1) {
        std::printf("  %-20s %12s %12s\n", "stage", "|value| <=", "error <=");
        for (const auto& s : ap.stages)
          std::printf("  %-20s %12.4g %12.4g\n", s.name.c_str(), s.magnitude,
                      s.error);
        std::printf("  sup |GELU'| <= %.9g (interval evaluation)\n",
                    ap.gelu_lipschitz);
      }
    }
  }
  if (a.json) print_json(rows);
  return 0;
}

int run_one(const CertifyTinyArgs& a, const TinyModel& m) {
  std::vector<int32_t> tokens;
  if (a.prompt.from_tokens()) {
    tokens = parse_token_list(a.prompt.tokens);
  } else {
    for (char ch : a.prompt.text) tokens.push_back(uint8_t(ch));
  }
  if (tokens.empty())
    throw Error("the prompt is empty: give --text, --tokens, --file or -");
  if (tokens.size() > size_t(m.n_ctx))
    tokens.erase(tokens.begin(), tokens.end() - m.n_ctx);  // the last n_ctx
  const tc::Certificate c =
      tc::certify_tiny(m.n_ctx, m.weights, tokens, a.bound);
  if (a.json) {
    nlohmann::json j = {{"model", a.model.label()},
                        {"bound_B", a.bound},
                        {"tokens", tokens},
                        {"max_bound", c.max_bound},
                        {"goal_met", c.max_bound < 1e-9}};
    if (a.logits) {
      nlohmann::json l = nlohmann::json::array();
      for (int o = 0; o < 256; ++o)
        l.push_back({{"computed", hexf(c.computed[o])},
                     {"real_lo", hexf(c.real[o].lo)},
                     {"real_hi", hexf(c.real[o].hi)},
                     {"bound", c.bound[o]}});
      j["logits"] = l;
    }
    print_json(j);
    return 0;
  }
  std::printf(
      "%s, %zu byte%s, B = %g: |computed - real| <= %.3e for every "
      "logit (%s the goal 1e-9)\n",
      a.model.label().c_str(), tokens.size(), tokens.size() == 1 ? "" : "s",
      a.bound, c.max_bound, c.max_bound < 1e-9 ? "below" : "NOT below");
  if (a.logits) {
    for (int o = 0; o < 256; ++o)
      std::printf("%3d %a [%a, %a] %.3e\n", o, c.computed[o], c.real[o].lo,
                  c.real[o].hi, c.bound[o]);
  }
  return 0;
}

int run_corpus(const CertifyTinyArgs& a, const TinyModel& m) {
  const std::string text = read_all_bytes(a.corpus);
  const size_t n = size_t(m.n_ctx);
  if (text.size() < n)
    throw Error("--corpus '" + a.corpus + "' is shorter than the context (" +
                std::to_string(n) + " bytes)");
  const size_t starts = text.size() - n + 1;
  const int count = int(std::min<size_t>(size_t(a.windows), starts));
  ProgressBar bar("certify-tiny", count);
  double worst = 0.0, sum = 0.0;
  size_t worst_at = 0;
  int over = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < count; ++i) {
    const size_t at = starts * size_t(i) / size_t(count);  // evenly spaced
    std::vector<int32_t> tok;
    for (size_t k = 0; k < n; ++k) tok.push_back(uint8_t(text[at + k]));
    const tc::Certificate c =
        tc::certify_tiny(m.n_ctx, m.weights, tok, a.bound);
    sum += c.max_bound;
    if (c.max_bound > 1e-9) ++over;
    if (c.max_bound > worst) worst = c.max_bound, worst_at = at;
    bar.update(i + 1);
  }
  bar.finish();
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  if (a.json) {
    print_json({{"model", a.model.label()},
                {"bound_B", a.bound},
                {"corpus", a.corpus},
                {"windows", count},
                {"window_bytes", n},
                {"max_bound", worst},
                {"mean_bound", sum / count},
                {"worst_offset", worst_at},
                {"over_goal", over},
                {"seconds", secs}});
  } else {
    std::printf(
        "%s, B = %g: %d windows of %zu bytes of %s: max bound %.3e "
        "(at byte %zu), mean %.3e, %d above 1e-9; %.2f s\n",
        a.model.label().c_str(), a.bound, count, n, a.corpus.c_str(), worst,
        worst_at, sum / count, over, secs);
  }
  return 0;
}

// "i/k": the i-th of k equal slices of the 65536 two-byte prefixes.
std::pair<int, int> parse_shard(const std::string& s) {
  int i = -1, k = 0;
  char tail = 0;
  if (std::sscanf(s.c_str(), "%d/%d%c", &i, &k, &tail) != 2 || k < 1 ||
      k > 65536 || i < 0 || i >= k)
    throw Error("--shard '" + s +
                "' is not i/k with 0 <= i < k <= 65536 (e.g. 0/16)");
  return {int(65536LL * i / k), int(65536LL * (i + 1) / k)};
}

int run_sweep(const CertifyTinyArgs& a, const TinyModel& m) {
  if (m.n_ctx != 4)
    throw Error("--all-inputs needs a 4-position model (tiny4); this one has " +
                std::to_string(m.n_ctx) + " positions");
  const auto [first, last] = parse_shard(a.shard);
  const tc::Tiny4Sweep sweep(m.weights, a.bound);
  const auto t0 = std::chrono::steady_clock::now();
  std::optional<ProgressBar> pb;
  const tc::Tiny4Sweep::Result r =
      sweep.run(first, last, a.stride, 0, a.threads, [&](long d, long t) {
        if (!pb) pb.emplace("certify-tiny", t);
        pb->update(d, std::to_string(d * 65536) + " inputs");
      });
  if (pb) pb->finish();
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  const double fraction = double(r.inputs) / 4294967296.0;
  const double full_estimate = fraction > 0 ? secs / fraction : 0.0;
  const auto tokens = [](const std::array<int32_t, 4>& t, int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s += (i ? "," : "") + std::to_string(t[i]);
    return s;
  };
  const auto stats = [&](const tc::Tiny4Sweep::Stats& s, int n) {
    return nlohmann::json{
        {"inputs", s.inputs},
        {"max_bound", s.max_bound},
        {"sum_bound", s.sum_bound},
        {"mean_bound", s.inputs ? s.sum_bound / double(s.inputs) : 0},
        {"worst_tokens", tokens(s.worst, n)},
        {"over_goal", s.over_goal},
        {"second_pass", s.refined}};
  };
  const std::string worst = tokens(r.worst, 4);
  uint64_t over_prefix = 0;
  for (const auto& p : r.prefix) over_prefix += p.over_goal;
  if (a.json) {
    print_json({{"model", a.model.label()},
                {"bound_B", a.bound},
                {"shard", a.shard},
                {"prefix_units", {first, last}},
                {"stride", a.stride},
                {"threads", a.threads},
                {"inputs", r.inputs},
                {"fraction_of_2^32", fraction},
                {"max_bound", r.max_bound},
                {"sum_bound", r.sum_bound},
                {"mean_bound", r.inputs ? r.sum_bound / double(r.inputs) : 0},
                {"worst_tokens", worst},
                {"over_goal", r.over_goal},
                {"second_pass", r.refined},
                {"positions_0_1_2",
                 {stats(r.prefix[0], 1), stats(r.prefix[1], 2),
                  stats(r.prefix[2], 3)}},
                {"max_bound_all_positions", r.max_all},
                {"sum_bound_all_positions", r.sum_all},
                {"mean_bound_all_positions",
                 r.inputs ? r.sum_all / double(r.inputs) : 0},
                {"seconds", secs},
                {"estimated_full_seconds", full_estimate}});
  } else {
    std::printf(
        "%s, B = %g: %llu four-byte inputs (%.6f of 2^32; prefixes "
        "[%d, %d) stride %d), max bound %.3e at tokens %s, mean %.3e, %llu "
        "above 1e-9 (%llu through the second pass); %.1f s on %d thread%s "
        "(all 2^32 at this rate: %.0f s)\n",
        a.model.label().c_str(), a.bound, (unsigned long long)r.inputs,
        fraction, first, last, a.stride, r.max_bound, worst.c_str(),
        r.inputs ? r.sum_bound / double(r.inputs) : 0.0,
        (unsigned long long)r.over_goal, (unsigned long long)r.refined, secs,
        a.threads, a.threads == 1 ? "" : "s", full_estimate);
    for (int p = 0; p < 3; ++p) {
      const tc::Tiny4Sweep::Stats& s = r.prefix[p];
      if (!s.inputs) continue;
      std::printf(
          "  position %d (the %llu %d-byte prefixes): max bound %.3e at %s, "
          "mean %.3e, %llu above 1e-9\n",
          p, (unsigned long long)s.inputs, p + 1, s.max_bound,
          tokens(s.worst, p + 1).c_str(), s.sum_bound / double(s.inputs),
          (unsigned long long)s.over_goal);
    }
    std::printf("  every logit of every position: max bound %.3e\n", r.max_all);
  }
  return r.over_goal == 0 && over_prefix == 0 ? 0 : 3;
}

}  // namespace

Action add_certify_tiny(CLI::App& app) {
  auto a = std::make_shared<CertifyTinyArgs>();
  a->model.model = "tiny4";
  a->model.add(app);
  a->prompt.add(app, "the input bytes", "comma-separated byte values");
  CLI::Option* bound =
      app.add_option("--bound,-B", a->bound, "clip every weight to [-B, B]")
          ->check(number_in(0, 10, "--bound must be a number in [0, 10]"));
  app.add_flag("--logits", a->logits,
               "every logit: computed, real enclosure, bound");
  app.add_flag("--json", a->json, "JSON output");
  app.add_flag("--all-inputs", a->all_inputs,
               "tiny4: every four-byte input (with --shard, --stride)");
  app.add_option("--shard", a->shard,
                 "i/k: the i-th of k slices of the 65536 two-byte prefixes")
      ->capture_default_str();
  app.add_option("--stride", a->stride,
                 "every stride-th two-byte prefix (a strided subset)")
      ->check(CLI::Range(1, 65536))
      ->capture_default_str();
  app.add_option("--threads", a->threads, "worker threads")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  app.add_option("--corpus", a->corpus,
                 "certify evenly spaced windows of n_ctx bytes of this file")
      ->check(CLI::ExistingFile);
  app.add_option("--windows", a->windows, "how many --corpus windows")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  app.add_flag("--a-priori", a->apriori,
               "the bound for every input and all weights clipped to B "
               "(B = 0.5, 1, 2, 5, 10 unless --bound)");
  return [a, bound]() -> int {
    a->bound_given = bound->count() > 0;
    a->prompt.resolve();
    const bool has_prompt = !a->prompt.text.empty() || a->prompt.from_tokens();
    const int modes = int(a->all_inputs) + int(a->apriori) +
                      int(!a->corpus.empty()) + int(has_prompt);
    if (modes != 1)
      throw Error(
          "certify-tiny needs exactly one of: a prompt (--text, --tokens, "
          "--file, -), --all-inputs, --corpus PATH, --a-priori");
    if (a->model.kind() != ModelKind::kTiny)
      throw Error(
          "certify-tiny certifies the tiny binary64 models; for "
          "GPT-2 use lockstep certify");
    const TinyModel m = load_tiny(a->model.path());
    int rc = 0;
    if (a->apriori) {
      rc = run_apriori(*a, m.n_ctx);
    } else if (a->all_inputs) {
      rc = run_sweep(*a, m);
    } else if (!a->corpus.empty()) {
      rc = run_corpus(*a, m);
    } else {
      rc = run_one(*a, m);
    }
    flush_stdout();
    return rc;
  };
}

}  // namespace lockstep::cli
