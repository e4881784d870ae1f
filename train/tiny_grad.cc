#include "train/tiny_grad.h"

#include <cmath>
#include <string>

#include "lockstep/error.h"
#include "ls_arith.h"
#include "ls_ops64.h"
#include "ls_tiny.h"

namespace lockstep::train {
namespace {

constexpr int kE = LS_TINY_EMBD;
constexpr int kHd = LS_TINY_HEAD_DIM;
constexpr int kHeads = LS_TINY_HEADS;
constexpr int kFf = LS_TINY_FF;
constexpr int kV = LS_TINY_VOCAB;
constexpr int kQkv = 3 * kE;
// The divisor of the attention scores, as in core/ls_tiny.c.
constexpr double kSqrtHeadDim = 0x1.6a09e667f3bcdp+0;
// LayerNorm epsilon 1e-5 rounded to binary64, as in core/ls_ops64.c.
constexpr double kLnEps = 0x1.4f8b588e368f1p-17;
// The GELU constants of core/ls_arith.c: sqrt(2/pi) and 0.044715.
constexpr double kGeluC = 0x1.9884533d43651p-1;
constexpr double kGeluA = 0x1.6e4e26d4801f7p-5;

// LayerNorm of 4 values through the core op (the bits the model uses), plus
// the normalised deviations and the reciprocal deviation the backward needs,
// computed in ls_layernorm64's order.
void layernorm_keep(const double* x, const double* g, const double* b,
                    double* y, double* nrm, double* r_out) {
  ls_layernorm64(x, g, b, kE, y);
  double sum = 0.0;
  for (int k = 0; k < kE; ++k) sum = sum + x[k];
  const double mean = sum / kE;
  double d[kE];
  for (int k = 0; k < kE; ++k) d[k] = x[k] - mean;
  const double var = ls_dot64(d, d, kE, 1) / kE;
  const double r = 1.0 / std::sqrt(var + kLnEps);
  for (int k = 0; k < kE; ++k) nrm[k] = d[k] * r;
  *r_out = r;
}

// Backward of y = nrm * g + b with nrm = (x - mean(x)) * r: adds the gain and
// bias gradients to gg, gb and the input gradient to dx.
void layernorm_backward(const double* nrm, double r, const double* g,
                        const double* dy, double* gg, double* gb, double* dx) {
  double dn[kE];
  double sum_dn_n = 0.0;
  for (int k = 0; k < kE; ++k) {
    gg[k] += dy[k] * nrm[k];
    gb[k] += dy[k];
    dn[k] = dy[k] * g[k];
    sum_dn_n = sum_dn_n + dn[k] * nrm[k];
  }
  // Gradient with respect to the deviations d = x - mean, then through the
  // mean subtraction.
  double dd[kE];
  double sum_dd = 0.0;
  for (int k = 0; k < kE; ++k) {
    dd[k] = r * dn[k] - r * nrm[k] * (sum_dn_n / kE);
    sum_dd = sum_dd + dd[k];
  }
  const double mean_dd = sum_dd / kE;
  for (int k = 0; k < kE; ++k) dx[k] += dd[k] - mean_dd;
}

// d/dx of the tanh GELU 0.5 x (1 + tanh(c (x + a x^3))).
double gelu_grad(double x) {
  const double x2 = x * x;
  const double t = ls_tanh64(kGeluC * (x + kGeluA * (x2 * x)));
  return 0.5 * (1.0 + t) +
         (0.5 * x) * (1.0 - t * t) * kGeluC * (1.0 + 3.0 * kGeluA * x2);
}

void check_args(int n_ctx, const double* w, const int32_t* tokens, int n,
                const Workspace& ws, const char* what) {
  const std::string fn(what);
  if (ls_tiny_layout_for(n_ctx).total == 0) {
    throw Error(fn + ": n_ctx " + std::to_string(n_ctx) +
                " is outside [1, 1024]");
  }
  if (ws.n_ctx != n_ctx) {
    throw Error(fn + ": workspace is sized for n_ctx " +
                std::to_string(ws.n_ctx) + ", not " + std::to_string(n_ctx));
  }
  if (n < 1 || n > n_ctx) {
    throw Error(fn + ": sequence length " + std::to_string(n) +
                " is outside [1, " + std::to_string(n_ctx) + "]");
  }
  if (w == nullptr || tokens == nullptr) {
    throw Error(fn + ": null weights or tokens");
  }
  for (int t = 0; t < n; ++t) {
    if (tokens[t] < 0 || tokens[t] >= kV) {
      throw Error(fn + ": token " + std::to_string(tokens[t]) +
                  " at position " + std::to_string(t) + " is outside [0, 256)");
    }
  }
}

void check_targets(const int32_t* targets, int n, const char* what) {
  if (targets == nullptr) throw Error(std::string(what) + ": null targets");
  for (int t = 0; t < n; ++t) {
    if (targets[t] < 0 || targets[t] >= kV) {
      throw Error(std::string(what) + ": target " + std::to_string(targets[t]) +
                  " at position " + std::to_string(t) + " is outside [0, 256)");
    }
  }
}

// The forward of every position into ws (logits into ws.logits), in the
// operation order of ls_tiny_forward. Arguments already validated.
void forward(const double* w, int n_ctx, const int32_t* tokens, int n,
             Workspace& ws) {
  const ls_tiny_layout L = ls_tiny_layout_for(n_ctx);
  const size_t nc = static_cast<size_t>(n_ctx);
  // Embeddings, LayerNorm 1 and q, k, v of every position.
  for (int t = 0; t < n; ++t) {
    double* x0 = &ws.x0[t * kE];
    const double* te = w + L.wte + static_cast<size_t>(tokens[t]) * kE;
    const double* pe = w + L.wpe + static_cast<size_t>(t) * kE;
    for (int i = 0; i < kE; ++i) x0[i] = te[i] + pe[i];
    double* h1 = &ws.h1[t * kE];
    layernorm_keep(x0, w + L.ln1_g, w + L.ln1_b, h1, &ws.n1[t * kE], &ws.r1[t]);
    ls_matvec64(h1, w + L.qkv_w, nullptr, kE, kQkv, &ws.qkv[t * kQkv]);
  }
  double* score = ws.score.data();
  for (int t = 0; t < n; ++t) {
    // Causal attention of position t, head by head.
    const double* q = &ws.qkv[t * kQkv];
    double* a = &ws.a[t * kE];
    for (int head = 0; head < kHeads; ++head) {
      for (int j = 0; j <= t; ++j) {
        const double* k = &ws.qkv[j * kQkv + kE];
        score[j] =
            ls_dot64(q + head * kHd, k + head * kHd, kHd, 1) / kSqrtHeadDim;
      }
      double* p = &ws.probs[(static_cast<size_t>(t) * kHeads + head) * nc];
      ls_softmax64(score, t + 1, p);
      ls_weighted_sum64(p, &ws.qkv[2 * kE + head * kHd], t + 1, kQkv, kHd,
                        a + head * kHd);
    }
    double y[kE];
    ls_matvec64(a, w + L.proj_w, w + L.proj_b, kE, kE, y);
    const double* x0 = &ws.x0[t * kE];
    double* x1 = &ws.x1[t * kE];
    for (int i = 0; i < kE; ++i) x1[i] = x0[i] + y[i];

    // The feed-forward sub-block.
    double* h2 = &ws.h2[t * kE];
    layernorm_keep(x1, w + L.ln2_g, w + L.ln2_b, h2, &ws.n2[t * kE], &ws.r2[t]);
    double* u = &ws.u[t * kFf];
    double* f = &ws.f[t * kFf];
    ls_matvec64(h2, w + L.fc_w, w + L.fc_b, kE, kFf, u);
    for (int i = 0; i < kFf; ++i) f[i] = ls_gelu64(u[i]);
    ls_matvec64(f, w + L.out_w, w + L.out_b, kFf, kE, y);
    double* x2 = &ws.x2[t * kE];
    for (int i = 0; i < kE; ++i) x2[i] = x1[i] + y[i];

    // Final LayerNorm and the output head.
    double* h3 = &ws.h3[t * kE];
    layernorm_keep(x2, w + L.lnf_g, w + L.lnf_b, h3, &ws.n3[t * kE], &ws.r3[t]);
    ls_matvec64(h3, w + L.head_w, w + L.head_b, kE, kV,
                &ws.logits[static_cast<size_t>(t) * kV]);
  }
}

// -log softmax(logits)[target] in nats, with the softmax (exp by ls_exp64,
// max subtracted) written to prob when prob is not null.
double cross_entropy(const double* logits, int target, double* prob) {
  double m = logits[0];
  for (int o = 1; o < kV; ++o) m = logits[o] > m ? logits[o] : m;
  double e[kV];
  double sum = 0.0;
  for (int o = 0; o < kV; ++o) {
    e[o] = ls_exp64(logits[o] - m);
    sum = sum + e[o];
  }
  if (prob != nullptr) {
    for (int o = 0; o < kV; ++o) prob[o] = e[o] / sum;
  }
  return std::log(sum) - (logits[target] - m);
}

}  // namespace

Workspace::Workspace(int n_ctx_in) : n_ctx(n_ctx_in) {
  if (ls_tiny_layout_for(n_ctx).total == 0) {
    throw Error("tiny workspace: n_ctx " + std::to_string(n_ctx) +
                " is outside [1, 1024]");
  }
  const size_t nc = static_cast<size_t>(n_ctx);
  for (auto* v : {&x0, &n1, &h1, &a, &x1, &n2, &h2, &x2, &n3, &h3, &dx0}) {
    v->assign(nc * kE, 0.0);
  }
  for (auto* v : {&r1, &r2, &r3, &score}) v->assign(nc, 0.0);
  qkv.assign(nc * kQkv, 0.0);
  dqkv.assign(nc * kQkv, 0.0);
  probs.assign(nc * kHeads * nc, 0.0);
  u.assign(nc * kFf, 0.0);
  f.assign(nc * kFf, 0.0);
  logits.assign(nc * kV, 0.0);
  out_prob.assign(kV, 0.0);
  grad.assign(ls_tiny_layout_for(n_ctx).total, 0.0);
}

void tiny_forward_all(const double* w, int n_ctx, const int32_t* tokens, int n,
                      double* logits, Workspace& ws) {
  check_args(n_ctx, w, tokens, n, ws, "tiny_forward_all");
  if (logits == nullptr) throw Error("tiny_forward_all: null logits");
  forward(w, n_ctx, tokens, n, ws);
  const size_t count = static_cast<size_t>(n) * kV;
  for (size_t i = 0; i < count; ++i) logits[i] = ws.logits[i];
}

double tiny_loss(const double* w, int n_ctx, const int32_t* tokens, int n,
                 const int32_t* targets, Workspace& ws) {
  check_args(n_ctx, w, tokens, n, ws, "tiny_loss");
  check_targets(targets, n, "tiny_loss");
  forward(w, n_ctx, tokens, n, ws);
  double loss = 0.0;
  for (int t = 0; t < n; ++t) {
    loss += cross_entropy(&ws.logits[static_cast<size_t>(t) * kV], targets[t],
                          nullptr);
  }
  return loss;
}

double tiny_loss_and_grad(const double* w, int n_ctx, const int32_t* tokens,
                          int n, const int32_t* targets, double* grad_out,
                          Workspace& ws) {
  check_args(n_ctx, w, tokens, n, ws, "tiny_loss_and_grad");
  check_targets(targets, n, "tiny_loss_and_grad");
  if (grad_out == nullptr) throw Error("tiny_loss_and_grad: null gradient");
  forward(w, n_ctx, tokens, n, ws);
  const ls_tiny_layout L = ls_tiny_layout_for(n_ctx);
  double* grad = ws.grad.data();
  for (size_t i = 0; i < L.total; ++i) grad[i] = 0.0;
  const size_t nc = static_cast<size_t>(n_ctx);
  const double inv_n = 1.0 / n;
  for (int i = 0; i < n * kQkv; ++i) ws.dqkv[i] = 0.0;

  double loss = 0.0;
  double* prob = ws.out_prob.data();
  for (int t = 0; t < n; ++t) {
    // Output softmax: d(mean loss)/d logits = (softmax - onehot) / n.
    loss += cross_entropy(&ws.logits[static_cast<size_t>(t) * kV], targets[t],
                          prob);
    double dl[kV];
    for (int o = 0; o < kV; ++o) dl[o] = prob[o] * inv_n;
    dl[targets[t]] = (prob[targets[t]] - 1.0) * inv_n;

    // Output head: logits = h3 @ head_w + head_b.
    const double* h3 = &ws.h3[t * kE];
    double dh3[kE];
    for (int k = 0; k < kE; ++k) {
      const double* wrow = w + L.head_w + static_cast<size_t>(k) * kV;
      double* grow = grad + L.head_w + static_cast<size_t>(k) * kV;
      double acc = 0.0;
      for (int o = 0; o < kV; ++o) {
        acc = acc + wrow[o] * dl[o];
        grow[o] += h3[k] * dl[o];
      }
      dh3[k] = acc;
    }
    for (int o = 0; o < kV; ++o) grad[L.head_b + o] += dl[o];

    // Final LayerNorm.
    double dx2[kE] = {0.0, 0.0, 0.0, 0.0};
    layernorm_backward(&ws.n3[t * kE], ws.r3[t], w + L.lnf_g, dh3,
                       grad + L.lnf_g, grad + L.lnf_b, dx2);

    // Feed-forward output: x2 = x1 + f @ out_w + out_b.
    const double* f = &ws.f[t * kFf];
    const double* u = &ws.u[t * kFf];
    double du[kFf];
    for (int i = 0; i < kFf; ++i) {
      double acc = 0.0;
      for (int o = 0; o < kE; ++o) {
        acc = acc + w[L.out_w + i * kE + o] * dx2[o];
        grad[L.out_w + i * kE + o] += f[i] * dx2[o];
      }
      du[i] = acc * gelu_grad(u[i]);
    }
    for (int o = 0; o < kE; ++o) grad[L.out_b + o] += dx2[o];

    // fc: u = h2 @ fc_w + fc_b.
    const double* h2 = &ws.h2[t * kE];
    double dh2[kE];
    for (int k = 0; k < kE; ++k) {
      double acc = 0.0;
      for (int i = 0; i < kFf; ++i) {
        acc = acc + w[L.fc_w + k * kFf + i] * du[i];
        grad[L.fc_w + k * kFf + i] += h2[k] * du[i];
      }
      dh2[k] = acc;
    }
    for (int i = 0; i < kFf; ++i) grad[L.fc_b + i] += du[i];

    // LayerNorm 2 and the residual: dx1 = dx2 + LN2'(dh2).
    double dx1[kE];
    for (int k = 0; k < kE; ++k) dx1[k] = dx2[k];
    layernorm_backward(&ws.n2[t * kE], ws.r2[t], w + L.ln2_g, dh2,
                       grad + L.ln2_g, grad + L.ln2_b, dx1);

    // Attention projection: x1 = x0 + a @ proj_w + proj_b.
    const double* a = &ws.a[t * kE];
    double da[kE];
    for (int k = 0; k < kE; ++k) {
      double acc = 0.0;
      for (int o = 0; o < kE; ++o) {
        acc = acc + w[L.proj_w + k * kE + o] * dx1[o];
        grad[L.proj_w + k * kE + o] += a[k] * dx1[o];
      }
      da[k] = acc;
    }
    for (int o = 0; o < kE; ++o) grad[L.proj_b + o] += dx1[o];
    for (int k = 0; k < kE; ++k) ws.dx0[t * kE + k] = dx1[k];

    // Attention of position t: s_j = q_t . k_j / sqrt2, p = softmax(s),
    // a = sum_j p_j v_j.
    const double* q = &ws.qkv[t * kQkv];
    double* dq = &ws.dqkv[t * kQkv];
    for (int head = 0; head < kHeads; ++head) {
      const int c = head * kHd;
      const double* p =
          &ws.probs[(static_cast<size_t>(t) * kHeads + head) * nc];
      const double da0 = da[c];
      const double da1 = da[c + 1];
      double* dp = ws.score.data();
      double sum_pdp = 0.0;
      for (int j = 0; j <= t; ++j) {
        const double* v = &ws.qkv[j * kQkv + 2 * kE + c];
        double* dv = &ws.dqkv[j * kQkv + 2 * kE + c];
        dp[j] = da0 * v[0] + da1 * v[1];
        dv[0] += p[j] * da0;
        dv[1] += p[j] * da1;
        sum_pdp = sum_pdp + p[j] * dp[j];
      }
      double dq0 = 0.0;
      double dq1 = 0.0;
      for (int j = 0; j <= t; ++j) {
        const double ds = p[j] * (dp[j] - sum_pdp) / kSqrtHeadDim;
        const double* k = &ws.qkv[j * kQkv + kE + c];
        double* dk = &ws.dqkv[j * kQkv + kE + c];
        dq0 = dq0 + ds * k[0];
        dq1 = dq1 + ds * k[1];
        dk[0] += ds * q[c];
        dk[1] += ds * q[c + 1];
      }
      dq[c] += dq0;
      dq[c + 1] += dq1;
    }
  }

  // q, k, v projections, LayerNorm 1 and the embeddings of every position.
  for (int t = 0; t < n; ++t) {
    const double* h1 = &ws.h1[t * kE];
    const double* dqkv = &ws.dqkv[t * kQkv];
    double dh1[kE];
    for (int k = 0; k < kE; ++k) {
      double acc = 0.0;
      for (int o = 0; o < kQkv; ++o) {
        acc = acc + w[L.qkv_w + k * kQkv + o] * dqkv[o];
        grad[L.qkv_w + k * kQkv + o] += h1[k] * dqkv[o];
      }
      dh1[k] = acc;
    }
    double* dx0 = &ws.dx0[t * kE];
    layernorm_backward(&ws.n1[t * kE], ws.r1[t], w + L.ln1_g, dh1,
                       grad + L.ln1_g, grad + L.ln1_b, dx0);
    double* gte = grad + L.wte + static_cast<size_t>(tokens[t]) * kE;
    double* gpe = grad + L.wpe + static_cast<size_t>(t) * kE;
    for (int k = 0; k < kE; ++k) {
      gte[k] += dx0[k];
      gpe[k] += dx0[k];
    }
  }
  for (size_t i = 0; i < L.total; ++i) grad_out[i] = grad_out[i] + grad[i];
  return loss;
}

}  // namespace lockstep::train
