package sysmem

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/riot-go/riot/units"
)

// Limit is a memory limit as a user states it: a size in bytes, a
// percentage of Total, or none. The zero Limit is no limit. Limit implements
// flag.Value; String gives back what Parse reads.
type Limit struct {
	bytes   uint64
	percent float64 // > 0 for a percentage
}

// Size is a limit of n bytes; 0 is no limit.
func Size(n uint64) Limit { return Limit{bytes: n} }

// Percent is a limit of p percent of Total, 0 < p <= 100.
func Percent(p float64) Limit { return Limit{percent: p} }

// Parse reads a limit: "none" (or "0"); a number of bytes with an optional
// unit, such as "1073741824", "512MiB", "8G", "1.5GiB" or "4GB"; or a
// percentage of the machine's memory, such as "80%". Units are read
// without regard to case: KiB, MiB, GiB and TiB, and K, M, G and T as in
// docker's --memory, are binary; KB, MB, GB and TB are decimal.
func Parse(s string) (Limit, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	switch t {
	case "":
		return Limit{}, errors.New("sysmem: empty memory limit: want a size such as 8GiB, a percentage such as 80%, or none")
	case "none", "0":
		return Limit{}, nil
	}
	if num, ok := strings.CutSuffix(t, "%"); ok {
		p, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
		if err != nil || math.IsNaN(p) || p <= 0 || p > 100 {
			return Limit{}, fmt.Errorf("sysmem: memory limit %q: a percentage must be more than 0 and at most 100", s)
		}
		return Percent(p), nil
	}
	n, err := units.ParseSize(t)
	if err != nil {
		if errors.Is(err, units.ErrTooLarge) {
			return Limit{}, fmt.Errorf("sysmem: memory limit %q is too large", s)
		}
		return Limit{}, fmt.Errorf("sysmem: memory limit %q: want a size such as 8GiB or 512MiB, a percentage such as 80%%, or none", s)
	}
	return Size(n), nil
}

// IsNone reports whether l is no limit.
func (l Limit) IsNone() bool { return l.bytes == 0 && l.percent == 0 }

// Bytes returns the limit in bytes: 0 for no limit, and for a percentage that
// share of Total.
func (l Limit) Bytes() (uint64, error) {
	if l.percent == 0 {
		return l.bytes, nil
	}
	t, err := Total()
	if err != nil {
		return 0, fmt.Errorf("sysmem: memory limit %s: %w", l, err)
	}
	return l.of(t), nil
}

// of returns l as bytes of a machine with total bytes.
func (l Limit) of(total uint64) uint64 {
	if l.percent == 0 {
		return l.bytes
	}
	return uint64(float64(total) * l.percent / 100)
}

// String returns the limit as Parse reads it: "none", "80%", or bytes with
// the largest binary unit that divides them ("512MiB", "1000").
func (l Limit) String() string {
	switch {
	case l.IsNone():
		return "none"
	case l.percent > 0:
		return strconv.FormatFloat(l.percent, 'f', -1, 64) + "%"
	}
	return units.FormatSize(l.bytes)
}

// Set parses s into l, for flag.Value.
func (l *Limit) Set(s string) error {
	v, err := Parse(s)
	if err != nil {
		return err
	}
	*l = v
	return nil
}
