; lemma ls_mul_row (core/ls_arith.h), negated: unsat proves
;   forall integer a, b, d; 0 <= a < b && 0 <= d ==> a * d + d <= b * d.
(set-logic QF_NIA)
(declare-const a Int)
(declare-const b Int)
(declare-const d Int)
(assert (and (<= 0 a) (< a b) (<= 0 d)))
(assert (not (<= (+ (* a d) d) (* b d))))
(check-sat)
