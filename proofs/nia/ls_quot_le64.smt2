; ls_quot_le64 (core/ls_ops64.c), ls_layernorm64's mean: for reals s, d
; with 1 <= d and |s| <= d * C, C = 2^20 + 2^-15, |s / d| <= C. The
; statement of the ghost function's ensures, negated: unsat means it
; holds. (Nonlinear; in WP's context z3 and cvc5 give up on it.)
(set-logic QF_NRA)
(declare-const s Real)
(declare-const d Real)
(define-fun C () Real (+ 1048576.0 (/ 1.0 32768.0)))
(define-fun absr ((v Real)) Real (ite (>= v 0.0) v (- v)))
(assert (<= 1.0 d))
(assert (<= (absr s) (* d C)))
(assert (not (<= (absr (/ s d)) C)))
(check-sat)
