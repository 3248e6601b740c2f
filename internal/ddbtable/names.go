package ddbtable

import (
	"fmt"

	"github.com/treeport/treeport/layouts"
)

// CheckTableName returns an error saying the rule when name is not a table
// name DynamoDB accepts, so that a command refuses it before any call
// instead of after the service's retries. what names it in the message
// ("--table").
func CheckTableName(what, name string) error {
	if layouts.IsTableName(name) {
		return nil
	}
	return fmt.Errorf("%s %q is not a DynamoDB table name: a table name is 3 to 255 characters, each a letter (a-z, A-Z), a digit, '_', '-' or '.'", what, name)
}
