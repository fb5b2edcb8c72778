package experiment

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Schema()))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// asJSON reads YAML the way an editor's schema check sees it.
func asJSON(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestExamplesMatchSchema(t *testing.T) {
	s := compileSchema(t)
	files, _ := filepath.Glob("../examples/*.yaml")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(asJSON(t, data)); err != nil {
			t.Errorf("%s does not match the schema: %v", f, err)
		}
	}
	if err := s.Validate(asJSON(t, Starter())); err != nil {
		t.Errorf("the starter file does not match the schema: %v", err)
	}
	if _, err := Parse(Starter(), "starter.yaml"); err != nil {
		t.Errorf("the starter file does not parse: %v", err)
	}
}

func TestSchemaRejects(t *testing.T) {
	s := compileSchema(t)
	for _, bad := range []string{
		"apiVersion: spate/v1\nkind: Experiment\nstages: [{name: a, rate: 1, duration: 1s, rat: 2}]\n",
		"apiVersion: spate/v1\nkind: Experiment\nstages: [{name: a, rate: 1, concurrency: 2, duration: 1s}]\n",
		"apiVersion: spate/v1\nkind: Experiment\nstages: [{name: a, rate: 1}]\n",
		"apiVersion: spate/v1\nkind: Experiment\nstages: [{name: a, rate: 1, duration: soon}]\n",
		"apiVersion: spate/v2\nkind: Experiment\nstages: [{name: a, rate: 1, duration: 1s}]\n",
	} {
		if err := s.Validate(asJSON(t, []byte(bad))); err == nil {
			t.Errorf("schema accepted:\n%s", bad)
		}
	}
}

// TestSchemaCoversEveryField keeps the schema and the Go types in step: every
// yaml key of the types must be a property in the schema.
func TestSchemaCoversEveryField(t *testing.T) {
	text := string(Schema())
	var walk func(reflect.Type)
	seen := map[reflect.Type]bool{}
	walk = func(ty reflect.Type) {
		for ty.Kind() == reflect.Pointer || ty.Kind() == reflect.Slice || ty.Kind() == reflect.Map {
			ty = ty.Elem()
		}
		if ty.Kind() != reflect.Struct || seen[ty] || !strings.HasPrefix(ty.PkgPath(), "github.com/spate-dev/spate/") {
			return
		}
		seen[ty] = true
		for i := 0; i < ty.NumField(); i++ {
			f := ty.Field(i)
			key := strings.Split(f.Tag.Get("yaml"), ",")[0]
			if key == "-" || !f.IsExported() {
				continue
			}
			if !strings.Contains(text, `"`+key+`"`) {
				t.Errorf("%s.%s (yaml %q) is not in schema.json", ty.Name(), f.Name, key)
			}
			walk(f.Type)
		}
	}
	walk(reflect.TypeOf(Experiment{}))
}
