package layouts

// CanonicalNumber returns text that is equal for two DynamoDB numbers exactly
// when they are equal by value ("15e-1" for both "1.50" and "1.5"), the way
// DynamoDB compares them. Text that is not a number is returned marked, so it
// never equals a number.
func CanonicalNumber(s string) string { return canonicalNumber(s) }
