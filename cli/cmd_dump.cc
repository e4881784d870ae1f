// lockstep dump: every layer's named intermediate tensors of the reference
// (core/ls_gpt2.c's full-prefix pass, observed) for one prompt, as a
// safetensors file that Hugging Face users can load (docs/verify.md).
#include <cstdio>
#include <limits>
#include <map>

#include "cli/commands.h"
#include "cli/generate_args.h"
#include "formats/gpt2_checkpoint.h"
#include "formats/safetensors.h"
#include "lib/verify.h"
#include "lockstep/error.h"
#include "lockstep/paths.h"
#include "ls_gpt2_layout.h"
#include "tokenizer/bpe.h"

namespace lockstep::cli {
namespace {

struct DumpArgs {
  ModelArgs model;
  PromptArgs prompt;
  std::string out;
  bool special = false;
};

// One named tensor being filled by the observer.
struct Tensor {
  std::vector<uint64_t> shape;
  std::vector<float> data;
};

struct Collector {
  int n, n_head;
  std::map<std::string, Tensor> tensors;
  std::vector<std::string> order;

  Tensor& get(const std::string& name, std::vector<uint64_t> shape,
              float fill) {
    auto it = tensors.find(name);
    if (it != tensors.end()) return it->second;
    order.push_back(name);
    size_t count = 1;
    for (uint64_t d : shape) count *= size_t(d);
    Tensor& t = tensors[name];
    t.shape = std::move(shape);
    t.data.assign(count, fill);
    return t;
  }

  static void observe(void* user, int layer, ls_gpt2_tap tap, int position,
                      int head, const float* data, size_t count) {
    auto* c = static_cast<Collector*>(user);
    const std::string name = gpt2_op_name(layer, tap);
    const uint64_t N = uint64_t(c->n);
    if (tap == LS_TAP_ATT_SCORE || tap == LS_TAP_ATT_PROB) {
      // [n_head, n, n]: row `position`, keys 0..position; the masked
      // (later) keys hold -inf as scores and 0 as probabilities.
      const float fill = tap == LS_TAP_ATT_SCORE
                             ? -std::numeric_limits<float>::infinity()
                             : 0.0f;
      Tensor& t = c->get(name, {uint64_t(c->n_head), N, N}, fill);
      float* dst = t.data.data() + (size_t(head) * N + size_t(position)) * N;
      std::copy(data, data + count, dst);
      return;
    }
    Tensor& t = c->get(name, {N, uint64_t(count)}, 0.0f);
    std::copy(data, data + count, t.data.data() + size_t(position) * count);
  }
};

int run(const DumpArgs& a) {
  if (a.model.kind() != ModelKind::kGpt2) {
    throw Error("lockstep dump is for GPT-2 models");
  }
  const Gpt2Weights w = load_gpt2(a.model.path());
  const ls_gpt2_config& c = w.config;
  const std::vector<int32_t> tokens =
      a.prompt.from_tokens() ? parse_token_list(a.prompt.tokens)
                             : Tokenizer::load(data_dir() + "/gpt2")
                                   .encode(a.prompt.text, a.special);
  if (tokens.empty())
    throw Error("no tokens: give --tokens, --text, --file or -");
  if (tokens.size() > size_t(c.n_ctx)) {
    throw Error(std::to_string(tokens.size()) +
                " tokens exceed the context of " + std::to_string(c.n_ctx));
  }
  for (int32_t t : tokens) {
    if (t < 0 || t >= c.n_vocab) {
      throw Error("token " + std::to_string(t) +
                  " is outside the vocabulary of " + std::to_string(c.n_vocab));
    }
  }
  // The core reads the plain layout.
  std::vector<float> plain;
  const float* pw = w.data();
  if (w.layout == LS_GPT2_LAYOUT_PANEL64) {
    plain.resize(w.words());
    ls_gpt2_from_panels(&c, w.data(), plain.data());
    pw = plain.data();
  }
  const int n = int(tokens.size());
  std::vector<float> scratch(ls_gpt2_infer_scratch_floats(&c, n));
  std::vector<float> logits(size_t(n) * size_t(c.n_vocab));
  Collector col{n, c.n_head, {}, {}};
  const ls_status s = ls_gpt2_infer_observed(
      &c, pw, w.words(), tokens.data(), n, scratch.data(), scratch.size(),
      logits.data(), &Collector::observe, &col);
  if (s != LS_OK)
    throw Error(std::string("reference pass: ") + ls_status_message(s));

  std::vector<SafetensorsTensorData> out;
  uint64_t bytes = 0;
  for (const std::string& name : col.order) {
    const Tensor& t = col.tensors.at(name);
    SafetensorsTensorData d;
    d.name = name;
    d.dtype = StDtype::kF32;
    d.shape = t.shape;
    const auto* p = reinterpret_cast<const uint8_t*>(t.data.data());
    d.bytes.assign(p, p + t.data.size() * sizeof(float));
    bytes += d.bytes.size();
    out.push_back(std::move(d));
  }
  std::string ids;
  for (int32_t t : tokens) ids += (ids.empty() ? "" : ",") + std::to_string(t);
  write_safetensors(a.out, out,
                    {{"format", "lockstep-dump/1"},
                     {"tokens", ids},
                     {"weights_plain_sha256", w.plain_sha256},
                     {"source", "core/ls_gpt2.c ls_gpt2_infer_observed"},
                     {"names", "docs/verify.md#lockstep-dump"}});
  std::fprintf(stderr, "wrote %zu tensors (%d positions, %.1f MB) to %s\n",
               out.size(), n, double(bytes) / 1e6, a.out.c_str());
  return 0;
}

}  // namespace

Action add_dump(CLI::App& app) {
  auto a = std::make_shared<DumpArgs>();
  a->model.add(app);
  a->prompt.add(app, "text to tokenize first", "token ids, e.g. 15496,995",
                false);
  app.add_option("--out,-o", a->out,
                 "output .safetensors file (F32 tensors named embed, "
                 "h<l>.ln1, h<l>.qkv, ..., ln_f, logits)")
      ->required();
  app.add_flag("--special", a->special, "'<|endoftext|>' is token 50256");
  app.footer(
      "Every tensor is the reference's own (core/ls_gpt2.c), computed in "
      "full: the\nattention tensors are [n_head, n, n], so a long prompt "
      "on a large model is\nlarge (124M at 1,024 tokens: about 1.3 GB).\n\n"
      "Example:\n"
      "  lockstep dump --model gpt2.lockstep --text 'Hello world' --out "
      "acts.safetensors");
  return [a]() {
    a->prompt.resolve();
    return run(*a);
  };
}

}  // namespace lockstep::cli
