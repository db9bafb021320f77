package jswasm

// SetOnRelease makes b call f after each cleanup of modules JavaScript
// no longer holds, with the number it closed.
func SetOnRelease(b *Binding, f func(closed int)) { b.onRelease = f }
