;; dict.wat: the inner loop of the dictionary search (scripts/dict.js) in
;; WebAssembly, for scripts/dict-wasm.js. Build: scripts/wasm/build.sh
;; (wat2wasm, from Debian's wabt). The built dict.wasm is committed.
;;
;; The caller lays the dictionary out in the memory: the words' UTF-8
;; bytes, and at $offs the n+1 offsets of the words (word k is the bytes
;; from offs[k] to offs[k+1]). build hashes every word (a polynomial hash,
;; so that the hash of a concatenation comes from its parts' hashes
;; without reading a byte: h(a b) = h(a) * B^len(b) + h(b)) and fills a
;; hash table of them (open addressing: 2^bits slots of i32 at $table,
;; each a word's index plus one, 0 for empty; word k's hash at
;; $hashes + 4k, B^len at $pows + 4k). search then writes, for one first
;; word i, every second word j, in order, whose concatenation with it is
;; a word: the js at $out, as many as it returns.
;;
;; Each iteration of a loop costs a check that the workunit may go on
;; (wazero's termination check): the loops are few per pair of words.
(module
  (memory (export "memory") 1)

  ;; slot is the table slot of hash $h (Fibonacci hashing).
  (func $slot (param $h i32) (param $shift i32) (result i32)
    (i32.shr_u (i32.mul (local.get $h) (i32.const -1640531535)) (local.get $shift)))

  ;; same says whether the $n bytes at $a and at $b are the same.
  (func $same (param $a i32) (param $b i32) (param $n i32) (result i32)
    (block $differ
      (loop $next
        (if (i32.eqz (local.get $n)) (then (return (i32.const 1))))
        (br_if $differ (i32.ne (i32.load8_u (local.get $a)) (i32.load8_u (local.get $b))))
        (local.set $a (i32.add (local.get $a) (i32.const 1)))
        (local.set $b (i32.add (local.get $b) (i32.const 1)))
        (local.set $n (i32.sub (local.get $n) (i32.const 1)))
        (br $next)))
    (i32.const 0))

  (func (export "build") (param $n i32) (param $offs i32) (param $table i32) (param $shift i32)
                         (param $hashes i32) (param $pows i32)
    (local $k i32) (local $p i32) (local $end i32) (local $h i32) (local $pow i32) (local $slot i32) (local $at i32)
    (local $mask i32)
    (local.set $mask (i32.sub (i32.shl (i32.const 1) (i32.sub (i32.const 32) (local.get $shift))) (i32.const 1)))
    (block $done
      (loop $word
        (br_if $done (i32.ge_u (local.get $k) (local.get $n)))
        (local.set $p (i32.load (i32.add (local.get $offs) (i32.shl (local.get $k) (i32.const 2)))))
        (local.set $end (i32.load (i32.add (local.get $offs) (i32.shl (i32.add (local.get $k) (i32.const 1)) (i32.const 2)))))
        (local.set $h (i32.const 0))
        (local.set $pow (i32.const 1))
        (block $hashed
          (loop $byte
            (br_if $hashed (i32.ge_u (local.get $p) (local.get $end)))
            (local.set $h (i32.add (i32.mul (local.get $h) (i32.const 16777619)) (i32.load8_u (local.get $p))))
            (local.set $pow (i32.mul (local.get $pow) (i32.const 16777619)))
            (local.set $p (i32.add (local.get $p) (i32.const 1)))
            (br $byte)))
        (i32.store (i32.add (local.get $hashes) (i32.shl (local.get $k) (i32.const 2))) (local.get $h))
        (i32.store (i32.add (local.get $pows) (i32.shl (local.get $k) (i32.const 2))) (local.get $pow))
        (local.set $slot (call $slot (local.get $h) (local.get $shift)))
        (block $placed
          (loop $probe
            (local.set $at (i32.add (local.get $table) (i32.shl (local.get $slot) (i32.const 2))))
            (if (i32.eqz (i32.load (local.get $at)))
              (then
                (i32.store (local.get $at) (i32.add (local.get $k) (i32.const 1)))
                (br $placed)))
            (local.set $slot (i32.and (i32.add (local.get $slot) (i32.const 1)) (local.get $mask)))
            (br $probe)))
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (br $word))))

  ;; match says whether word k is word i's li bytes at $si then word j's
  ;; lj bytes at $sj.
  (func $match (param $k i32) (param $offs i32) (param $si i32) (param $li i32) (param $sj i32) (param $lj i32) (result i32)
    (local $sk i32)
    (local.set $sk (i32.load (i32.add (local.get $offs) (i32.shl (local.get $k) (i32.const 2)))))
    (if (i32.ne (i32.sub (i32.load (i32.add (local.get $offs) (i32.shl (i32.add (local.get $k) (i32.const 1)) (i32.const 2))))
                         (local.get $sk))
                (i32.add (local.get $li) (local.get $lj)))
      (then (return (i32.const 0))))
    (if (i32.eqz (call $same (local.get $sk) (local.get $si) (local.get $li)))
      (then (return (i32.const 0))))
    (call $same (i32.add (local.get $sk) (local.get $li)) (local.get $sj) (local.get $lj)))

  (func (export "search") (param $i i32) (param $n i32) (param $offs i32) (param $table i32) (param $shift i32)
                          (param $hashes i32) (param $pows i32) (param $out i32) (result i32)
    (local $si i32) (local $li i32) (local $hi i32) (local $j i32) (local $sj i32) (local $lj i32)
    (local $h i32) (local $slot i32) (local $e i32) (local $k i32) (local $count i32) (local $mask i32)
    (local.set $mask (i32.sub (i32.shl (i32.const 1) (i32.sub (i32.const 32) (local.get $shift))) (i32.const 1)))
    (local.set $si (i32.load (i32.add (local.get $offs) (i32.shl (local.get $i) (i32.const 2)))))
    (local.set $li (i32.sub (i32.load (i32.add (local.get $offs) (i32.shl (i32.add (local.get $i) (i32.const 1)) (i32.const 2))))
                            (local.get $si)))
    (local.set $hi (i32.load (i32.add (local.get $hashes) (i32.shl (local.get $i) (i32.const 2)))))
    (block $done
      (loop $second
        (br_if $done (i32.ge_u (local.get $j) (local.get $n)))
        (local.set $h (i32.add
          (i32.mul (local.get $hi) (i32.load (i32.add (local.get $pows) (i32.shl (local.get $j) (i32.const 2)))))
          (i32.load (i32.add (local.get $hashes) (i32.shl (local.get $j) (i32.const 2))))))
        (local.set $slot (call $slot (local.get $h) (local.get $shift)))
        ;; The first slot, then (rarely) the ones after it.
        (local.set $e (i32.load (i32.add (local.get $table) (i32.shl (local.get $slot) (i32.const 2)))))
        (if (local.get $e)
          (then
            (local.set $sj (i32.load (i32.add (local.get $offs) (i32.shl (local.get $j) (i32.const 2)))))
            (local.set $lj (i32.sub (i32.load (i32.add (local.get $offs) (i32.shl (i32.add (local.get $j) (i32.const 1)) (i32.const 2))))
                                    (local.get $sj)))
            (block $miss
              (loop $probe
                (local.set $k (i32.sub (local.get $e) (i32.const 1)))
                (if (i32.eq (i32.load (i32.add (local.get $hashes) (i32.shl (local.get $k) (i32.const 2)))) (local.get $h))
                  (then
                    (if (call $match (local.get $k) (local.get $offs) (local.get $si) (local.get $li) (local.get $sj) (local.get $lj))
                      (then
                        (i32.store (i32.add (local.get $out) (i32.shl (local.get $count) (i32.const 2))) (local.get $j))
                        (local.set $count (i32.add (local.get $count) (i32.const 1)))
                        (br $miss)))))
                (local.set $slot (i32.and (i32.add (local.get $slot) (i32.const 1)) (local.get $mask)))
                (local.set $e (i32.load (i32.add (local.get $table) (i32.shl (local.get $slot) (i32.const 2)))))
                (br_if $probe (local.get $e))))))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br $second)))
    (local.get $count))
)
