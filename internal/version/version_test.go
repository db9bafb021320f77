package version

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFromBuildInfo(t *testing.T) {
	t.Parallel()
	bi := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/riot-go/riot", Version: "v0.0.0-20260901120000-7c7b02c1a2b3+dirty"},
		Settings: []debug.BuildSetting{
			{Key: "GOOS", Value: "linux"},
			{Key: "GOARCH", Value: "arm64"},
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "7c7b02c1a2b3d4e5f60718293a4b5c6d7e8f9012"},
			{Key: "vcs.time", Value: "2026-09-01T12:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	i := FromBuildInfo(bi)
	assert.Equal(t, Info{
		Path:      "github.com/riot-go/riot",
		Version:   "v0.0.0-20260901120000-7c7b02c1a2b3+dirty",
		Revision:  "7c7b02c1a2b3d4e5f60718293a4b5c6d7e8f9012",
		Time:      "2026-09-01T12:00:00Z",
		Modified:  true,
		GoVersion: "go1.26.8",
		Platform:  "linux/arm64",
	}, i)
	assert.Equal(t, "v0.0.0-20260901120000-7c7b02c1a2b3+dirty (github.com/riot-go/riot, "+
		"revision 7c7b02c1a2b3d4e5f60718293a4b5c6d7e8f9012, 2026-09-01T12:00:00Z, modified; go1.26.8 linux/arm64)", i.String())

	bi.Settings = bi.Settings[:1] // GOOS only: GOARCH is the running one's
	bi.Main.Version = "v1.2.0"
	i = FromBuildInfo(bi)
	assert.Equal(t, "v1.2.0 (github.com/riot-go/riot, no VCS revision stamped; go1.26.8 linux/"+runtime.GOARCH+")", i.String())

	bi.Settings = []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "false"}}
	assert.Equal(t, "v1.2.0 (github.com/riot-go/riot, revision abc; go1.26.8 "+runtime.GOOS+"/"+runtime.GOARCH+")",
		FromBuildInfo(bi).String())
}

func TestFromBuildInfo_None(t *testing.T) {
	t.Parallel()
	i := FromBuildInfo(nil)
	assert.Equal(t, Info{GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}, i)
	assert.Equal(t, "(unknown) (no VCS revision stamped; "+runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH+")", i.String())
}

// The test binary has build information too: its main module is riot's.
func TestLine(t *testing.T) {
	t.Parallel()
	l := Line("riotd")
	assert.True(t, strings.HasPrefix(l, "riotd "), l)
	assert.Contains(t, l, runtime.Version())
	assert.NotContains(t, l, "\n")
}
