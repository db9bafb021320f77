package value

import (
	"errors"
	"math"
	"unicode/utf16"

	"github.com/riot-go/riot/cbor"
)

// WriteUTF16 writes a string given as UTF-16 code units: as a text string when they
// are valid Unicode, otherwise as TagUTF16 so that lone surrogates survive.
func WriteUTF16(w *cbor.Writer, units []uint16) {
	for i := 0; i < len(units); i++ {
		u := units[i]
		if u < 0xd800 || u > 0xdfff {
			continue
		}
		if u <= 0xdbff && i+1 < len(units) && units[i+1] >= 0xdc00 && units[i+1] <= 0xdfff {
			i++
			continue
		}
		w.Tag(TagUTF16)
		w.Head(cbor.MajorBytes, uint64(2*len(units)))
		for _, u := range units {
			w.Raw([]byte{byte(u), byte(u >> 8)})
		}
		return
	}
	w.Text(string(utf16.Decode(units)))
}

// WriteTyped writes a typed array over raw little-endian element bytes, as its
// RFC 8746 tag and a byte string. raw must hold whole elements.
func WriteTyped(w *cbor.Writer, k TypedKind, raw []byte) {
	w.Tag(uint64(k))
	w.ByteString(raw)
}

// DateMillis returns the time value of a Date whose tag 1 item holds sec
// seconds: the whole number of milliseconds m for which m / 1000 is sec, as
// encoders compute it (math.Round(sec * 1000) alone can be one off for dates
// far from 1970), or the nearest one when no m gives sec exactly. It returns
// NaN for an invalid Date: sec NaN or infinite, or the time beyond ±8.64e15
// milliseconds.
func DateMillis(sec float64) float64 {
	if math.IsNaN(sec) || math.IsInf(sec, 0) {
		return math.NaN()
	}
	m := math.Round(sec * 1000)
	for _, c := range [...]float64{m, m - 1, m + 1, m - 2, m + 2} {
		if c/1000 == sec {
			m = c
			break
		}
	}
	if m > 8.64e15 || m < -8.64e15 {
		return math.NaN()
	}
	return m + 0 // no -0
}

// DecodeUTF16 returns the code units of a TagUTF16 payload.
func DecodeUTF16(b []byte) ([]uint16, error) {
	if len(b)%2 != 0 {
		return nil, errors.New("UTF-16 string of odd length")
	}
	u := make([]uint16, len(b)/2)
	for i := range u {
		u[i] = uint16(b[2*i]) | uint16(b[2*i+1])<<8
	}
	return u, nil
}

// maxSafeInteger is 2^53, past which a float64 no longer holds every integer.
const maxSafeInteger = 1 << 53
