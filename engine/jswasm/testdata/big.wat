;; big.wat: a module whose memory has no maximum (testdata/build.sh builds big.wasm).
(module
  (memory (export "memory") 1)
  (func (export "grow") (param i32) (result i32) (memory.grow (local.get 0))))
