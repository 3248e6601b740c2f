package commands

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/treeport/treeport/internal/ddbtable"
)

// runApp runs the app as Main does, with its output and errors kept in
// buffers, and returns the exit code, what the command printed, and the
// error as a user reads it.
func runApp(t *testing.T, args ...string) (code int, stdout, message string) {
	t.Helper()
	app := App()
	var out, errOut bytes.Buffer
	app.Writer, app.ErrWriter = &out, &errOut
	err := requiredFlags(app.RunContext(context.Background(), append([]string{"treeport"}, args...)))
	if err != nil {
		message = userMessage(err)
	}
	return ExitCode(err), out.String(), message
}

// offline makes any call to AWS fail at once, not after retries: a case that
// reached the network would exit 3, not 2.
func offline(t *testing.T) {
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

// A flag that cannot be used is a usage error: exit 2, a message that
// names the flag, nothing printed and nothing sent, before any call to
// DynamoDB (the endpoint is a closed port).
func TestFlagUsageErrorsExit2(t *testing.T) {
	offline(t)
	const endpoint = "http://127.0.0.1:9"
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"schema: unknown format", []string{"schema", "--layout", "path", "--table", "Tree", "--format", "yaml"},
			`--format "yaml": want json, workbench or cloudformation`},
		{"schema: --wcu without --rcu", []string{"schema", "--layout", "path", "--table", "Tree", "--wcu", "5"},
			"provisioned capacity needs both --wcu and --rcu above 0"},
		{"schema: ceiling with provisioned capacity", []string{"schema", "--layout", "path", "--table", "Tree", "--wcu", "5", "--rcu", "5", "--max-on-demand-wcu", "10"},
			"--max-on-demand-wcu and --max-on-demand-rcu cap an on-demand table"},
		{"schema: capacity of 0", []string{"schema", "--layout", "path", "--table", "Tree", "--warm-wcu", "0"},
			"--warm-wcu 0: want a number above 0"},
		{"schema: warm below DynamoDB's own", []string{"schema", "--layout", "path", "--table", "Tree", "--warm-wcu", "1000"},
			"warm write throughput 1000 is below the 4000 writes a second every new table starts with"},
		{"import: no --in", []string{"import", "--layout", "path", "--table", "Tree", "--endpoint-url", endpoint},
			"--in is required"},
		{"import: a table name DynamoDB refuses", []string{"import", "--in", "../../fixtures/folders.csv", "--layout", "path", "--table", "a", "--endpoint-url", endpoint},
			`--table "a" is not a DynamoDB table name`},
		{"import: a shard that is no shard", []string{"import", "--in", "../../fixtures/folders.csv", "--layout", "path", "--table", "Tree", "--shard", "x", "--endpoint-url", endpoint},
			"--shard"},
		{"export: a table name DynamoDB refuses", []string{"export", "--layout", "path", "--table", "no spaces", "--out", "out.csv", "--endpoint-url", endpoint},
			`--table "no spaces" is not a DynamoDB table name`},
		{"unknown command", []string{"exprot"},
			`unknown command "exprot"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, msg := runApp(t, tt.args...)
			if code != exitInvalid {
				t.Errorf("exit %d, want %d; error: %s", code, exitInvalid, msg)
			}
			if !strings.Contains(msg, tt.want) {
				t.Errorf("error %q, want it to say %q", msg, tt.want)
			}
			if strings.HasPrefix(msg, "importer: ") || strings.HasPrefix(msg, "ddbtable: ") {
				t.Errorf("error %q names a package", msg)
			}
			if stdout != "" {
				t.Errorf("printed %q before refusing", stdout)
			}
		})
	}
}

// The capacity flags become the Billing a new table is created with.
func TestBillingFromFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want ddbtable.Billing
	}{
		{"on-demand", nil, ddbtable.Billing{}},
		{"provisioned", []string{"--wcu", "5", "--rcu", "7"}, ddbtable.Billing{Provisioned: true, WCU: 5, RCU: 7}},
		{"warm", []string{"--warm-wcu", "8000", "--warm-rcu", "15000"}, ddbtable.Billing{WarmWCU: 8000, WarmRCU: 15000}},
		{"capped", []string{"--max-on-demand-wcu", "900", "--max-on-demand-rcu", "1000"}, ddbtable.Billing{MaxOnDemandWCU: 900, MaxOnDemandRCU: 1000}},
		{"provisioned and warm", []string{"--wcu", "10", "--rcu", "10", "--warm-wcu", "4000"}, ddbtable.Billing{Provisioned: true, WCU: 10, RCU: 10, WarmWCU: 4000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got ddbtable.Billing
			app := &cli.App{Name: "t", Flags: writerFlags(), Action: func(c *cli.Context) (err error) {
				got, err = billing(c)
				return err
			}}
			if err := app.Run(append([]string{"t"}, tt.args...)); err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("billing = %+v, want %+v", got, tt.want)
			}
		})
	}
}
