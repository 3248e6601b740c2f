package commands

import (
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/treeport/treeport/ddbwrite"
)

// shardUsage is the --shard flag's help, shared by import, apply and migrate.
const shardUsage = "write only shard `k/N` of the items (0 <= k < N), for N copies run side by side; " +
	"k may be $NAME, an environment variable that holds it ($AWS_BATCH_JOB_ARRAY_INDEX/8, for a job run without a shell); " +
	"the shard goes into the names of --checkpoint, --dead-letter, --rejects and --report (ck.json: ck.shard-1-of-4.json)"

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// parseShard reads --shard. Its k may be written $NAME, the name of an
// environment variable that holds it: AWS Batch runs a job definition's
// command without a shell and gives an array job's child its index only as
// AWS_BATCH_JOB_ARRAY_INDEX, so nothing else would expand it. (Kubernetes
// expands $(JOB_COMPLETION_INDEX) itself, before treeport starts.)
func parseShard(c *cli.Context) (ddbwrite.Shard, error) {
	s := c.String("shard")
	if name, ok := strings.CutPrefix(s, "$"); ok {
		name, n, _ := strings.Cut(name, "/")
		name = strings.TrimSuffix(strings.TrimPrefix(name, "{"), "}")
		if !envName.MatchString(name) {
			return ddbwrite.Shard{}, usagef("--shard %q: $NAME/N names an environment variable that holds k, such as $AWS_BATCH_JOB_ARRAY_INDEX/4", s)
		}
		k, set := os.LookupEnv(name)
		if !set {
			return ddbwrite.Shard{}, usagef("--shard %q: the environment variable %s is not set (AWS Batch sets AWS_BATCH_JOB_ARRAY_INDEX in the children of an array job, and a Kubernetes Indexed Job JOB_COMPLETION_INDEX); set it, or give the shard as a number", s, name)
		}
		s = strings.TrimSpace(k) + "/" + n
	}
	shard, err := ddbwrite.ParseShard(s)
	if err != nil {
		return shard, usagef("%v", err)
	}
	if c.String("shard") != s {
		fmt.Fprintf(c.App.ErrWriter, "shard %s (--shard %s)\n", shard, c.String("shard"))
	}
	return shard, nil
}
