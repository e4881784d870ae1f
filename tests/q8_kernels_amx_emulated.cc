// The AMX int8 table (backends/cpu/q8_kernels_amx.cc) with its tile
// instructions replaced by scalar code of the same semantics, for
// gpt2_q8_backend_test on AVX-512 VNNI machines without AMX: it checks the
// table's tiling (tiles of 16 positions, tails on the tile unit and on the
// VNNI table, the two-group pipeline) and its rescale, not the tile unit
// itself. Compiled with the AVX-512 flags, never into lockstep_backends.
#define LOCKSTEP_Q8_AMX_EMULATE 1
#include "backends/cpu/q8_kernels_amx.cc"
