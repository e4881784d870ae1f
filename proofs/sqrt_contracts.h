/* Frama-C only (docs/proofs.md, "Tools"): proofs/run.sh passes this file to
 * frama-c's preprocessor with -include; the compiler never sees it, so it
 * changes no compiled code (proofs/same_code.sh).
 *
 * Frama-C 25 keeps __builtin_sqrt and __builtin_sqrtf as compiler builtins
 * and drops an ACSL contract written on a prototype of them (frama-c
 * -print shows the prototype as a "compiler builtin" comment, without the
 * contract). So under Frama-C the two names are macros for two ordinary
 * functions with contracts: the IEEE square root, rounded to nearest-even,
 * as the logic symbols ls_sqrt64 / ls_sqrt32 of core/ls_arith.h, which
 * proofs/lockstep.driver binds to WP's sqrt_f64 / sqrt_f32. The contract
 * is assumed, not proved: it is docs/arithmetic.md §1.1's sqrt (IEEE-754,
 * correctly rounded, NaN for a negative operand), which the builds get
 * from -fno-math-errno (the builtin is then the hardware square root, with
 * no errno call). */
#ifndef LOCKSTEP_PROOFS_SQRT_CONTRACTS_H_
#define LOCKSTEP_PROOFS_SQRT_CONTRACTS_H_

#include "ls_arith.h"

/* The contracts name the square root through ls_sqrt64_ret (ls_sqrt32_ret),
 * equal to ls_sqrt64 (ls_sqrt32) everywhere: the axiom is a definition,
 * but triggered by both terms (WP's TRIGGER:), so it fires only in a goal
 * that names ls_sqrt64 of the same operand (LayerNorm's assertions at the
 * end of the function). Every other goal after the call holds the result
 * as an uninterpreted function of its operand: with the IEEE square root
 * there instead, cvc5 took 11.7 s CPU rather than 4.7 s on LayerNorm64's
 * last-loop invariant (docs/proofs.md, item 12). */
/*@ axiomatic LsSqrtCall {
      logic double ls_sqrt64_ret(double x);
      axiom ls_sqrt64_ret_def: \forall double x;
        ls_same64((TRIGGER: ls_sqrt64_ret(x)), (TRIGGER: ls_sqrt64(x)));
      logic float ls_sqrt32_ret(float x);
      axiom ls_sqrt32_ret_def: \forall float x;
        ls_same32((TRIGGER: ls_sqrt32_ret(x)), (TRIGGER: ls_sqrt32(x)));
    }
*/

/*@ assigns \nothing;
    ensures ls_same64(\result, ls_sqrt64_ret(x));
*/
double ls_fc_sqrt64(double x);

/*@ assigns \nothing;
    ensures ls_same32(\result, ls_sqrt32_ret(x));
*/
float ls_fc_sqrt32(float x);

#define __builtin_sqrt ls_fc_sqrt64
#define __builtin_sqrtf ls_fc_sqrt32

#endif /* LOCKSTEP_PROOFS_SQRT_CONTRACTS_H_ */
