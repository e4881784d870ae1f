#include "ls_status.h"

const char* ls_status_message(ls_status s) {
  switch (s) {
    case LS_OK:
      return "ok";
    case LS_ERR_CONTEXT:
      return "context length n_ctx must be in [1, 1024]";
    case LS_ERR_WEIGHT_COUNT:
      return "weight array length does not match the model's parameter count";
    case LS_ERR_WEIGHT_NONFINITE:
      return "a weight is NaN or infinite";
    case LS_ERR_BOUND:
      return "weight bound B must be a number in [0, 10]";
    case LS_ERR_EMPTY_SEQUENCE:
      return "the token sequence is empty";
    case LS_ERR_SEQUENCE_TOO_LONG:
      return "the token sequence is longer than the model's context";
    case LS_ERR_TOKEN:
      return "a token is outside the vocabulary";
    case LS_ERR_SCRATCH:
      return "the scratch buffer is smaller than required";
    case LS_ERR_NULL:
      return "a required pointer is NULL";
    case LS_ERR_OUTPUT_NONFINITE:
      return "the computation produced a non-finite value";
    case LS_ERR_CONFIG:
      return "the model config is invalid (sizes must be positive and n_embd "
             "a multiple of n_head)";
    case LS_ERR_POSITION:
      return "the position is outside [0, n_ctx)";
    case LS_ERR_CACHE_LENGTH:
      return "the cache length does not equal position x n_layer x 2 x "
             "n_embd floats (or exceeds the buffer)";
  }
  return "unknown status";
}
