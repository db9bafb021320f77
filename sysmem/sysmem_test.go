package sysmem

import (
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want Limit
		str  string
	}{
		{"none", Limit{}, "none"},
		{"0", Limit{}, "none"},
		{" None ", Limit{}, "none"},
		{"1000", Size(1000), "1000"},
		{"1073741824", Size(1 << 30), "1GiB"},
		{"512MiB", Size(512 << 20), "512MiB"},
		{"512mib", Size(512 << 20), "512MiB"},
		{"8G", Size(8 << 30), "8GiB"},
		{"8g", Size(8 << 30), "8GiB"},
		{"4GB", Size(4e9), "3906250KiB"},
		{"1.5GiB", Size(3 << 29), "1536MiB"},
		{"64k", Size(64 << 10), "64KiB"},
		{"2 TiB", Size(2 << 40), "2TiB"},
		{"100b", Size(100), "100"},
		{"80%", Percent(80), "80%"},
		{"12.5%", Percent(12.5), "12.5%"},
		{"100%", Percent(100), "100%"},
	}
	for _, c := range cases {
		got, err := Parse(c.in)
		require.NoError(t, err, c.in)
		assert.Equal(t, c.want, got, c.in)
		assert.Equal(t, c.str, got.String(), c.in)
		back, err := Parse(got.String())
		require.NoError(t, err, c.in)
		assert.Equal(t, got, back, "String of %q reads back", c.in)
	}
}

func TestParse_Errors(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"":            "empty memory limit",
		"lots":        `memory limit "lots": want a size`,
		"8XB":         `memory limit "8XB": want a size`,
		"-1G":         `memory limit "-1G": want a size`,
		"0%":          "a percentage must be more than 0 and at most 100",
		"150%":        "a percentage must be more than 0 and at most 100",
		"abc%":        "a percentage must be more than 0 and at most 100",
		"99999999TiB": "is too large",
		"1e30":        "is too large",
	}
	for in, want := range cases {
		_, err := Parse(in)
		require.Error(t, err, in)
		assert.Contains(t, err.Error(), want, in)
	}
}

func TestLimit_Set(t *testing.T) {
	t.Parallel()
	l := Percent(80)
	require.NoError(t, l.Set("2GiB"))
	assert.Equal(t, Size(2<<30), l)
	require.Error(t, l.Set("x"))
	assert.Equal(t, Size(2<<30), l, "a failed Set leaves the limit as it was")
	require.NoError(t, l.Set("none"))
	assert.True(t, l.IsNone())
}

func TestLimit_Of(t *testing.T) {
	t.Parallel()
	assert.Equal(t, uint64(800), Percent(80).of(1000))
	assert.Equal(t, uint64(5), Size(5).of(1000))
	assert.Equal(t, uint64(0), Limit{}.of(1000))
	n, err := Size(7).Bytes()
	require.NoError(t, err)
	assert.Equal(t, uint64(7), n, "a size needs no Total")
}

const meminfo = "MemTotal:       24683620 kB\nMemFree:        22000000 kB\n"

func TestTotal(t *testing.T) {
	t.Parallel()
	ram := uint64(24683620) * 1024
	cases := []struct {
		name  string
		files map[string]string
		want  uint64
	}{
		{"no cgroup file", map[string]string{"proc/meminfo": meminfo}, ram},
		{"cgroup v2 limit below RAM", map[string]string{
			"proc/meminfo":                     meminfo,
			"proc/self/cgroup":                 "0::/job\n",
			"sys/fs/cgroup/job/memory.max":     "4294967296\n",
			"sys/fs/cgroup/memory.max":         "max\n",
			"sys/fs/cgroup/other/memory.max":   "1\n",
			"sys/fs/cgroup/job/memory.current": "1\n",
		}, 4 << 30},
		{"cgroup v2 namespaced: the group is the mount's root", map[string]string{
			"proc/meminfo":             meminfo,
			"proc/self/cgroup":         "0::/kubepods/pod1/c1\n",
			"sys/fs/cgroup/memory.max": "2147483648\n",
		}, 2 << 30},
		{"cgroup v2 max", map[string]string{
			"proc/meminfo":             meminfo,
			"proc/self/cgroup":         "0::/\n",
			"sys/fs/cgroup/memory.max": "max\n",
		}, ram},
		{"cgroup limit above RAM", map[string]string{
			"proc/meminfo":             meminfo,
			"proc/self/cgroup":         "0::/\n",
			"sys/fs/cgroup/memory.max": "107374182400\n",
		}, ram},
		{"cgroup v1 limit", map[string]string{
			"proc/meminfo":     meminfo,
			"proc/self/cgroup": "9:name=systemd:/\n4:memory:/docker/abc\n1:cpu,cpuacct:/\n0::/\n",
			"sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes": "1073741824\n",
		}, 1 << 30},
		{"cgroup v1 unlimited", map[string]string{
			"proc/meminfo":     meminfo,
			"proc/self/cgroup": "4:memory:/process_api/42\n0::/\n",
			"sys/fs/cgroup/memory/process_api/42/memory.limit_in_bytes": "9223372036854771712\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes":                "9223372036854771712\n",
		}, ram},
		{"cgroup v1 joint controllers", map[string]string{
			"proc/meminfo":     meminfo,
			"proc/self/cgroup": "4:memory,hugetlb:/\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes": "536870912\n",
		}, 512 << 20},
	}
	for _, c := range cases {
		fsys := fstest.MapFS{}
		for name, data := range c.files {
			fsys[name] = &fstest.MapFile{Data: []byte(data)}
		}
		got, err := total(fsys)
		require.NoError(t, err, c.name)
		assert.Equal(t, c.want, got, c.name)
	}
}

func TestTotal_Unknown(t *testing.T) {
	t.Parallel()
	for name, files := range map[string]fstest.MapFS{
		"no meminfo":   {},
		"no MemTotal":  {"proc/meminfo": {Data: []byte("MemFree: 1 kB\n")}},
		"odd MemTotal": {"proc/meminfo": {Data: []byte("MemTotal: 1 MB\n")}},
		"bad MemTotal": {"proc/meminfo": {Data: []byte("MemTotal: x kB\n")}},
	} {
		_, err := total(files)
		require.ErrorIs(t, err, ErrUnknown, name)
	}
}

func TestTotal_ThisMachine(t *testing.T) {
	t.Parallel()
	n, err := Total()
	if err != nil {
		t.Skipf("this system's memory cannot be read: %v", err)
	}
	assert.Greater(t, n, uint64(64<<20), "a machine that runs Go tests has more than 64 MiB")
	half, err := Percent(50).Bytes()
	require.NoError(t, err)
	assert.Equal(t, n/2, half)
}
