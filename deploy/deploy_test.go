// Package deploy_test checks the files of deploy/: the Kubernetes
// manifests parse (and build with kubectl kustomize where kubectl is
// installed), the worker pods probe the worker's health endpoints on the
// port it serves them, the Grafana dashboard parses and names only
// documented metrics, and the systemd units verify (where systemd-analyze
// is installed).
package deploy_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// docs decodes every YAML document of file.
func docs(t *testing.T, file string) []map[string]any {
	t.Helper()
	f, err := os.Open(file)
	require.NoError(t, err)
	defer f.Close()
	dec := yaml.NewDecoder(f)
	var out []map[string]any
	for {
		var d map[string]any
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err, "%s: document %d", file, len(out)+1)
		if d != nil {
			out = append(out, d)
		}
	}
}

// dig follows keys (strings for maps, ints for lists) into v.
func dig(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, k := range path {
		switch k := k.(type) {
		case string:
			m, ok := v.(map[string]any)
			require.True(t, ok, "want a map for %q, have %T", k, v)
			v = m[k]
		case int:
			l, ok := v.([]any)
			require.True(t, ok && k < len(l), "want a list of more than %d, have %T", k, v)
			v = l[k]
		}
	}
	return v
}

func TestKubernetes_ManifestsParse(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("kubernetes/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		ds := docs(t, file)
		require.NotEmpty(t, ds, file)
		for i, d := range ds {
			assert.NotEmpty(t, d["apiVersion"], "%s: document %d: apiVersion", file, i+1)
			assert.NotEmpty(t, d["kind"], "%s: document %d: kind", file, i+1)
			if d["kind"] != "Kustomization" {
				assert.NotEmpty(t, dig(t, d, "metadata", "name"), "%s: document %d: metadata.name", file, i+1)
			}
		}
	}

	// What kustomization.yaml lists exists; the optional autoscalers are
	// left out (they need KEDA or prometheus-adapter).
	kust := docs(t, "kubernetes/kustomization.yaml")[0]
	var listed []string
	for _, r := range kust["resources"].([]any) {
		listed = append(listed, r.(string))
		assert.FileExists(t, filepath.Join("kubernetes", r.(string)))
	}
	assert.NotContains(t, listed, "keda-scaledobject.yaml")
	assert.NotContains(t, listed, "riotd-replicas.yaml") // instead of riotd.yaml, on its own
	assert.NotContains(t, listed, "hpa-external-metric.yaml")
	for _, f := range []string{"keda-scaledobject.yaml", "hpa-external-metric.yaml"} {
		d := docs(t, filepath.Join("kubernetes", f))[0]
		assert.Equal(t, "riot-worker", dig(t, d, "spec", "scaleTargetRef", "name"), f)
	}
}

// TestKubernetes_WorkerProbes: each worker Deployment runs riot-worker
// with --metrics-listen on the port its probes use, /healthz for liveness
// and /readyz for readiness.
func TestKubernetes_WorkerProbes(t *testing.T) {
	t.Parallel()
	for _, file := range []string{"kubernetes/riot-worker.yaml", "kubernetes/riot-worker-gpu.yaml"} {
		d := docs(t, file)[0]
		require.Equal(t, "Deployment", d["kind"], file)
		c := dig(t, d, "spec", "template", "spec", "containers", 0)
		var listen string
		for _, a := range dig(t, c, "args").([]any) {
			if v, ok := strings.CutPrefix(a.(string), "--metrics-listen="); ok {
				listen = v
			}
		}
		require.NotEmpty(t, listen, "%s: no --metrics-listen=", file)
		port := dig(t, c, "ports", 0)
		assert.Equal(t, "metrics", dig(t, port, "name"), file)
		assert.Equal(t, ":"+strings.TrimSpace(strings.TrimPrefix(yamlString(dig(t, port, "containerPort")), ":")), listen,
			"%s: the container port is --metrics-listen's", file)
		assert.Equal(t, "/healthz", dig(t, c, "livenessProbe", "httpGet", "path"), file)
		assert.Equal(t, "metrics", dig(t, c, "livenessProbe", "httpGet", "port"), file)
		assert.Equal(t, "/readyz", dig(t, c, "readinessProbe", "httpGet", "path"), file)
		assert.Equal(t, "metrics", dig(t, c, "readinessProbe", "httpGet", "port"), file)
		ann := dig(t, d, "spec", "template", "metadata", "annotations")
		assert.Equal(t, yamlString(dig(t, port, "containerPort")), dig(t, ann, "prometheus.io/port"), file)
	}
}

func yamlString(v any) string {
	b, _ := yaml.Marshal(v)
	return strings.TrimSpace(string(b))
}

func TestKubernetes_Kustomize(t *testing.T) {
	t.Parallel()
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not installed: the manifests were parsed as YAML only (TestKubernetes_ManifestsParse)")
	}
	out, err := exec.CommandContext(t.Context(), kubectl, "kustomize", "kubernetes").CombinedOutput()
	require.NoError(t, err, "kubectl kustomize deploy/kubernetes:\n%s", out)
	assert.Contains(t, string(out), "kind: Deployment")
}

// metricName finds the metric names in a PromQL expression.
var metricName = regexp.MustCompile(`\briot_[a-z_]+`)

func TestGrafana_Dashboard(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("grafana/riot-dashboard.json")
	require.NoError(t, err)
	var dash struct {
		Title  string `json:"title"`
		UID    string `json:"uid"`
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	require.NoError(t, dec.Decode(&dash))
	assert.NotEmpty(t, dash.Title)
	assert.NotEmpty(t, dash.UID)

	var documented []byte
	for _, f := range []string{"../docs/riotd.md", "../docs/workers.md"} {
		d, err := os.ReadFile(f)
		require.NoError(t, err)
		documented = append(documented, d...)
	}
	exprs := 0
	var names []string
	for _, p := range dash.Panels {
		if p.Type == "row" {
			continue
		}
		require.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
		for _, tg := range p.Targets {
			exprs++
			found := metricName.FindAllString(tg.Expr, -1)
			require.NotEmpty(t, found, "panel %q: %s names no riot metric", p.Title, tg.Expr)
			for _, n := range found {
				for _, suffix := range []string{"_bucket", "_count", "_sum"} {
					n = strings.TrimSuffix(n, suffix)
				}
				names = append(names, n)
			}
		}
	}
	assert.Positive(t, exprs)
	slices.Sort(names)
	for _, n := range slices.Compact(names) {
		if !bytes.Contains(documented, []byte("`"+n)) {
			t.Errorf("the dashboard's %s is in neither docs/riotd.md nor docs/workers.md", n)
		}
	}
	// Both sides are there.
	assert.Contains(t, names, "riot_workunits")
	assert.Contains(t, names, "riot_worker_slots_busy")
}

// TestSystemd_Verify runs systemd-analyze verify on the units, with the
// binaries' paths pointed at a stand-in (verify checks that ExecStart's
// program exists), and fails on any complaint, warnings included.
func TestSystemd_Verify(t *testing.T) {
	t.Parallel()
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed: the units were not verified")
	}
	dir := t.TempDir()
	stub := filepath.Join(dir, "stub")
	require.NoError(t, os.WriteFile(stub, []byte("#!/bin/sh\n"), 0o755))
	var units []string
	for _, name := range []string{"riotd.service", "riot-worker.service", "riotd-replica.service"} {
		b, err := os.ReadFile(filepath.Join("systemd", name))
		require.NoError(t, err)
		s := strings.NewReplacer("/usr/local/bin/riotd", stub, "/usr/local/bin/riot-worker", stub).Replace(string(b))
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(s), 0o644))
		units = append(units, p)
	}
	out, err := exec.CommandContext(t.Context(), analyze, append([]string{"verify", "--man=no"}, units...)...).CombinedOutput()
	if err != nil && strings.Contains(string(out), "Failed to") && !strings.Contains(string(out), ".service") {
		t.Skipf("systemd-analyze cannot run here: %s", out)
	}
	require.NoError(t, err, "systemd-analyze verify:\n%s", out)
	assert.Empty(t, strings.TrimSpace(string(out)), "systemd-analyze verify complains")
}

// TestKubernetes_Replicas: the replicas' StatefulSet gives each pod its
// name as --replica-id, lists every pod of its replicas in --peers by its
// name in the headless Service it is governed by, and mounts the raft
// secret it names.
func TestKubernetes_Replicas(t *testing.T) {
	t.Parallel()
	var sts, headless map[string]any
	for _, d := range docs(t, "kubernetes/riotd-replicas.yaml") {
		switch {
		case d["kind"] == "StatefulSet":
			sts = d
		case d["kind"] == "Service" && dig(t, d, "spec", "clusterIP") == "None":
			headless = d
		}
	}
	require.NotNil(t, sts)
	require.NotNil(t, headless)
	assert.Equal(t, dig(t, headless, "metadata", "name"), dig(t, sts, "spec", "serviceName"))
	assert.Equal(t, true, dig(t, headless, "spec", "publishNotReadyAddresses"))
	n := dig(t, sts, "spec", "replicas").(int)
	args := map[string]string{}
	for _, a := range dig(t, sts, "spec", "template", "spec", "containers", 0, "args").([]any) {
		k, v, _ := strings.Cut(a.(string), "=")
		args[k] = v
	}
	assert.Equal(t, "$(POD_NAME)", args["--replica-id"])
	peers := strings.Split(args["--peers"], ",")
	require.Len(t, peers, n, "--peers lists every replica")
	for i, p := range peers {
		parts := strings.Split(p, "=")
		require.Len(t, parts, 3, p)
		name := "riotd-" + strconv.Itoa(i)
		host := name + "." + yamlString(dig(t, headless, "metadata", "name")) + ".riot.svc.cluster.local"
		assert.Equal(t, []string{name, host + ":2356", host + ":2355"}, parts)
	}
	assert.Equal(t, "/etc/riot/raft/secret", args["--raft-secret-file"])
}
