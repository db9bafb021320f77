package engine

import (
	"errors"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dop251/goja"
)

// urlRecord is a URL as the WHATWG URL standard holds it: what URL's
// getters read and its setters change.
type urlRecord struct {
	scheme, username, password string
	host                       *string // nil: no host; "": the empty host
	port                       int     // -1: none
	path                       []string
	opaque                     *string // an opaque path (mailto:x), in place of path
	query, fragment            *string
}

// errInvalidURL is the failure of the URL parser.
var errInvalidURL = errors.New("invalid URL")

// specialPorts are the special schemes, and their default ports (-1: none).
var specialPorts = map[string]int{"ftp": 21, "file": -1, "http": 80, "https": 443, "ws": 80, "wss": 443}

func (u *urlRecord) special() bool { _, ok := specialPorts[u.scheme]; return ok }

func strp(s string) *string { return &s }

// Percent-encode sets of the URL standard.
func inC0(c rune) bool       { return c < 0x20 || c > 0x7E }
func inFragment(c rune) bool { return inC0(c) || strings.ContainsRune(" \"<>`", c) }
func inQuery(c rune) bool    { return inC0(c) || strings.ContainsRune(" \"#<>", c) }
func inSpecialQuery(c rune) bool {
	return inQuery(c) || c == '\''
}
func inPath(c rune) bool     { return inQuery(c) || strings.ContainsRune("?`{}^", c) }
func inUserinfo(c rune) bool { return inPath(c) || strings.ContainsRune("/:;=@[\\]|", c) }
func inForm(c rune) bool {
	return inUserinfo(c) || strings.ContainsRune("$%&+,!'()~", c)
}

const upperHex = "0123456789ABCDEF"

// percentEncode appends c to b, percent-encoded when set holds it.
func percentEncode(b *strings.Builder, c rune, set func(rune) bool) {
	if !set(c) {
		b.WriteRune(c)
		return
	}
	var tmp [4]byte
	n := utf8.EncodeRune(tmp[:], c)
	for _, x := range tmp[:n] {
		b.WriteByte('%')
		b.WriteByte(upperHex[x>>4])
		b.WriteByte(upperHex[x&15])
	}
}

func encodeAll(s string, set func(rune) bool) string {
	var b strings.Builder
	for _, c := range s {
		percentEncode(&b, c, set)
	}
	return b.String()
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// percentDecode decodes %XX sequences; others stay as they are.
func percentDecode(s string) []byte {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			h, ok1 := unhex(s[i+1])
			l, ok2 := unhex(s[i+2])
			if ok1 && ok2 {
				out = append(out, h<<4|l)
				i += 2
				continue
			}
		}
		out = append(out, s[i])
	}
	return out
}

func isAlpha(c rune) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c rune) bool { return c >= '0' && c <= '9' }

func isDriveLetter(s []rune, normalized bool) bool {
	return len(s) == 2 && isAlpha(s[0]) && (s[1] == ':' || !normalized && s[1] == '|')
}

// startsWithDrive reports whether s starts with a Windows drive letter, as
// the file state of the URL standard asks.
func startsWithDrive(s []rune) bool {
	return len(s) >= 2 && isDriveLetter(s[:2], false) && (len(s) == 2 || strings.ContainsRune("/\\?#", s[2]))
}

func isSingleDot(s string) bool { return s == "." || strings.EqualFold(s, "%2e") }
func isDoubleDot(s string) bool {
	switch strings.ToLower(s) {
	case "..", ".%2e", "%2e.", "%2e%2e":
		return true
	}
	return false
}

func (u *urlRecord) shortenPath() {
	if u.scheme == "file" && len(u.path) == 1 && isDriveLetter([]rune(u.path[0]), true) {
		return
	}
	if len(u.path) > 0 {
		u.path = u.path[:len(u.path)-1]
	}
}

// URL parser states.
const (
	stSchemeStart = iota
	stScheme
	stNoScheme
	stSpecialRelativeOrAuthority
	stPathOrAuthority
	stRelative
	stRelativeSlash
	stSpecialAuthoritySlashes
	stSpecialAuthorityIgnoreSlashes
	stAuthority
	stHost
	stPort
	stFile
	stFileSlash
	stFileHost
	stPathStart
	stPath
	stOpaquePath
	stQuery
	stFragment
)

const eof = rune(-1)

// parseURL is the basic URL parser of the URL standard, without a state
// override: input against base (nil: none).
func parseURL(input string, base *urlRecord) (*urlRecord, error) {
	input = strings.TrimFunc(input, func(r rune) bool { return r <= 0x20 })
	input = strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return -1
		}
		return r
	}, input)
	in := []rune(input)
	u := &urlRecord{port: -1}
	state := stSchemeStart
	var buf strings.Builder
	atSeen, insideBrackets, passwordSeen := false, false, false
	at := func(i int) rune {
		if i < len(in) {
			return in[i]
		}
		return eof
	}
	for p := 0; ; p++ {
		c := at(p)
		switch state {
		case stSchemeStart:
			if isAlpha(c) {
				buf.WriteRune(c | 0x20)
				state = stScheme
			} else {
				state = stNoScheme
				p--
			}
		case stScheme:
			switch {
			case isAlpha(c) || isDigit(c) || c == '+' || c == '-' || c == '.':
				if isAlpha(c) {
					c |= 0x20
				}
				buf.WriteRune(c)
			case c == ':':
				u.scheme = buf.String()
				buf.Reset()
				switch {
				case u.scheme == "file":
					state = stFile
				case u.special() && base != nil && base.scheme == u.scheme:
					state = stSpecialRelativeOrAuthority
				case u.special():
					state = stSpecialAuthoritySlashes
				case at(p+1) == '/':
					state = stPathOrAuthority
					p++
				default:
					u.opaque = strp("")
					state = stOpaquePath
				}
			default:
				buf.Reset()
				state = stNoScheme
				p = -1
			}
		case stNoScheme:
			switch {
			case base == nil || base.opaque != nil && c != '#':
				return nil, errInvalidURL
			case base.opaque != nil && c == '#':
				u.scheme, u.opaque, u.query, u.fragment = base.scheme, strp(*base.opaque), base.query, strp("")
				state = stFragment
			case base.scheme != "file":
				state = stRelative
				p--
			default:
				state = stFile
				p--
			}
		case stSpecialRelativeOrAuthority:
			if c == '/' && at(p+1) == '/' {
				state = stSpecialAuthorityIgnoreSlashes
				p++
			} else {
				state = stRelative
				p--
			}
		case stPathOrAuthority:
			if c == '/' {
				state = stAuthority
			} else {
				state = stPath
				p--
			}
		case stRelative:
			u.scheme = base.scheme
			if c == '/' || u.special() && c == '\\' {
				state = stRelativeSlash
				break
			}
			u.username, u.password, u.host, u.port = base.username, base.password, base.host, base.port
			u.path = slices.Clone(base.path)
			u.query = base.query
			switch c {
			case '?':
				u.query = strp("")
				state = stQuery
			case '#':
				u.fragment = strp("")
				state = stFragment
			case eof:
			default:
				u.query = nil
				u.shortenPath()
				state = stPath
				p--
			}
		case stRelativeSlash:
			switch {
			case u.special() && (c == '/' || c == '\\'):
				state = stSpecialAuthorityIgnoreSlashes
			case c == '/':
				state = stAuthority
			default:
				u.username, u.password, u.host, u.port = base.username, base.password, base.host, base.port
				state = stPath
				p--
			}
		case stSpecialAuthoritySlashes:
			state = stSpecialAuthorityIgnoreSlashes
			if c == '/' && at(p+1) == '/' {
				p++
			} else {
				p--
			}
		case stSpecialAuthorityIgnoreSlashes:
			if c != '/' && c != '\\' {
				state = stAuthority
				p--
			}
		case stAuthority:
			switch {
			case c == '@':
				s := buf.String()
				if atSeen {
					s = "%40" + s
				}
				atSeen = true
				var user, pass strings.Builder
				user.WriteString(u.username)
				pass.WriteString(u.password)
				for _, x := range s {
					if x == ':' && !passwordSeen {
						passwordSeen = true
						continue
					}
					if passwordSeen {
						percentEncode(&pass, x, inUserinfo)
					} else {
						percentEncode(&user, x, inUserinfo)
					}
				}
				u.username, u.password = user.String(), pass.String()
				buf.Reset()
			case c == eof || c == '/' || c == '?' || c == '#' || u.special() && c == '\\':
				if atSeen && buf.Len() == 0 {
					return nil, errInvalidURL
				}
				p -= utf8.RuneCountInString(buf.String()) + 1
				buf.Reset()
				state = stHost
			default:
				buf.WriteRune(c)
			}
		case stHost:
			switch {
			case c == ':' && !insideBrackets:
				if buf.Len() == 0 {
					return nil, errInvalidURL
				}
				h, err := parseHost(buf.String(), !u.special())
				if err != nil {
					return nil, err
				}
				u.host = &h
				buf.Reset()
				state = stPort
			case c == eof || c == '/' || c == '?' || c == '#' || u.special() && c == '\\':
				p--
				if u.special() && buf.Len() == 0 {
					return nil, errInvalidURL
				}
				h, err := parseHost(buf.String(), !u.special())
				if err != nil {
					return nil, err
				}
				u.host = &h
				buf.Reset()
				state = stPathStart
			default:
				if c == '[' {
					insideBrackets = true
				} else if c == ']' {
					insideBrackets = false
				}
				buf.WriteRune(c)
			}
		case stPort:
			switch {
			case isDigit(c):
				buf.WriteRune(c)
			case c == eof || c == '/' || c == '?' || c == '#' || u.special() && c == '\\':
				if buf.Len() > 0 {
					port, err := parsePort(buf.String())
					if err != nil {
						return nil, err
					}
					if def, ok := specialPorts[u.scheme]; ok && def == port {
						port = -1
					}
					u.port = port
					buf.Reset()
				}
				state = stPathStart
				p--
			default:
				return nil, errInvalidURL
			}
		case stFile:
			u.scheme = "file"
			u.host = strp("")
			switch {
			case c == '/' || c == '\\':
				state = stFileSlash
			case base != nil && base.scheme == "file":
				u.host = base.host
				u.path = slices.Clone(base.path)
				u.query = base.query
				switch c {
				case '?':
					u.query = strp("")
					state = stQuery
				case '#':
					u.fragment = strp("")
					state = stFragment
				case eof:
				default:
					u.query = nil
					if !startsWithDrive(in[p:]) {
						u.shortenPath()
					} else {
						u.path = nil
					}
					state = stPath
					p--
				}
			default:
				state = stPath
				p--
			}
		case stFileSlash:
			if c == '/' || c == '\\' {
				state = stFileHost
				break
			}
			if base != nil && base.scheme == "file" {
				u.host = base.host
				if !startsWithDrive(in[p:]) && len(base.path) > 0 && isDriveLetter([]rune(base.path[0]), true) {
					u.path = append(u.path, base.path[0])
				}
			}
			state = stPath
			p--
		case stFileHost:
			if c == eof || c == '/' || c == '\\' || c == '?' || c == '#' {
				p--
				switch {
				case isDriveLetter([]rune(buf.String()), false):
					// The buffer is the path's first segment (a drive).
					state = stPath
				case buf.Len() == 0:
					u.host = strp("")
					state = stPathStart
				default:
					h, err := parseHost(buf.String(), false)
					if err != nil {
						return nil, err
					}
					if h == "localhost" {
						h = ""
					}
					u.host = &h
					buf.Reset()
					state = stPathStart
				}
			} else {
				buf.WriteRune(c)
			}
		case stPathStart:
			switch {
			case u.special():
				state = stPath
				if c != '/' && c != '\\' {
					p--
				}
			case c == '?':
				u.query = strp("")
				state = stQuery
			case c == '#':
				u.fragment = strp("")
				state = stFragment
			case c != eof:
				state = stPath
				if c != '/' {
					p--
				}
			}
		case stPath:
			slash := c == '/' || u.special() && c == '\\'
			if c == eof || slash || c == '?' || c == '#' {
				seg := buf.String()
				switch {
				case isDoubleDot(seg):
					u.shortenPath()
					if !slash {
						u.path = append(u.path, "")
					}
				case isSingleDot(seg):
					if !slash {
						u.path = append(u.path, "")
					}
				default:
					if r := []rune(seg); u.scheme == "file" && len(u.path) == 0 && isDriveLetter(r, false) {
						seg = string(r[0]) + ":"
					}
					u.path = append(u.path, seg)
				}
				buf.Reset()
				switch c {
				case '?':
					u.query = strp("")
					state = stQuery
				case '#':
					u.fragment = strp("")
					state = stFragment
				}
			} else {
				percentEncode(&buf, c, inPath)
			}
		case stOpaquePath:
			// The path grows in buf, and is set when it ends.
			switch c {
			case '?', '#', eof:
				u.opaque = strp(*u.opaque + buf.String())
				buf.Reset()
				if c == '?' {
					u.query = strp("")
					state = stQuery
				} else if c == '#' {
					u.fragment = strp("")
					state = stFragment
				}
			default:
				percentEncode(&buf, c, inC0)
			}
		case stQuery:
			if c == '#' || c == eof {
				set := inQuery
				if u.special() {
					set = inSpecialQuery
				}
				u.query = strp(*u.query + encodeAll(buf.String(), set))
				buf.Reset()
				if c == '#' {
					u.fragment = strp("")
					state = stFragment
				}
			} else {
				buf.WriteRune(c)
			}
		case stFragment:
			// The fragment grows in buf, and is set at the end.
			if c != eof {
				percentEncode(&buf, c, inFragment)
			} else {
				u.fragment = strp(*u.fragment + buf.String())
			}
		}
		// A state that gave the end back (p--) sees it again; the end
		// seen, the URL is done.
		if p >= len(in) {
			break
		}
	}
	return u, nil
}

func parsePort(s string) (int, error) {
	s = strings.TrimLeft(s, "0")
	if s == "" {
		return 0, nil
	}
	if len(s) > 5 {
		return 0, errInvalidURL
	}
	n, err := strconv.Atoi(s)
	if err != nil || n > 65535 {
		return 0, errInvalidURL
	}
	return n, nil
}

// forbiddenHost are the forbidden host code points of the URL standard.
const forbiddenHost = "\x00\t\n\r #/:<>?@[\\]^|"

// parseHost is the host parser of the URL standard. Domains are lowered,
// fullwidth forms and ideographic full stops mapped (mapDomainRune), and
// their non-ASCII labels written as Punycode ("xn--"), without the rest of
// UTS #46: its other mappings, and its checks of "xn--" labels.
func parseHost(s string, opaque bool) (string, error) {
	if strings.HasPrefix(s, "[") {
		if !strings.HasSuffix(s, "]") {
			return "", errInvalidURL
		}
		a, err := netip.ParseAddr(s[1 : len(s)-1])
		if err != nil || !a.Is6() || a.Zone() != "" {
			return "", errInvalidURL
		}
		return "[" + ipv6String(a.As16()) + "]", nil
	}
	if opaque {
		for _, c := range s {
			if strings.ContainsRune(forbiddenHost, c) {
				return "", errInvalidURL
			}
		}
		return encodeAll(s, inC0), nil
	}
	decoded := percentDecode(s)
	domain := strings.ToValidUTF8(string(decoded), "\uFFFD")
	domain = strings.Map(mapDomainRune, strings.ToLower(domain))
	for _, c := range domain {
		if c < 0x20 || c == 0x7F || c == '%' || c == 0xFFFD || strings.ContainsRune(forbiddenHost, c) {
			return "", errInvalidURL
		}
	}
	labels := strings.Split(domain, ".")
	for i, l := range labels {
		for _, c := range l {
			if c >= 0x80 {
				pc, ok := punycode(l)
				if !ok {
					return "", errInvalidURL
				}
				labels[i] = "xn--" + pc
				break
			}
		}
	}
	domain = strings.Join(labels, ".")
	if domain == "" {
		return "", errInvalidURL
	}
	if endsInNumber(labels) {
		return parseIPv4(labels)
	}
	return domain, nil
}

// mapDomainRune maps what UTS #46 maps most often in host names: the
// ideographic and fullwidth full stops to ".", fullwidth ASCII to ASCII.
func mapDomainRune(r rune) rune {
	switch {
	case r == 0x3002 || r == 0xFF0E || r == 0xFF61:
		return '.'
	case r >= 0xFF01 && r <= 0xFF5E:
		return unicode.ToLower(r - 0xFEE0)
	}
	return r
}

func endsInNumber(labels []string) bool {
	if len(labels) > 1 && labels[len(labels)-1] == "" {
		labels = labels[:len(labels)-1]
	}
	last := labels[len(labels)-1]
	if last == "" {
		return false
	}
	if strings.Trim(last, "0123456789") == "" {
		return true
	}
	_, ok := ipv4Number(last)
	return ok && (strings.HasPrefix(last, "0x") || strings.HasPrefix(last, "0X"))
}

func ipv4Number(s string) (uint64, bool) {
	base := 10
	switch {
	case len(s) >= 2 && (s[:2] == "0x" || s[:2] == "0X"):
		s, base = s[2:], 16
	case len(s) >= 2 && s[0] == '0':
		s, base = s[1:], 8
	}
	if s == "" {
		return 0, true
	}
	n, err := strconv.ParseUint(s, base, 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 1 << 40, true
		}
		return 0, false
	}
	return n, true
}

func parseIPv4(labels []string) (string, error) {
	if len(labels) > 1 && labels[len(labels)-1] == "" {
		labels = labels[:len(labels)-1]
	}
	if len(labels) > 4 {
		return "", errInvalidURL
	}
	nums := make([]uint64, len(labels))
	for i, l := range labels {
		n, ok := ipv4Number(l)
		if !ok || l == "" {
			return "", errInvalidURL
		}
		nums[i] = n
	}
	for _, n := range nums[:len(nums)-1] {
		if n > 255 {
			return "", errInvalidURL
		}
	}
	last := nums[len(nums)-1]
	if last >= 1<<(8*(5-len(nums))) {
		return "", errInvalidURL
	}
	v := last
	for i, n := range nums[:len(nums)-1] {
		v += n << (8 * (3 - i))
	}
	return strconv.FormatUint(v>>24, 10) + "." + strconv.FormatUint(v>>16&255, 10) + "." +
		strconv.FormatUint(v>>8&255, 10) + "." + strconv.FormatUint(v&255, 10), nil
}

// ipv6String writes an IPv6 address as the URL standard does: lower-case
// hex pieces, the first longest run of two or more zero pieces as "::".
func ipv6String(a [16]byte) string {
	var pieces [8]uint16
	for i := range pieces {
		pieces[i] = uint16(a[2*i])<<8 | uint16(a[2*i+1])
	}
	best, bestLen := -1, 1
	for i := 0; i < 8; {
		if pieces[i] != 0 {
			i++
			continue
		}
		j := i
		for j < 8 && pieces[j] == 0 {
			j++
		}
		if j-i > bestLen {
			best, bestLen = i, j-i
		}
		i = j
	}
	var b strings.Builder
	for i := 0; i < 8; i++ {
		if i == best {
			b.WriteString("::")
			i += bestLen - 1
			continue
		}
		if b.Len() > 0 && !strings.HasSuffix(b.String(), ":") {
			b.WriteByte(':')
		}
		b.WriteString(strconv.FormatUint(uint64(pieces[i]), 16))
	}
	return b.String()
}

// punycode encodes a label as RFC 3492 does.
func punycode(label string) (string, bool) {
	const (
		base, tMin, tMax, skew, damp = 36, 1, 26, 38, 700
		initialBias, initialN        = 72, 128
	)
	in := []rune(label)
	var out []byte
	for _, r := range in {
		if r < 0x80 {
			out = append(out, byte(r))
		}
	}
	basic := len(out)
	h := basic
	if basic > 0 {
		out = append(out, '-')
	}
	digit := func(d int) byte {
		if d < 26 {
			return byte('a' + d)
		}
		return byte('0' + d - 26)
	}
	adapt := func(delta, numPoints int, first bool) int {
		if first {
			delta /= damp
		} else {
			delta /= 2
		}
		delta += delta / numPoints
		k := 0
		for delta > ((base-tMin)*tMax)/2 {
			delta /= base - tMin
			k += base
		}
		return k + (base-tMin+1)*delta/(delta+skew)
	}
	n, delta, bias := initialN, 0, initialBias
	for h < len(in) {
		m := int(^uint(0) >> 1)
		for _, r := range in {
			if int(r) >= n && int(r) < m {
				m = int(r)
			}
		}
		if (m-n)*(h+1) > 1<<30 {
			return "", false
		}
		delta += (m - n) * (h + 1)
		n = m
		for _, r := range in {
			if int(r) < n {
				delta++
			}
			if int(r) == n {
				q := delta
				for k := base; ; k += base {
					t := k - bias
					if t < tMin {
						t = tMin
					} else if t > tMax {
						t = tMax
					}
					if q < t {
						break
					}
					out = append(out, digit(t+(q-t)%(base-t)))
					q = (q - t) / (base - t)
				}
				out = append(out, digit(q))
				bias = adapt(delta, h+1, h == basic)
				delta = 0
				h++
			}
		}
		delta++
		n++
	}
	return string(out), true
}

// Serializers: href and the parts URL's getters give.

func (u *urlRecord) pathname() string {
	if u.opaque != nil {
		return *u.opaque
	}
	var b strings.Builder
	for _, s := range u.path {
		b.WriteByte('/')
		b.WriteString(s)
	}
	return b.String()
}

func (u *urlRecord) hostPort() string {
	if u.host == nil {
		return ""
	}
	if u.port >= 0 {
		return *u.host + ":" + strconv.Itoa(u.port)
	}
	return *u.host
}

func (u *urlRecord) href() string {
	var b strings.Builder
	b.WriteString(u.scheme)
	b.WriteByte(':')
	if u.host != nil {
		b.WriteString("//")
		if u.username != "" || u.password != "" {
			b.WriteString(u.username)
			if u.password != "" {
				b.WriteByte(':')
				b.WriteString(u.password)
			}
			b.WriteByte('@')
		}
		b.WriteString(u.hostPort())
	} else if u.opaque == nil && len(u.path) > 1 && u.path[0] == "" {
		b.WriteString("/.")
	}
	b.WriteString(u.pathname())
	if u.query != nil {
		b.WriteByte('?')
		b.WriteString(*u.query)
	}
	if u.fragment != nil {
		b.WriteByte('#')
		b.WriteString(*u.fragment)
	}
	return b.String()
}

func (u *urlRecord) origin() string {
	switch u.scheme {
	case "http", "https", "ws", "wss", "ftp":
		return u.scheme + "://" + u.hostPort()
	case "blob":
		if inner, err := parseURL(u.pathname(), nil); err == nil && (inner.scheme == "http" || inner.scheme == "https") {
			return inner.origin()
		}
	}
	return "null"
}

func prefixed(p string, s *string) string {
	if s == nil || *s == "" {
		return ""
	}
	return p + *s
}

// get returns the URL part a getter of URL names.
func (u *urlRecord) get(name string) string {
	switch name {
	case "href":
		return u.href()
	case "origin":
		return u.origin()
	case "protocol":
		return u.scheme + ":"
	case "username":
		return u.username
	case "password":
		return u.password
	case "host":
		return u.hostPort()
	case "hostname":
		if u.host == nil {
			return ""
		}
		return *u.host
	case "port":
		if u.port < 0 {
			return ""
		}
		return strconv.Itoa(u.port)
	case "pathname":
		return u.pathname()
	case "search":
		return prefixed("?", u.query)
	case "hash":
		return prefixed("#", u.fragment)
	case "query":
		if u.query == nil {
			return ""
		}
		return *u.query
	}
	return ""
}

// set changes a part of the URL as a setter of URL does. The URL
// standard's setters run the parser from a state of its own; these
// reparse the URL with the part replaced, and leave it as it was when the
// new part does not parse, as a setter ignores what it cannot take.
func (u *urlRecord) set(name, v string) {
	c := *u
	switch name {
	case "protocol":
		scheme := strings.ToLower(strings.SplitN(v, ":", 2)[0])
		if scheme == "" || !isAlpha(rune(scheme[0])) || strings.TrimFunc(scheme, func(r rune) bool {
			return isAlpha(r) || isDigit(r) || r == '+' || r == '-' || r == '.'
		}) != "" {
			return
		}
		_, newSpecial := specialPorts[scheme]
		if newSpecial != u.special() || scheme == "file" && (u.username != "" || u.password != "" || u.port >= 0) ||
			u.scheme == "file" && u.host != nil && *u.host == "" {
			return
		}
		c.scheme = scheme
		if def, ok := specialPorts[scheme]; ok && def == c.port {
			c.port = -1
		}
	case "username", "password":
		if u.host == nil || *u.host == "" || u.scheme == "file" {
			return
		}
		if name == "username" {
			c.username = encodeAll(v, inUserinfo)
		} else {
			c.password = encodeAll(v, inUserinfo)
		}
	case "host", "hostname":
		if u.opaque != nil {
			return
		}
		end := strings.IndexAny(v, "/?#")
		if u.special() {
			end = strings.IndexAny(v, "/?#\\")
		}
		if end >= 0 {
			v = v[:end]
		}
		hostPart, portPart, hasPort := v, "", false
		if i := strings.LastIndexByte(v, ':'); i >= 0 && !strings.Contains(v[i:], "]") {
			if name == "hostname" {
				return // a port is no part of a hostname: the setter ignores it
			}
			hostPart, portPart, hasPort = v[:i], v[i+1:], true
		}
		if hostPart == "" && u.special() {
			return
		}
		h, err := parseHost(hostPart, !u.special())
		if err != nil {
			return
		}
		if u.scheme == "file" && h == "localhost" {
			h = ""
		}
		c.host = &h
		if hasPort && name == "host" {
			c.setPort(portPart)
		}
	case "port":
		if u.host == nil || *u.host == "" || u.scheme == "file" {
			return
		}
		if v == "" {
			c.port = -1
		} else {
			c.setPort(v)
		}
	case "pathname":
		if u.opaque != nil {
			return
		}
		rest := strings.NewReplacer("?", "%3F", "#", "%23").Replace(v)
		if u.special() && !strings.HasPrefix(rest, "/") && !strings.HasPrefix(rest, "\\") || !u.special() && rest != "" && !strings.HasPrefix(rest, "/") {
			rest = "/" + rest
		}
		// The path alone, parsed in a URL of the same scheme, with a host
		// when this has one (so that "//x" stays a path).
		src := u.scheme + "://h" + rest
		if u.host == nil {
			if strings.HasPrefix(rest, "//") {
				rest = "/." + rest
			}
			src = u.scheme + ":" + rest
		}
		p, err := parseURL(src, nil)
		if err != nil {
			return
		}
		c.path = p.path
	case "search", "query":
		if v == "" && name == "search" {
			c.query = nil
			break
		}
		if name == "search" {
			v = strings.TrimPrefix(v, "?")
		}
		set := inQuery
		if u.special() {
			set = inSpecialQuery
		}
		c.query = strp(encodeAll(v, set))
	case "hash":
		if v == "" {
			c.fragment = nil
			break
		}
		c.fragment = strp(encodeAll(strings.TrimPrefix(v, "#"), inFragment))
	}
	*u = c
}

// setPort sets the port from the digits v starts with; none leaves it.
func (u *urlRecord) setPort(v string) {
	end := 0
	for end < len(v) && v[end] >= '0' && v[end] <= '9' {
		end++
	}
	if end == 0 {
		return
	}
	port, err := parsePort(v[:end])
	if err != nil {
		return
	}
	if def, ok := specialPorts[u.scheme]; ok && def == port {
		port = -1
	}
	u.port = port
}

// The Go side of URL and URLSearchParams (urlScript).

// parseURL(input, base?) returns the record of a URL, or throws Node's
// TypeError (code ERR_INVALID_URL) for one that does not parse.
func (w *web) parseURL(call goja.FunctionCall) goja.Value {
	input := call.Argument(0).String()
	w.rl.checkAlloc(float64(len(input))*12, "URL: a URL")
	var base *urlRecord
	if b := call.Argument(1); !goja.IsUndefined(b) {
		if r, ok := b.Export().(*urlRecord); ok {
			base = r
		} else {
			r, err := parseURL(b.String(), nil)
			if err != nil {
				w.invalidURL(input)
			}
			base = r
		}
	}
	u, err := parseURL(input, base)
	if err != nil {
		if call.Argument(2).ToBoolean() {
			return goja.Null()
		}
		w.invalidURL(input)
	}
	return w.rl.rt.ToValue(u)
}

func (w *web) invalidURL(input string) {
	rt := w.rl.rt
	o, err := w.rl.in.ErrorCtors["TypeError"](nil, rt.ToValue("Invalid URL"))
	if err != nil {
		panic(err)
	}
	_ = o.DefineDataProperty("code", rt.ToValue("ERR_INVALID_URL"), goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	_ = o.DefineDataProperty("input", rt.ToValue(input), goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_TRUE)
	panic(o)
}

func (w *web) record(v goja.Value) *urlRecord {
	u, ok := v.Export().(*urlRecord)
	if !ok {
		w.rl.throw("TypeError", "not a URL")
	}
	return u
}

// urlGet(record, name) returns a part of a URL.
func (w *web) urlGet(call goja.FunctionCall) goja.Value {
	return w.rl.rt.ToValue(w.record(call.Argument(0)).get(call.Argument(1).String()))
}

// urlSet(record, name, value) sets a part of a URL.
func (w *web) urlSet(call goja.FunctionCall) goja.Value {
	u := w.record(call.Argument(0))
	name, v := call.Argument(1).String(), call.Argument(2).String()
	w.rl.checkAlloc(float64(len(v))*12, "URL: a URL")
	if name == "href" {
		n, err := parseURL(v, nil)
		if err != nil {
			w.invalidURL(v)
		}
		*u = *n
		return goja.Undefined()
	}
	u.set(name, v)
	return goja.Undefined()
}

// formDecode(string) parses application/x-www-form-urlencoded text into
// [name, value, name, value, ...].
func (w *web) formDecode(call goja.FunctionCall) goja.Value {
	s := call.Argument(0).String()
	w.rl.checkAlloc(float64(len(s))*8, "URLSearchParams: a list")
	var out []any
	for _, seq := range strings.Split(s, "&") {
		if seq == "" {
			continue
		}
		name, value, _ := strings.Cut(seq, "=")
		dec := func(x string) string {
			return strings.ToValidUTF8(string(percentDecode(strings.ReplaceAll(x, "+", " "))), "\uFFFD")
		}
		out = append(out, dec(name), dec(value))
	}
	return w.rl.rt.ToValue(out)
}

// formEncode(list) writes [name, value, ...] as
// application/x-www-form-urlencoded text.
func (w *web) formEncode(call goja.FunctionCall) goja.Value {
	o, ok := call.Argument(0).(*goja.Object)
	if !ok {
		return w.rl.rt.ToValue("")
	}
	n := int(o.Get("length").ToInteger())
	var b strings.Builder
	enc := func(s string) {
		for _, c := range s {
			if c == ' ' {
				b.WriteByte('+')
			} else {
				percentEncode(&b, c, inForm)
			}
		}
	}
	for i := 0; i+1 < n; i += 2 {
		if i > 0 {
			b.WriteByte('&')
		}
		enc(o.Get(strconv.Itoa(i)).String())
		b.WriteByte('=')
		enc(o.Get(strconv.Itoa(i + 1)).String())
	}
	return w.rl.rt.ToValue(b.String())
}

const urlScript = `
function installURL(go, P, global, tag, methodsOf) {
	const StringC = P.String, isArray = P.isArray, iterator = P.iterator;
	const invalidThis = (what) => go.throwCode('TypeError', 'ERR_INVALID_THIS', 'Value of "this" must be of type ' + what);

	class URLSearchParams {
		#list = [];
		#onChange = null; // sets the query of the URL whose this is, as the list changes
		constructor(init = undefined) {
			if (init === undefined || init === null) return;
			if (typeof init === 'object' || typeof init === 'function') {
				if (typeof init[iterator] === 'function') {
					for (const pair of init) {
						if ((typeof pair !== 'object' && typeof pair !== 'function') || pair === null || typeof pair[iterator] !== 'function') {
							go.throwCode('TypeError', 'ERR_INVALID_TUPLE', 'Each query pair must be an iterable [name, value] tuple');
						}
						const p = [...pair];
						if (p.length !== 2) go.throwCode('TypeError', 'ERR_INVALID_TUPLE', 'Each query pair must be an iterable [name, value] tuple');
						this.#list.push(StringC(p[0]), StringC(p[1]));
					}
				} else {
					for (const k of Reflect.ownKeys(init)) {
						if (typeof k !== 'string') continue;
						const d = Reflect.getOwnPropertyDescriptor(init, k);
						if (d !== undefined && d.enumerable) this.#list.push(k, StringC(init[k]));
					}
				}
				return;
			}
			let s = StringC(init);
			if (s.startsWith('?')) s = s.slice(1);
			this.#list = go.formDecode(s);
		}
		static _attach(p, onChange, query) { p.#onChange = onChange; p.#list = go.formDecode(query); }
		#check() { if (!(#list in this)) invalidThis('URLSearchParams'); }
		#update() {
			if (this.#onChange !== null) this.#onChange(go.formEncode(this.#list));
		}
		get size() { this.#check(); return this.#list.length / 2; }
		append(name, value) {
			this.#check();
			if (arguments.length < 2) go.throwCode('TypeError', 'ERR_MISSING_ARGS', 'The "name" and "value" arguments must be specified');
			this.#list.push(StringC(name), StringC(value));
			this.#update();
		}
		delete(name, value = undefined) {
			this.#check();
			if (arguments.length < 1) go.throwCode('TypeError', 'ERR_MISSING_ARGS', 'The "name" argument must be specified');
			name = StringC(name);
			const l = this.#list, out = [];
			const v = value === undefined ? undefined : StringC(value);
			for (let i = 0; i < l.length; i += 2) {
				if (l[i] === name && (v === undefined || l[i + 1] === v)) continue;
				out.push(l[i], l[i + 1]);
			}
			this.#list = out;
			this.#update();
		}
		get(name) {
			this.#check();
			if (arguments.length < 1) go.throwCode('TypeError', 'ERR_MISSING_ARGS', 'The "name" argument must be specified');
			name = StringC(name);
			const l = this.#list;
			for (let i = 0; i < l.length; i += 2) if (l[i] === name) return l[i + 1];
			return null;
		}
		getAll(name) {
			this.#check();
			if (arguments.length < 1) go.throwCode('TypeError', 'ERR_MISSING_ARGS', 'The "name" argument must be specified');
			name = StringC(name);
			const l = this.#list, out = [];
			for (let i = 0; i < l.length; i += 2) if (l[i] === name) out.push(l[i + 1]);
			return out;
		}
		has(name, value = undefined) {
			this.#check();
			if (arguments.length < 1) go.throwCode('TypeError', 'ERR_MISSING_ARGS', 'The "name" argument must be specified');
			name = StringC(name);
			const v = value === undefined ? undefined : StringC(value);
			const l = this.#list;
			for (let i = 0; i < l.length; i += 2) if (l[i] === name && (v === undefined || l[i + 1] === v)) return true;
			return false;
		}
		set(name, value) {
			this.#check();
			if (arguments.length < 2) go.throwCode('TypeError', 'ERR_MISSING_ARGS', 'The "name" and "value" arguments must be specified');
			name = StringC(name);
			value = StringC(value);
			const l = this.#list, out = [];
			let found = false;
			for (let i = 0; i < l.length; i += 2) {
				if (l[i] !== name) { out.push(l[i], l[i + 1]); continue; }
				if (!found) { out.push(name, value); found = true; }
			}
			if (!found) out.push(name, value);
			this.#list = out;
			this.#update();
		}
		sort() {
			this.#check();
			const l = this.#list, pairs = [];
			for (let i = 0; i < l.length; i += 2) pairs.push([l[i], l[i + 1]]);
			// Stable, by UTF-16 code units, as the standard says.
			pairs.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
			this.#list = pairs.flat();
			this.#update();
		}
		forEach(callback, thisArg = undefined) {
			this.#check();
			if (typeof callback !== 'function') go.throwCode('TypeError', 'ERR_INVALID_ARG_TYPE', 'The "callback" argument must be of type function.');
			for (let i = 0; i < this.#list.length; i += 2) callback.call(thisArg, this.#list[i + 1], this.#list[i], this);
		}
		*entries() { this.#check(); for (let i = 0; i < this.#list.length; i += 2) yield [this.#list[i], this.#list[i + 1]]; }
		*keys() { this.#check(); for (let i = 0; i < this.#list.length; i += 2) yield this.#list[i]; }
		*values() { this.#check(); for (let i = 0; i < this.#list.length; i += 2) yield this.#list[i + 1]; }
		toString() { this.#check(); return go.formEncode(this.#list); }
	}
	const attach = URLSearchParams._attach;
	delete URLSearchParams._attach;
	P.defineProperty(URLSearchParams.prototype, iterator, { __proto__: null, value: URLSearchParams.prototype.entries, writable: true, configurable: true });
	tag(URLSearchParams, 'URLSearchParams');
	methodsOf(URLSearchParams, ['size', 'append', 'delete', 'get', 'getAll', 'has', 'set', 'sort', 'forEach', 'entries', 'keys', 'values', 'toString']);

	class URL {
		#rec;
		#params = null;
		constructor(url, base = undefined) {
			if (arguments.length === 0) go.throwCode('TypeError', 'ERR_MISSING_ARGS', 'The "url" argument must be specified');
			this.#rec = base === undefined ? go.parseURL(StringC(url)) : go.parseURL(StringC(url), StringC(base));
		}
		static canParse(url, base = undefined) {
			if (arguments.length === 0) go.throwCode('TypeError', 'ERR_MISSING_ARGS', 'The "url" argument must be specified');
			return (base === undefined ? go.parseURL(StringC(url), undefined, true) : go.parseURL(StringC(url), StringC(base), true)) !== null;
		}
		#get(name) { if (!(#rec in this)) invalidThis('URL'); return go.urlGet(this.#rec, name); }
		#set(name, v) {
			if (!(#rec in this)) invalidThis('URL');
			go.urlSet(this.#rec, name, StringC(v));
			if (this.#params !== null && (name === 'href' || name === 'search')) attach(this.#params, this.#onQuery, go.urlGet(this.#rec, 'query'));
		}
		// The query as its URLSearchParams writes it: none when empty.
		#onQuery = (q) => go.urlSet(this.#rec, q === '' ? 'search' : 'query', q);
		toString() { return this.#get('href'); }
		get href() { return this.#get('href'); }
		set href(v) { this.#set('href', v); }
		get origin() { return this.#get('origin'); }
		get protocol() { return this.#get('protocol'); }
		set protocol(v) { this.#set('protocol', v); }
		get username() { return this.#get('username'); }
		set username(v) { this.#set('username', v); }
		get password() { return this.#get('password'); }
		set password(v) { this.#set('password', v); }
		get host() { return this.#get('host'); }
		set host(v) { this.#set('host', v); }
		get hostname() { return this.#get('hostname'); }
		set hostname(v) { this.#set('hostname', v); }
		get port() { return this.#get('port'); }
		set port(v) { this.#set('port', v); }
		get pathname() { return this.#get('pathname'); }
		set pathname(v) { this.#set('pathname', v); }
		get search() { return this.#get('search'); }
		set search(v) { this.#set('search', v); }
		get searchParams() {
			if (!(#rec in this)) invalidThis('URL');
			if (this.#params === null) {
				this.#params = new URLSearchParams();
				attach(this.#params, this.#onQuery, go.urlGet(this.#rec, 'query'));
			}
			return this.#params;
		}
		get hash() { return this.#get('hash'); }
		set hash(v) { this.#set('hash', v); }
		toJSON() { return this.#get('href'); }
	}
	tag(URL, 'URL');
	methodsOf(URL, ['toString', 'href', 'origin', 'protocol', 'username', 'password', 'host', 'hostname', 'port', 'pathname',
		'search', 'searchParams', 'hash', 'toJSON']);
	global('URL', URL, false);
	global('URLSearchParams', URLSearchParams, false);
}
`
