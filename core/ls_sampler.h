/* Token selection (docs/arithmetic.md §5): greedy argmax, seeded top-k
 * sampling with temperature and top-p (nucleus) sampling, defined so that a
 * seed gives the same tokens on every platform. Plain C99 on caller
 * buffers. */
#ifndef LOCKSTEP_CORE_LS_SAMPLER_H_
#define LOCKSTEP_CORE_LS_SAMPLER_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* §5.1 SplitMix64: state += 0x9e3779b97f4a7c15, then the output mix. */
uint64_t ls_splitmix64_next(uint64_t* state);

/* §5.1: a binary64 uniform in [0, 1): the top 53 bits times 2^-53. */
double ls_uniform64(uint64_t* state);

/* §5.2: index of the largest logit; the lowest index wins ties. */
int ls_argmax64(const double* logits, int n);

/* §5.3 step 1: writes the k candidates with the largest logits into
 * rank[0..k), by logit descending, ties by lower index first. Requires
 * 1 <= k <= n. */
void ls_rank_top_k64(const double* logits, int n, int k, int* rank);

/* §5.3: top-k sampling. Writes the k ranked candidate indices into
 * rank[0..k) and their unnormalised weights into weight[0..k), draws one
 * uniform from *state and returns the chosen token. Requires 1 <= k <= n and
 * temperature > 0 (finite); the caller validates both. */
int ls_sample_top_k64(const double* logits, int n, int k, double temperature,
                      uint64_t* state, int* rank, double* weight);

/* §5.4: top-p (nucleus) sampling within the top k (k = n for top-p alone).
 * Ranks and weighs the k candidates as §5.3 (rank[0..k), weight[0..k)),
 * keeps the shortest prefix of the ranking whose running weight sum reaches
 * top_p times the total, writes its length to *kept (when kept is not
 * NULL), draws one uniform from *state and returns the chosen token.
 * Requires 1 <= k <= n, temperature > 0 (finite) and 0 < top_p <= 1; the
 * caller validates them. */
int ls_sample_top_p64(const double* logits, int n, int k, double temperature,
                      double top_p, uint64_t* state, int* rank, double* weight,
                      int* kept);

#ifdef __cplusplus
}
#endif

#endif /* LOCKSTEP_CORE_LS_SAMPLER_H_ */
