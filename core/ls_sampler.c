/* Implements docs/arithmetic.md §5. See ls_sampler.h. */
#include "ls_sampler.h"

#include "ls_arith.h"

uint64_t ls_splitmix64_next(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double ls_uniform64(uint64_t* state) {
  return (double)(ls_splitmix64_next(state) >> 11) * 0x1p-53;
}

int ls_argmax64(const double* logits, int n) {
  int best = 0;
  for (int i = 1; i < n; ++i) {
    if (logits[i] > logits[best]) best = i;
  }
  return best;
}

/* Candidate a ranks before b: larger logit first, lower index on ties. */
static int ls_ranks_before(const double* logits, int a, int b) {
  return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
}

int ls_sample_top_k64(const double* logits, int n, int k, double temperature,
                      uint64_t* state, int* rank, double* weight) {
  /* Ranking by insertion into a sorted list of at most k entries: the
   * result is the order §5.3 defines, whatever algorithm a backend uses. */
  int len = 0;
  for (int i = 0; i < n; ++i) {
    if (len == k && !ls_ranks_before(logits, i, rank[k - 1])) continue;
    int pos = len < k ? len++ : k - 1;
    while (pos > 0 && ls_ranks_before(logits, i, rank[pos - 1])) {
      rank[pos] = rank[pos - 1];
      --pos;
    }
    rank[pos] = i;
  }
  /* Weights exp(z_i - z_max) with z = logit / temperature, summed in rank
   * order from +0.0. */
  double zmax = logits[rank[0]] / temperature;
  double sum = 0.0;
  for (int r = 0; r < k; ++r) {
    weight[r] = ls_exp64(logits[rank[r]] / temperature - zmax);
    sum = sum + weight[r];
  }
  double target = ls_uniform64(state) * sum;
  double c = 0.0;
  for (int r = 0; r < k; ++r) {
    c = c + weight[r];
    if (target < c) return rank[r];
  }
  return rank[k - 1];
}
