package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/internal/testserver/s3local"
	"github.com/treeport/treeport/layouts"
)

// k8sJob is the part of a Kubernetes Job manifest that says what runs.
type k8sJob struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Spec       struct {
		CompletionMode   string `yaml:"completionMode"`
		Completions      int    `yaml:"completions"`
		Parallelism      int    `yaml:"parallelism"`
		PodFailurePolicy struct {
			Rules []struct {
				Action      string `yaml:"action"`
				OnExitCodes *struct {
					ContainerName string `yaml:"containerName"`
					Operator      string `yaml:"operator"`
					Values        []int  `yaml:"values"`
				} `yaml:"onExitCodes"`
			} `yaml:"rules"`
		} `yaml:"podFailurePolicy"`
		Template struct {
			Spec struct {
				RestartPolicy string `yaml:"restartPolicy"`
				Containers    []struct {
					Name    string   `yaml:"name"`
					Command []string `yaml:"command"`
					Args    []string `yaml:"args"`
					Env     []struct {
						Name      string `yaml:"name"`
						Value     string `yaml:"value"`
						ValueFrom *struct {
							FieldRef *struct {
								FieldPath string `yaml:"fieldPath"`
							} `yaml:"fieldRef"`
						} `yaml:"valueFrom"`
					} `yaml:"env"`
					VolumeMounts []struct {
						Name      string `yaml:"name"`
						MountPath string `yaml:"mountPath"`
					} `yaml:"volumeMounts"`
				} `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

// copyOf is one copy of a job as its scheduler starts it: treeport's
// arguments and the environment the job gives it.
type copyOf struct {
	index int
	args  []string
	env   []string
}

// indexAnnotation is where an Indexed Job's pod finds its index.
const indexAnnotation = "metadata.annotations['batch.kubernetes.io/job-completion-index']"

// k8sCopies reads an Indexed Job and returns its N pods' treeport
// invocations: the container's env (the completion index from its
// annotation) and its args with $(VAR) expanded as Kubernetes expands them.
// mounts gets each volume mount's path, to swap for a local directory.
func k8sCopies(t *testing.T, path string) (copies []copyOf, mounts map[string]string, job k8sJob) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &job); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	s := job.Spec
	if job.APIVersion != "batch/v1" || job.Kind != "Job" || s.CompletionMode != "Indexed" || s.Completions < 2 || s.Template.Spec.RestartPolicy != "Never" {
		t.Fatalf("%s: want an Indexed batch/v1 Job of 2 or more completions that never restarts a pod in place (podFailurePolicy needs it), got %+v", path, job)
	}
	if cs := s.Template.Spec.Containers; len(cs) != 1 || len(cs[0].Command) != 0 || len(cs[0].Args) == 0 {
		t.Fatalf("%s: want one container whose args are treeport's (the image's entrypoint is treeport)", path)
	}
	c := s.Template.Spec.Containers[0]
	failsJobOn2 := false
	for _, r := range s.PodFailurePolicy.Rules {
		if r.OnExitCodes != nil && r.Action == "FailJob" && r.OnExitCodes.ContainerName == c.Name && r.OnExitCodes.Operator == "In" && len(r.OnExitCodes.Values) == 1 && r.OnExitCodes.Values[0] == 2 {
			failsJobOn2 = true
		}
	}
	if !failsJobOn2 {
		t.Errorf("%s: exit 2 (invalid input: every pod finds the same) must fail the job, not be retried N times", path)
	}
	mounts = map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	for i := range s.Completions {
		env := map[string]string{}
		var list []string
		for _, e := range c.Env {
			v := k8sExpand(e.Value, env)
			switch {
			case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == indexAnnotation:
				v = fmt.Sprint(i)
			case e.ValueFrom != nil:
				t.Fatalf("%s: env %s comes from a source the test does not know", path, e.Name)
			}
			env[e.Name] = v
			list = append(list, e.Name+"="+v)
		}
		var args []string
		for _, a := range c.Args {
			args = append(args, k8sExpand(a, env))
		}
		copies = append(copies, copyOf{index: i, args: args, env: list})
	}
	return copies, mounts, job
}

var k8sRef = regexp.MustCompile(`\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// k8sExpand expands a container's arg as Kubernetes does: $(VAR) is VAR's
// value when the container's env defines it (else left as written), and $$
// is a $.
func k8sExpand(s string, env map[string]string) string {
	return k8sRef.ReplaceAllStringFunc(s, func(m string) string {
		if m == "$$" {
			return "$"
		}
		if v, ok := env[m[2:len(m)-1]]; ok {
			return v
		}
		return m
	})
}

// batchJob is the part of an AWS Batch job definition that says what runs.
type batchJob struct {
	JobDefinitionName   string `json:"jobDefinitionName"`
	Type                string `json:"type"`
	ContainerProperties struct {
		Command     []string `json:"command"`
		Environment []struct {
			Name  string `json:"name"`
			Value string `json:"value"`
		} `json:"environment"`
		MountPoints []struct {
			SourceVolume  string `json:"sourceVolume"`
			ContainerPath string `json:"containerPath"`
		} `json:"mountPoints"`
	} `json:"containerProperties"`
	RetryStrategy struct {
		Attempts       int `json:"attempts"`
		EvaluateOnExit []struct {
			OnExitCode string `json:"onExitCode"`
			Action     string `json:"action"`
		} `json:"evaluateOnExit"`
	} `json:"retryStrategy"`
}

// batchCopies reads an AWS Batch job definition and the array job that
// submits it, and returns the children's treeport invocations: the command
// as written (Batch runs it without a shell, so nothing in it is expanded)
// and the environment, with AWS_BATCH_JOB_ARRAY_INDEX as Batch sets it.
func batchCopies(t *testing.T, defPath, submitPath string) (copies []copyOf, mounts map[string]string) {
	t.Helper()
	var def batchJob
	readJSON(t, defPath, &def)
	var submit struct {
		JobName         string `json:"jobName"`
		JobQueue        string `json:"jobQueue"`
		JobDefinition   string `json:"jobDefinition"`
		ArrayProperties struct {
			Size int `json:"size"`
		} `json:"arrayProperties"`
	}
	readJSON(t, submitPath, &submit)
	if def.Type != "container" || submit.JobDefinition != def.JobDefinitionName || submit.ArrayProperties.Size < 2 || len(def.ContainerProperties.Command) == 0 {
		t.Fatalf("want an array job of 2 or more children of the container job definition %q, got %+v and %+v", def.JobDefinitionName, submit, def)
	}
	exitsOn2 := false
	for _, e := range def.RetryStrategy.EvaluateOnExit {
		if e.OnExitCode == "2" && e.Action == "EXIT" {
			exitsOn2 = true
		}
	}
	if !exitsOn2 {
		t.Errorf("%s: exit 2 (invalid input) must not be retried", defPath)
	}
	mounts = map[string]string{}
	for _, m := range def.ContainerProperties.MountPoints {
		mounts[m.SourceVolume] = m.ContainerPath
	}
	for i := range submit.ArrayProperties.Size {
		env := []string{fmt.Sprintf("AWS_BATCH_JOB_ARRAY_INDEX=%d", i)}
		for _, e := range def.ContainerProperties.Environment {
			env = append(env, e.Name+"="+e.Value)
		}
		copies = append(copies, copyOf{index: i, args: def.ContainerProperties.Command, env: env})
	}
	return copies, mounts
}

// readJSON decodes a JSON file into v.
func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// place swaps what a manifest names of its cluster for this test's: each
// volume's mount path for a local directory, flag values (the table) and
// URL prefixes (the bucket).
type place struct {
	dirs  map[string]string // mount path → local directory
	flags map[string]string // flag name → value
	urls  map[string]string // URL prefix → URL prefix
}

func (p place) apply(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		for from, to := range p.dirs {
			a = strings.ReplaceAll(a, "="+from+"/", "="+to+"/")
			if strings.HasPrefix(a, from+"/") {
				a = to + a[len(from):]
			}
		}
		for from, to := range p.urls {
			a = strings.Replace(a, from, to, 1)
		}
		name, _, eq := strings.Cut(a, "=")
		if v, ok := p.flags[name]; ok {
			if eq {
				a = name + "=" + v
			} else if i+1 < len(args) {
				out = append(out, a)
				i++
				a = v
			}
		}
		out = append(out, a)
	}
	return out
}

// runCopies starts every copy at once, as a scheduler with enough room
// would, and returns each one's exit code and output.
func runCopies(t *testing.T, copies []copyOf, env []string, p place) (codes []int, outs []string) {
	t.Helper()
	codes, outs = make([]int, len(copies)), make([]string, len(copies))
	var wg sync.WaitGroup
	for i, c := range copies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(treeportBin, p.apply(c.args)...)
			cmd.Env = append(append(append([]string(nil), os.Environ()...), env...), c.env...)
			var b bytes.Buffer
			cmd.Stdout, cmd.Stderr = &b, &b
			err := cmd.Run()
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				codes[i] = ee.ExitCode()
			} else if err != nil {
				codes[i] = -1
				b.WriteString(err.Error())
			}
			outs[i] = b.String()
		}()
	}
	wg.Wait()
	return codes, outs
}

// shardN returns the N of a copy's --shard, to hold against the job's size.
func shardN(t *testing.T, args []string) string {
	t.Helper()
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--shard="); ok {
			return v[strings.LastIndex(v, "/")+1:]
		}
		if a == "--shard" && i+1 < len(args) {
			return args[i+1][strings.LastIndex(args[i+1], "/")+1:]
		}
	}
	t.Fatalf("no --shard in %q", args)
	return ""
}

// TestDeployManifests runs the jobs of deploy/ as N local processes, as
// their schedulers would start them: the same arguments, the index as the
// scheduler gives it ($(JOB_COMPLETION_INDEX) expanded by Kubernetes,
// AWS_BATCH_JOB_ARRAY_INDEX read by treeport), the environment they declare,
// with only the volumes, the table and the bucket swapped for local ones.
func TestDeployManifests(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	const nodes = 3000
	input := filepath.Join(data, "forest.parquet")
	if _, stderr, code := run(t, nil, "gen", "--nodes", fmt.Sprint(nodes), "--shape", "random", "--seed", "11", "--out", input); code != 0 {
		t.Fatalf("gen: %s", stderr)
	}
	path, err := layouts.New("path", layouts.Options{})
	if err != nil {
		t.Fatal(err)
	}
	awsEnv := []string{"AWS_ACCESS_KEY_ID=treeport", "AWS_SECRET_ACCESS_KEY=treeport", "TREEPORT_ENDPOINT_URL=" + endpoint}

	// loadsTable runs a job that loads the input into a table with
	// checkpoints, and checks that the copies wrote it whole, each its own
	// part, and that a copy run again resumes from its checkpoint.
	loadsTable := func(t *testing.T, copies []copyOf, mounts map[string]string) {
		client := ddblocal.Client(t, endpoint)
		table := ddblocal.NewTable(t, client, path.Table())
		state := t.TempDir()
		p := place{
			dirs:  map[string]string{mounts["input"]: data, mounts["state"]: state},
			flags: map[string]string{"--table": table},
		}
		if n := shardN(t, copies[0].args); n != fmt.Sprint(len(copies)) {
			t.Fatalf("the job runs %d copies, but --shard says N = %s: shards %s.. would never be written", len(copies), n, fmt.Sprint(len(copies)))
		}
		codes, outs := runCopies(t, copies, awsEnv, p)
		var items int64
		for i, code := range codes {
			if code != 0 {
				t.Fatalf("copy %d: exit %d\n%s", i, code, outs[i])
			}
			b, err := os.ReadFile(filepath.Join(state, fmt.Sprintf("load-report.shard-%d-of-%d.json", i, len(copies))))
			if err != nil {
				t.Fatalf("copy %d wrote no report of its own on the state volume: %v", i, err)
			}
			var rep struct {
				Writer struct {
					Items int64 `json:"items"`
				} `json:"writer"`
			}
			if err := json.Unmarshal(b, &rep); err != nil {
				t.Fatal(err)
			}
			if rep.Writer.Items == 0 || rep.Writer.Items == nodes {
				t.Errorf("copy %d wrote %d items: want its own part of the %d", i, rep.Writer.Items, nodes)
			}
			items += rep.Writer.Items
			if _, err := os.Stat(filepath.Join(state, fmt.Sprintf("load.shard-%d-of-%d.json", i, len(copies)))); err != nil {
				t.Errorf("copy %d: no checkpoint of its own: %v", i, err)
			}
		}
		if items != nodes {
			t.Errorf("the copies wrote %d items together, want %d, each once", items, nodes)
		}
		stdout, stderr, code := run(t, awsEnv, "verify", "--in", input, "--table", table, "--layout", "path")
		if code != 0 || !strings.Contains(stdout, "identical") {
			t.Errorf("verify: exit %d\n%s%s", code, stdout, stderr)
		}
		// A copy started again (a retry after its pod was lost) finds its
		// checkpoint finished and writes nothing.
		codes, outs = runCopies(t, copies[1:2], awsEnv, p)
		if codes[0] != 0 || !strings.Contains(outs[0], "finished already") {
			t.Errorf("copy 1 run again: exit %d\n%s", codes[0], outs[0])
		}
	}

	t.Run("kubernetes/load-table-job.yaml", func(t *testing.T) {
		copies, mounts, _ := k8sCopies(t, "deploy/kubernetes/load-table-job.yaml")
		loadsTable(t, copies, mounts)
	})
	t.Run("aws-batch", func(t *testing.T) {
		copies, mounts := batchCopies(t, "deploy/aws-batch/job-definition.json", "deploy/aws-batch/submit-job.json")
		if !strings.Contains(strings.Join(copies[0].args, " "), "$AWS_BATCH_JOB_ARRAY_INDEX/") {
			t.Fatalf("the command does not take its shard from AWS_BATCH_JOB_ARRAY_INDEX: %q", copies[0].args)
		}
		loadsTable(t, copies, mounts)
	})
	t.Run("kubernetes/import-table-job.yaml", func(t *testing.T) {
		s3ep := s3local.Endpoint(t)
		client := s3local.Client(t, s3ep)
		bucket := s3local.NewBucket(t, client)
		fake := &fakeImportService{script: []string{describe("COMPLETED", nodes, nodes, 0)}}
		srv := httptest.NewServer(fake)
		defer srv.Close()
		copies, mounts, _ := k8sCopies(t, "deploy/kubernetes/import-table-job.yaml")
		if n := shardN(t, copies[0].args); n != fmt.Sprint(len(copies)) {
			t.Fatalf("the job runs %d copies, but --shard says N = %s", len(copies), n)
		}
		p := place{
			dirs: map[string]string{mounts["input"]: data, mounts["state"]: t.TempDir()},
			urls: map[string]string{"s3://my-bucket/": "s3://" + bucket + "/"},
		}
		codes, outs := runCopies(t, copies, s3Env(s3ep, srv.URL), p)
		for i, code := range codes {
			if code != 0 {
				t.Fatalf("copy %d: exit %d\n%s", i, code, outs[i])
			}
		}
		tokens := map[any]bool{}
		for _, req := range fake.imports() {
			tokens[req["ClientToken"]] = true
		}
		if len(fake.imports()) == 0 || len(tokens) != 1 {
			t.Errorf("%d ImportTable calls with %d client tokens: want one import, asked for by one token however many copies ask", len(fake.imports()), len(tokens))
		}
		shards := map[string]bool{}
		for _, k := range s3local.Keys(t, client, bucket, "loads/forest-1/data/") {
			if m := regexp.MustCompile(`shard-(\d+)-of-`).FindStringSubmatch(k); m != nil {
				shards[m[1]] = true
			}
		}
		if len(shards) != len(copies) {
			t.Errorf("import files of shards %v in the prefix, want all %d", shards, len(copies))
		}
	})
}

// TestShardFromEnvironment: --shard $NAME/N takes k from the environment,
// for a job runner that starts treeport without a shell; an unset or bad
// variable is a usage error that names it.
func TestShardFromEnvironment(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join("fixtures", "cars.json")
	for _, tt := range []struct {
		name string
		env  []string
		arg  string
		code int
		want string
	}{
		{name: "set", env: []string{"AWS_BATCH_JOB_ARRAY_INDEX=1"}, arg: "$AWS_BATCH_JOB_ARRAY_INDEX/2", code: 0, want: "shard 1/2 (--shard $AWS_BATCH_JOB_ARRAY_INDEX/2)"},
		{name: "braces", env: []string{"IDX=0"}, arg: "${IDX}/3", code: 0, want: "shard 0/3"},
		{name: "unset", arg: "$AWS_BATCH_JOB_ARRAY_INDEX/2", code: 2, want: "the environment variable AWS_BATCH_JOB_ARRAY_INDEX is not set"},
		{name: "out of range", env: []string{"IDX=2"}, arg: "$IDX/2", code: 2, want: "want k/N with 0 <= k < N"},
		{name: "not a name", arg: "$1x/2", code: 2, want: "names an environment variable"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(dir, tt.name)
			_, stderr, code := run(t, tt.env, "import", "--in", in, "--layout", "path", "--out", out, "--shard", tt.arg)
			if code != tt.code || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, want %d; stderr:\n%s\nwant %q", code, tt.code, stderr, tt.want)
			}
		})
	}
}
