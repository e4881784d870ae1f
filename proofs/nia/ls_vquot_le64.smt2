; ls_vquot_le64 (core/ls_ops64.c), ls_layernorm64's variance: for reals s,
; d with 1 <= d and |s| <= d * C, C = 2^44 + 2^9, |s / d| <= C. The
; statement of the ghost function's ensures, negated: unsat means it
; holds. (Nonlinear; as nia/ls_quot_le64.smt2.)
(set-logic QF_NRA)
(declare-const s Real)
(declare-const d Real)
(define-fun C () Real (+ 17592186044416.0 512.0))
(define-fun absr ((v Real)) Real (ite (>= v 0.0) v (- v)))
(assert (<= 1.0 d))
(assert (<= (absr s) (* d C)))
(assert (not (<= (absr (/ s d)) C)))
(check-sat)
