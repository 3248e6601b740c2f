package ddb

import (
	"fmt"
	"regexp"
)

// tableName is DynamoDB's rule for table (and index) names: 3 to 255
// characters, each a-z, A-Z, 0-9, '_', '-' or '.'. From "Supported data
// types and naming rules in Amazon DynamoDB", DynamoDB Developer Guide
// (HowItWorks.NamingRulesDataTypes).
var tableName = regexp.MustCompile(`^[A-Za-z0-9_.-]{3,255}$`)

// CheckTableName returns an error saying the rule when name is not a table
// name DynamoDB accepts, so that a command refuses it before any call
// instead of after the service's retries. what names it in the message
// ("--table").
func CheckTableName(what, name string) error {
	if tableName.MatchString(name) {
		return nil
	}
	return fmt.Errorf("%s %q is not a DynamoDB table name: a table name is 3 to 255 characters, each a letter (a-z, A-Z), a digit, '_', '-' or '.'", what, name)
}
