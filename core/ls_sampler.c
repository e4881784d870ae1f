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

/* Candidate a ranks before b: larger logit first, lower index on ties. A
 * strict total order on indices (for finite logits), so the ranking below
 * is the one §5.3 defines whatever algorithm computes it. */
static int ls_ranks_before(const double* logits, int a, int b) {
  return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
}

/* h[0..len) is a binary heap whose root ranks last: every child ranks
 * before its parent. */
static void ls_heap_down(const double* logits, int* h, int len, int i) {
  for (;;) {
    const int l = 2 * i + 1;
    int last = i;
    if (l < len && ls_ranks_before(logits, h[last], h[l])) last = l;
    if (l + 1 < len && ls_ranks_before(logits, h[last], h[l + 1])) {
      last = l + 1;
    }
    if (last == i) return;
    const int t = h[i];
    h[i] = h[last];
    h[last] = t;
    i = last;
  }
}

static void ls_heap_up(const double* logits, int* h, int i) {
  while (i > 0) {
    const int parent = (i - 1) / 2;
    if (!ls_ranks_before(logits, h[parent], h[i])) return;
    const int t = h[i];
    h[i] = h[parent];
    h[parent] = t;
    i = parent;
  }
}

/* Sorting distinct keys ascending in place: introsort (quicksort with a
 * median of three, insertion sort for short ranges, heapsort past a depth
 * limit), O(n log n) on any input. The keys are distinct, so any correct
 * sort gives the same order. */
static void ls_key_heap_down(double* a, int len, int i) {
  for (;;) {
    const int l = 2 * i + 1;
    int big = i;
    if (l < len && a[l] > a[big]) big = l;
    if (l + 1 < len && a[l + 1] > a[big]) big = l + 1;
    if (big == i) return;
    const double t = a[i];
    a[i] = a[big];
    a[big] = t;
    i = big;
  }
}

static void ls_key_sort(double* a, int n, int depth) {
  while (n > 16) {
    if (depth-- == 0) {
      for (int i = n / 2 - 1; i >= 0; --i) ls_key_heap_down(a, n, i);
      for (int end = n - 1; end > 0; --end) {
        const double t = a[0];
        a[0] = a[end];
        a[end] = t;
        ls_key_heap_down(a, end, 0);
      }
      return;
    }
    /* The median of the first, middle and last keys as the pivot, moved to
     * the end; then a partition without data-dependent branches (every
     * step swaps, and the boundary advances by the comparison's 0 or 1). */
    const int mid = n / 2, last = n - 1;
    int m = a[0] < a[mid]
                ? (a[mid] < a[last] ? mid : (a[0] < a[last] ? last : 0))
                : (a[0] < a[last] ? 0 : (a[mid] < a[last] ? last : mid));
    const double pivot = a[m];
    a[m] = a[last];
    a[last] = pivot;
    int store = 0;
    for (int i = 0; i < last; ++i) {
      const double v = a[i];
      const int below = v < pivot;
      a[i] = a[store];
      a[store] = v;
      store += below;
    }
    a[last] = a[store];
    a[store] = pivot;
    /* a[0..store) < pivot < a[store+1..n): recurse on the shorter side. */
    const int right = n - store - 1;
    if (store < right) {
      ls_key_sort(a, store, depth);
      a += store + 1;
      n = right;
    } else {
      ls_key_sort(a + store + 1, right, depth);
      n = store;
    }
  }
  for (int i = 1; i < n; ++i) {
    const double v = a[i];
    int j = i;
    while (j > 0 && a[j - 1] > v) {
      a[j] = a[j - 1];
      --j;
    }
    a[j] = v;
  }
}

/* The whole vocabulary ranked when every logit is a binary32 value (GPT-2's
 * widened logits) and n <= 2^20: each candidate becomes one integer key,
 * (descending rank of its binary32 bits) * 2^20 + index, below 2^52 and so
 * an exact binary64 integer, sorted in `scratch` (n doubles). The key order
 * is §5.3's ranking (logit descending, -0.0 equal to +0.0, then index).
 * Returns 0 (nothing written to rank) when a logit is not binary32. */
static int ls_rank_all_binary32(const double* logits, int n, int* rank,
                                double* scratch) {
  if (n > (1 << 20)) return 0;
  for (int i = 0; i < n; ++i) {
    const float f = (float)logits[i];
    if ((double)f != logits[i]) return 0; /* not binary32, or NaN */
    union {
      float f;
      uint32_t u;
    } b;
    b.f = f == 0.0f ? 0.0f : f;
    /* Order-preserving unsigned image of the float, then reversed. */
    const uint32_t ord = (b.u & 0x80000000u) ? ~b.u : (b.u | 0x80000000u);
    const uint32_t desc = ~ord;
    scratch[i] = (double)(((uint64_t)desc << 20) | (uint64_t)i);
  }
  int depth = 0;
  for (int m = n; m > 1; m >>= 1) depth += 2;
  ls_key_sort(scratch, n, depth);
  for (int r = 0; r < n; ++r) {
    rank[r] = (int)((uint64_t)scratch[r] & 0xfffffu);
  }
  return 1;
}

/* §5.3 step 1: rank[0..k) = the k best candidates, best first. Selection
 * keeps the k best seen so far in a heap (the worst of them at the root),
 * then heapsort orders them: O(n log k). */
void ls_rank_top_k64(const double* logits, int n, int k, int* rank) {
  int len = 0;
  for (int i = 0; i < n; ++i) {
    if (len < k) {
      rank[len] = i;
      ls_heap_up(logits, rank, len);
      ++len;
    } else if (ls_ranks_before(logits, i, rank[0])) {
      rank[0] = i;
      ls_heap_down(logits, rank, k, 0);
    }
  }
  for (int end = k - 1; end > 0; --end) {
    const int t = rank[0];
    rank[0] = rank[end];
    rank[end] = t;
    ls_heap_down(logits, rank, end, 0);
  }
}

/* §5.3 steps 2-3: weight[r] = exp(logit[rank[r]] / T - zmax), summed in
 * rank order from +0.0; returns the sum. */
static double ls_rank_weights64(const double* logits, int k, double temperature,
                                const int* rank, double* weight) {
  const double zmax = logits[rank[0]] / temperature;
  double sum = 0.0;
  for (int r = 0; r < k; ++r) {
    weight[r] = ls_exp64(logits[rank[r]] / temperature - zmax);
    sum = sum + weight[r];
  }
  return sum;
}

/* §5.3 steps 4-5 over rank[0..m) whose weights sum to `sum`. */
static int ls_draw64(int m, double sum, uint64_t* state, const int* rank,
                     const double* weight) {
  const double target = ls_uniform64(state) * sum;
  double c = 0.0;
  for (int r = 0; r < m; ++r) {
    c = c + weight[r];
    if (target < c) return rank[r];
  }
  return rank[m - 1];
}

/* Ranking for sampling: the whole vocabulary by keys when it can (using
 * the weight buffer as scratch before the weights are written), else the
 * heap. */
static void ls_rank_for_sampling(const double* logits, int n, int k, int* rank,
                                 double* weight) {
  if (k == n && ls_rank_all_binary32(logits, n, rank, weight)) return;
  ls_rank_top_k64(logits, n, k, rank);
}

int ls_sample_top_k64(const double* logits, int n, int k, double temperature,
                      uint64_t* state, int* rank, double* weight) {
  ls_rank_for_sampling(logits, n, k, rank, weight);
  const double sum = ls_rank_weights64(logits, k, temperature, rank, weight);
  return ls_draw64(k, sum, state, rank, weight);
}

int ls_sample_top_p64(const double* logits, int n, int k, double temperature,
                      double top_p, uint64_t* state, int* rank, double* weight,
                      int* kept) {
  ls_rank_for_sampling(logits, n, k, rank, weight);
  const double sum = ls_rank_weights64(logits, k, temperature, rank, weight);
  /* §5.4 step 4: the shortest prefix whose running sum reaches P * S. */
  const double threshold = top_p * sum;
  int m = k;
  double c = 0.0;
  for (int r = 0; r < k; ++r) {
    c = c + weight[r];
    if (c >= threshold) {
      m = r + 1;
      break;
    }
  }
  if (kept) *kept = m;
  /* §5.4 step 5: c is the prefix's own sum (the same additions). */
  return ls_draw64(m, c, state, rank, weight);
}
