;; A module that imports a memory with no maximum and grows it: the
;; tests check that a memory shared by modules stays counted against the
;; worker's memory after one of them is gone.
(module
  (import "env" "mem" (memory 1))
  (func (export "grow") (param i32) (result i32)
    (memory.grow (local.get 0)))
  (func (export "peek") (param i32) (result i32)
    (i32.load8_u (local.get 0))))
