package layoutbench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

const schemaPath = "../docs/bench-report.schema.json"

// validate checks v (decoded JSON) against the subset of JSON Schema draft
// 2020-12 the report's schema uses: type (one or a list), properties,
// required, additionalProperties false, items, enum, minimum, maximum,
// oneOf and $ref into $defs. A keyword it does not know is an error, so the
// schema cannot quietly use more than this checks.
func validate(root, s map[string]any, v any, at string) []string {
	if ref, ok := s["$ref"].(string); ok {
		name, found := strings.CutPrefix(ref, "#/$defs/")
		def, _ := root["$defs"].(map[string]any)[name].(map[string]any)
		if !found || def == nil {
			return []string{at + ": unknown $ref " + ref}
		}
		return validate(root, def, v, at)
	}
	var errs []string
	for k := range s {
		switch k {
		case "type", "properties", "required", "additionalProperties", "items", "enum", "minimum", "maximum", "oneOf",
			"description", "$schema", "$id", "title", "$defs":
		default:
			errs = append(errs, fmt.Sprintf("%s: the schema uses %q, which the test's validator does not check", at, k))
		}
	}
	if alts, ok := s["oneOf"].([]any); ok {
		matched := 0
		for _, a := range alts {
			if len(validate(root, a.(map[string]any), v, at)) == 0 {
				matched++
			}
		}
		if matched != 1 {
			errs = append(errs, fmt.Sprintf("%s: matches %d of oneOf's schemas, want exactly 1", at, matched))
		}
	}
	if ty, ok := s["type"]; ok {
		var types []string
		switch ty := ty.(type) {
		case string:
			types = []string{ty}
		case []any:
			for _, t := range ty {
				types = append(types, t.(string))
			}
		}
		if !slices.ContainsFunc(types, func(t string) bool { return isType(v, t) }) {
			return append(errs, fmt.Sprintf("%s: %v is not of type %v", at, v, types))
		}
	}
	if enum, ok := s["enum"].([]any); ok && !slices.ContainsFunc(enum, func(e any) bool { return fmt.Sprint(e) == fmt.Sprint(v) }) {
		errs = append(errs, fmt.Sprintf("%s: %v is not one of %v", at, v, enum))
	}
	if n, ok := v.(json.Number); ok {
		f, _ := n.Float64()
		if m, ok := s["minimum"].(float64); ok && f < m {
			errs = append(errs, fmt.Sprintf("%s: %v is below the minimum %v", at, f, m))
		}
		if m, ok := s["maximum"].(float64); ok && f > m {
			errs = append(errs, fmt.Sprintf("%s: %v is above the maximum %v", at, f, m))
		}
	}
	switch v := v.(type) {
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		required, _ := s["required"].([]any)
		for _, r := range required {
			if _, ok := v[r.(string)]; !ok {
				errs = append(errs, fmt.Sprintf("%s: the required field %q is missing", at, r))
			}
		}
		for k, fv := range v {
			ps, ok := props[k].(map[string]any)
			if !ok {
				if s["additionalProperties"] == false {
					errs = append(errs, fmt.Sprintf("%s: the field %q is not in the schema", at, k))
				}
				continue
			}
			errs = append(errs, validate(root, ps, fv, at+"."+k)...)
		}
	case []any:
		if items, ok := s["items"].(map[string]any); ok {
			for i, e := range v {
				errs = append(errs, validate(root, items, e, fmt.Sprintf("%s[%d]", at, i))...)
			}
		}
	}
	return errs
}

func isType(v any, t string) bool {
	switch t {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "null":
		return v == nil
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "integer":
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		_, err := n.Int64()
		return err == nil
	}
	return false
}

func decode(t *testing.T, data []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func loadSchema(t *testing.T) map[string]any {
	t.Helper()
	data, err := os.ReadFile(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatalf("%s: %v", schemaPath, err)
	}
	return s
}

// TestJSONReportFollowsSchema: an offline and an online report validate
// against docs/bench-report.schema.json, and the validator catches a field
// that is not in the schema, a missing one and a wrong type.
func TestJSONReportFollowsSchema(t *testing.T) {
	schema := loadSchema(t)
	rep := offline(t, readFixture(t, "cars"), Options{})
	var buf bytes.Buffer
	if err := WriteJSON(&buf, rep); err != nil {
		t.Fatal(err)
	}
	report := decode(t, buf.Bytes())
	if errs := validate(schema, schema, report, "report"); len(errs) > 0 {
		t.Fatalf("the offline report does not follow the schema:\n%s", strings.Join(errs, "\n"))
	}

	// The validator must be able to fail.
	bad := decode(t, buf.Bytes()).(map[string]any)
	l0 := bad["layouts"].([]any)[0].(map[string]any)
	l0["surprise"] = true
	delete(l0["cost"].(map[string]any), "million_reads_usd")
	l0["items"] = "many"
	errs := strings.Join(validate(schema, schema, bad, "report"), "\n")
	for _, want := range []string{`"surprise" is not in the schema`, `"million_reads_usd" is missing`, "report.layouts[0].items: many is not of type"} {
		if !strings.Contains(errs, want) {
			t.Errorf("the validator did not report %s; it said:\n%s", want, errs)
		}
	}
}
