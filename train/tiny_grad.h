// The tiny model over a whole sequence, keeping every activation, and its
// gradient written out by hand (docs/models.md). The forward runs the core
// operations of core/ls_tiny.c in the same order, so the logits at position t
// are bit-identical to ls_tiny_forward on tokens[0..t]. The backward is
// plain binary64 arithmetic with no libm call (tanh is ls_tanh64, exp is
// ls_exp64), so a gradient is the same bits on every IEEE-754 machine built
// without FMA contraction.
#ifndef LOCKSTEP_TRAIN_TINY_GRAD_H_
#define LOCKSTEP_TRAIN_TINY_GRAD_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace lockstep::train {

// Activations and scratch for sequences of up to n_ctx tokens, allocated once
// by the constructor (throws lockstep::Error for n_ctx outside [1, 1024]).
// The members are the functions' private storage; read them only to debug.
struct Workspace {
  explicit Workspace(int n_ctx);

  int n_ctx;
  // Per position t: the embedding sum x0 (4), LayerNorm 1's normalised value
  // n1 (4), reciprocal deviation r1 (1) and output h1 (4); q|k|v (12); the
  // attention probabilities of both heads ([t][head][j], n_ctx each); the
  // attention output a (4); the residual x1 (4), LayerNorm 2's n2, r2, h2;
  // the fc pre-activation u (8) and gelu(u) f (8); the residual x2 (4); the
  // final LayerNorm's n3, r3, h3; and the 256 logits.
  std::vector<double> x0, n1, r1, h1, qkv, probs, a, x1, n2, r2, h2, u, f, x2,
      n3, r3, h3, logits;
  // Backward scratch: the q|k|v gradient of every position, the residual
  // gradient dx0 (4) of every position, and the gradient of one call
  // (ls_tiny_layout_for(n_ctx).total words) before it is added to grad.
  std::vector<double> dqkv, dx0, grad;
  // One row of attention scores and one row of output probabilities.
  std::vector<double> score, out_prob;
};

// The logits of every position: logits[t * 256 + o] for t in [0, n), each row
// bit-identical to ls_tiny_forward(w, n_ctx, tokens, t + 1, ...). w holds
// ls_tiny_layout_for(n_ctx).total weights (used as they are, not clipped).
// Throws lockstep::Error if n_ctx does not match ws, n is outside
// [1, n_ctx], a token is outside [0, 256), or a pointer is null.
void tiny_forward_all(const double* w, int n_ctx, const int32_t* tokens, int n,
                      double* logits, Workspace& ws);

// The cross-entropy of targets[t] under the logits of position t, for every
// t in [0, n). Returns the summed loss in nats (the only value computed with
// libm's log). Adds to grad[0..total) the gradient g of the MEAN loss over
// the n positions (the sum divided by n): g is computed whole in the
// workspace, then grad[i] = grad[i] + g[i], so accumulating over calls adds
// per-sequence gradients in call order. Throws lockstep::Error as
// tiny_forward_all does, and for a target outside [0, 256).
double tiny_loss_and_grad(const double* w, int n_ctx, const int32_t* tokens,
                          int n, const int32_t* targets, double* grad,
                          Workspace& ws);

// The summed cross-entropy (nats) of the n targets without a gradient; the
// forward is tiny_forward_all's.
double tiny_loss(const double* w, int n_ctx, const int32_t* tokens, int n,
                 const int32_t* targets, Workspace& ws);

}  // namespace lockstep::train

#endif  // LOCKSTEP_TRAIN_TINY_GRAD_H_
