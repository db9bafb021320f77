package units

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

const day = 24 * time.Hour

// ErrTooLarge: a size past what a uint64 (or, for Size, an int) holds.
var ErrTooLarge = errors.New("too large")

// ParseDuration reads a duration: Go's form ("1h30m", "90s", "250ms"), a
// number of days ("30d", "1.5d"), or "0". Negative durations are refused.
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if t == "0" {
		return 0, nil
	}
	if n, ok := strings.CutSuffix(t, "d"); ok {
		f, err := strconv.ParseFloat(n, 64)
		if err != nil || !(f >= 0 && f <= 100*365) { // NaN too
			return 0, errors.New("want days as a number, as in 30d")
		}
		return time.Duration(f * float64(day)), nil
	}
	d, err := time.ParseDuration(t)
	if err != nil {
		if _, nerr := strconv.ParseFloat(t, 64); nerr == nil {
			return 0, fmt.Errorf("%s what? Give a unit, as in %ss or %sm", t, t, t)
		}
		return 0, errors.New("want a duration such as 30s, 5m, 12h or 30d")
	}
	if d < 0 {
		return 0, errors.New("want a duration of 0 or more")
	}
	return d, nil
}

// FormatDuration formats d as ParseDuration reads it: in days where it is
// a whole number of them ("30d"), else as time.Duration does ("1h30m0s").
func FormatDuration(d time.Duration) string {
	if d != 0 && d%day == 0 {
		return strconv.FormatInt(int64(d/day), 10) + "d"
	}
	return d.String()
}

// Duration is a time.Duration flag that ParseDuration reads.
type Duration time.Duration

// String formats the duration (flag.Value).
func (d *Duration) String() string { return FormatDuration(time.Duration(*d)) }

// Set parses s (flag.Value).
func (d *Duration) Set(s string) error {
	v, err := ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// sizeUnits are the units ParseSize reads, longest suffixes first.
var sizeUnits = []struct {
	suffix string
	mult   uint64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
	{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"t", 1 << 40},
	{"b", 1},
}

// ParseSize reads a number of bytes with an optional unit: "1048576",
// "512MiB", "8G", "1.5GiB", "4GB". Units are read without regard to case:
// KiB, MiB, GiB and TiB, and K, M, G and T as in docker's --memory, are
// binary; KB, MB, GB and TB are decimal.
func ParseSize(s string) (uint64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := uint64(1)
	num := t
	for _, u := range sizeUnits {
		if n, ok := strings.CutSuffix(t, u.suffix); ok {
			num, mult = strings.TrimSpace(n), u.mult
			break
		}
	}
	if n, err := strconv.ParseUint(num, 10, 64); err == nil {
		if n > math.MaxUint64/mult {
			return 0, ErrTooLarge
		}
		return n * mult, nil
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || !(f >= 0) || math.IsInf(f, 0) { // NaN too
		return 0, errors.New("want a size such as 64MiB, 512KiB or 1048576 (bytes)")
	}
	b := f * float64(mult)
	if b >= math.MaxUint64 {
		return 0, ErrTooLarge
	}
	return uint64(b), nil
}

// FormatSize formats n bytes as ParseSize reads them: with the largest
// binary unit that divides them ("64MiB"), else as a number ("1000").
func FormatSize(n uint64) string {
	for _, u := range []struct {
		suffix string
		mult   uint64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.mult == 0 {
			return strconv.FormatUint(n/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatUint(n, 10)
}

// Size is an int flag of bytes that ParseSize reads.
type Size int

// String formats the size (flag.Value).
func (z *Size) String() string { return FormatSize(uint64(*z)) }

// Set parses s (flag.Value).
func (z *Size) Set(s string) error {
	v, err := ParseSize(s)
	if err != nil {
		return err
	}
	if v > math.MaxInt {
		return ErrTooLarge
	}
	*z = Size(v)
	return nil
}

// FormatBytes formats a size for messages: "512 bytes", or with its
// largest binary unit too, "80000007 bytes (76.3 MiB)".
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " bytes"
	}
	f, u := float64(n)/unit, "KiB"
	for _, next := range []string{"MiB", "GiB", "TiB"} {
		if f < unit {
			break
		}
		f, u = f/unit, next
	}
	return strconv.FormatInt(n, 10) + " bytes (" + strconv.FormatFloat(f, 'f', 1, 64) + " " + u + ")"
}
