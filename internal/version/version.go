// Package version says which build of riot a binary is, from what the Go
// toolchain recorded in it (runtime/debug.ReadBuildInfo): the main
// module's version, the VCS revision and its time, whether the working
// tree had changes, and the Go version. riotd --version and riot-worker
// version print it.
package version

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// Info is what a build recorded about itself.
type Info struct {
	// Path is the main module's path ("github.com/riot-go/riot").
	Path string
	// Version is the main module's version: a tag (v1.2.0), a
	// pseudo-version the go command made from the VCS
	// (v0.0.0-20260901120000-7c7b02c1a2b3, +dirty with local changes), or
	// "(devel)".
	Version string
	// Revision is the VCS revision (vcs.revision), Time its commit time
	// (vcs.time, RFC 3339), and Modified whether the working tree had
	// changes (vcs.modified). Revision is empty where the build stamped
	// none: -buildvcs=false, or a source tree outside a repository (a
	// container build that copies no .git).
	Revision, Time string
	Modified       bool
	// GoVersion is the toolchain's version (go1.26.8), Platform the
	// target, GOOS/GOARCH.
	GoVersion, Platform string
}

// Read returns the running binary's Info.
func Read() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return FromBuildInfo(bi)
}

// FromBuildInfo returns the Info that bi records; nil (a binary built
// without module support) gives only the Go version and the platform.
func FromBuildInfo(bi *debug.BuildInfo) Info {
	i := Info{GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi == nil {
		return i
	}
	goos, goarch := runtime.GOOS, runtime.GOARCH
	i.Path, i.Version = bi.Main.Path, bi.Main.Version
	if bi.GoVersion != "" {
		i.GoVersion = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			i.Revision = s.Value
		case "vcs.time":
			i.Time = s.Value
		case "vcs.modified":
			i.Modified = s.Value == "true"
		case "GOOS":
			goos = s.Value
		case "GOARCH":
			goarch = s.Value
		}
	}
	i.Platform = goos + "/" + goarch
	return i
}

// String formats i on one line, as in
//
//	v1.2.0 (github.com/riot-go/riot, revision 7c7b02c1a2b3..., 2026-09-01T12:00:00Z, modified; go1.26.8 linux/amd64)
//
// with "no VCS revision stamped" in place of the revision where there is
// none.
func (i Info) String() string {
	var b strings.Builder
	v := i.Version
	if v == "" {
		v = "(unknown)"
	}
	b.WriteString(v)
	b.WriteString(" (")
	if i.Path != "" {
		b.WriteString(i.Path)
		b.WriteString(", ")
	}
	if i.Revision == "" {
		b.WriteString("no VCS revision stamped")
	} else {
		b.WriteString("revision ")
		b.WriteString(i.Revision)
		if i.Time != "" {
			b.WriteString(", ")
			b.WriteString(i.Time)
		}
		if i.Modified {
			b.WriteString(", modified")
		}
	}
	b.WriteString("; ")
	b.WriteString(i.GoVersion)
	b.WriteString(" ")
	b.WriteString(i.Platform)
	b.WriteString(")")
	return b.String()
}

// Line is what `PROGRAM --version` prints: the program's name and the
// running binary's Info, without a newline.
func Line(program string) string { return program + " " + Read().String() }
