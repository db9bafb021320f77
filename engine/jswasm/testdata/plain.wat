;; plain.wat: a module without imports (testdata/build.sh builds plain.wasm).
(module
  (memory (export "memory") 1 16)
  (func (export "sum") (param i32 i32) (result i32)
    (local $s i32)
    (block $done
      (loop $l
        (br_if $done (i32.ge_u (local.get 0) (local.get 1)))
        (local.set $s (i32.add (local.get $s) (i32.load8_u (local.get 0))))
        (local.set 0 (i32.add (local.get 0) (i32.const 1)))
        (br $l)))
    (local.get $s))
  (func (export "grow") (param i32) (result i32) (memory.grow (local.get 0)))
  (func (export "spin") (loop $l (br $l)))
  (func (export "inc") (param i32) (result i32) (i32.add (local.get 0) (i32.const 1)))
)
