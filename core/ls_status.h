/* Status codes of the lockstep C ABI. Every checked entry returns one. An
 * argument error is found before anything is written; a GPT-2 entry that
 * returns LS_ERR_OUTPUT_NONFINITE has written its cache rows and logits,
 * which the caller discards (docs/arithmetic.md 1.6). */
#ifndef LOCKSTEP_CORE_LS_STATUS_H_
#define LOCKSTEP_CORE_LS_STATUS_H_

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  LS_OK = 0,
  LS_ERR_CONTEXT = 1,           /* n_ctx outside [1, 1024] */
  LS_ERR_WEIGHT_COUNT = 2,      /* weight array length != parameter count */
  LS_ERR_WEIGHT_NONFINITE = 3,  /* a weight is NaN or infinite */
  LS_ERR_BOUND = 4,             /* bound B not in [0, 10] (or NaN) */
  LS_ERR_EMPTY_SEQUENCE = 5,    /* no tokens */
  LS_ERR_SEQUENCE_TOO_LONG = 6, /* more tokens than n_ctx */
  LS_ERR_TOKEN = 7,             /* a token outside the vocabulary */
  LS_ERR_SCRATCH = 8,           /* scratch buffer smaller than required */
  LS_ERR_NULL = 9,              /* a required pointer is NULL */
  LS_ERR_OUTPUT_NONFINITE = 10, /* the computation produced NaN or inf */
  LS_ERR_CONFIG = 11,           /* a model config that cannot be valid */
  LS_ERR_POSITION = 12,         /* position outside [0, n_ctx) */
  LS_ERR_CACHE_LENGTH = 13      /* cache length != position * row size */
} ls_status;

/* A short English description of a status code (static storage). */
const char* ls_status_message(ls_status s);

#ifdef __cplusplus
}
#endif

#endif /* LOCKSTEP_CORE_LS_STATUS_H_ */
