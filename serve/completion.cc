#include "serve/completion.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "cli/generate_args.h"
#include "formats/sha256.h"
#include "lockstep/error.h"
#include "lockstep/sampling.h"

extern "C" {
#include "ls_arith.h"
}

namespace lockstep::serve {
namespace {

// Log-probabilities for display (docs/serve.md "Log-probabilities"): the
// binary32 logits widened exactly, the largest subtracted, exp by the
// spec's ls_exp64 summed in index order, then libm's log once. The exact
// record of a step is its logits' digest, not these numbers.
TokenLogprobs logprobs_of(std::span<const float> logits, int32_t chosen,
                          int top, std::vector<int32_t>& order) {
  const float mx = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float v : logits) sum += ls_exp64(double(v) - double(mx));
  const double lse = double(mx) + std::log(sum);
  TokenLogprobs out;
  out.chosen = double(logits[size_t(chosen)]) - lse;
  if (top > 0) {
    order.resize(logits.size());
    std::iota(order.begin(), order.end(), 0);
    const size_t n = std::min(size_t(top), order.size());
    std::partial_sort(
        order.begin(), order.begin() + long(n), order.end(),
        [&](int32_t x, int32_t y) {
          return logits[size_t(x)] > logits[size_t(y)] ||
                 (logits[size_t(x)] == logits[size_t(y)] && x < y);
        });
    for (size_t i = 0; i < n; ++i) {
      out.top.emplace_back(order[i], double(logits[size_t(order[i])]) - lse);
    }
  }
  return out;
}

}  // namespace

const char* openai_finish(Finish f) {
  return f == Finish::kLength || f == Finish::kContext ? "length" : "stop";
}

const char* lockstep_finish(Finish f) {
  switch (f) {
    case Finish::kLength:
      return "length";
    case Finish::kContext:
      return "context";
    case Finish::kEndOfText:
      return "eot";
    case Finish::kStopString:
      return "stop_string";
    case Finish::kCancelled:
      return "cancelled";
  }
  return "length";
}

size_t complete_utf8_prefix(std::string_view b) {
  const size_t n = b.size();
  // The last lead byte within the final 3 bytes, if any.
  for (size_t back = 1; back <= std::min<size_t>(3, n); ++back) {
    const auto c = uint8_t(b[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte
    const size_t need = (c & 0xE0) == 0xC0   ? 2
                        : (c & 0xF0) == 0xE0 ? 3
                        : (c & 0xF8) == 0xF0 ? 4
                                             : 1;
    return need > back ? n - back : n;
  }
  return n;
}

Completion run_completion(
    cli::Gpt2Runner& session, const CompletionRequest& r, const Tokenizer& tok,
    int n_ctx, const std::function<bool(const StepEvent&)>& on_step) {
  using Clock = std::chrono::steady_clock;
  Completion c;
  Sampler sampler(r.sampler, tok.vocab_size());
  cli::StopStream out(r.stops, /*print=*/false);
  Sha256Hasher all;
  std::vector<int32_t> order;
  size_t released = 0;

  const auto t0 = Clock::now();
  session.reset();
  std::span<const float> logits = session.prefill(r.prompt_tokens);
  const auto t1 = Clock::now();
  c.prefill_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  size_t length = r.prompt_tokens.size();
  for (int i = 0;; ++i) {
    StepEvent ev;
    ev.index = i;
    ev.logits_sha256 = to_hex(sha256(logits.data(), logits.size_bytes()));
    all.update(logits.data(), logits.size_bytes());
    const int32_t next = sampler.next(logits);
    if (r.top_logprobs >= 0) {
      c.logprobs.push_back(logprobs_of(logits, next, r.top_logprobs, order));
      ev.logprobs = &c.logprobs.back();
    }
    c.tokens.push_back(next);
    c.logits_sha256.push_back(ev.logits_sha256);
    ev.token = next;
    ++length;
    // The order of cli/gpt2_generate.cc: <|endoftext|> (not text), a stop
    // string, the length asked, then the context.
    bool end = true;
    if (next == Tokenizer::kEndOfText) {
      c.finish = Finish::kEndOfText;
    } else if (out.add(tok.token_bytes(next))) {
      c.finish = Finish::kStopString;
      c.stop_string = out.stopped_by();
    } else if (i + 1 == r.max_tokens) {
      c.finish = Finish::kLength;
    } else if (length >= size_t(n_ctx)) {
      c.finish = Finish::kContext;
    } else {
      end = false;
    }
    if (end) out.finish();
    const std::string_view ready(out.text().data() + released,
                                 out.emitted() - released);
    const size_t n = end ? ready.size() : complete_utf8_prefix(ready);
    ev.text.assign(ready.data(), n);
    released += n;
    if (on_step && !on_step(ev)) {
      c.finish = Finish::kCancelled;
      end = true;
    }
    if (end) break;
    logits = session.step(next);
  }
  c.text = out.text();
  c.logits_sha256_all = to_hex(all.finish());
  c.generate_ms =
      std::chrono::duration<double, std::milli>(Clock::now() - t1).count();
  return c;
}

}  // namespace lockstep::serve
