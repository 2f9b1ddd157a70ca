package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/coachgw/coachgw/internal/ndjson"
)

// ErrNotStrict reports a schema that OpenAI's strict structured-output mode cannot express:
// a free-form object (no properties, or additionalProperties other than false), a value of any
// type, a keyword with no strict equivalent (allOf, not, if, patternProperties, tuples ...), a
// non-local $ref, or a root that is not a plain object. Stream then sends the schema as given
// with strict:false, and the gateway's own validation of the result still applies.
var ErrNotStrict = errors.New("schema cannot be expressed in OpenAI strict mode")

// Strict rewrites a JSON schema for OpenAI strict mode and returns it compact, with the order of
// every object's members kept (models write properties in schema order, which matters for what
// streams first):
//   - every object gets additionalProperties:false and a required list naming all its
//     properties, in order;
//   - a property that was optional becomes nullable: "type":T becomes [T,"null"] (an enum gets
//     null added too), an anyOf gets a {"type":"null"} branch, and a $ref or const is wrapped
//     as anyOf [original, {"type":"null"}] with its description moved to the wrapper. Strict
//     output thus writes null for an absent field; schema.StripNulls undoes that;
//   - oneOf becomes anyOf (equivalent for generation), and keywords that only validate, which
//     strict mode rejects, are dropped: $schema, $id, $comment, default, examples, format,
//     pattern, minLength, maxLength, minimum, maximum, exclusive bounds, multipleOf, minItems,
//     maxItems, uniqueItems, minProperties, maxProperties and the like;
//   - "definitions" and "$defs" stay where they are (OpenAI accepts both), so local refs stay
//     valid, and every definition is made strict too.
//
// A schema strict mode cannot express yields an error wrapping ErrNotStrict; other errors mean
// the input is not a usable schema.
func Strict(schema []byte) ([]byte, error) { return StrictFor(schema, 0) }

// StrictFor is Strict, keeping the validation keywords of the groups in keep (a profile's
// Bounds): what the endpoint's grammar enforces, so that it never writes a value the
// gateway's validation then rejects, such as a confidence of -5 where the schema says
// "minimum": 0.
func StrictFor(schema []byte, keep Bounds) ([]byte, error) {
	root, err := parseJSON(schema)
	if err != nil {
		return nil, fmt.Errorf("parsing the schema: %w", err)
	}
	o, ok := root.(*object)
	if !ok {
		return nil, notStrict("#", "the root is not an object schema")
	}
	if t, _ := o.get("type"); t != "object" {
		return nil, notStrict("#", `the root must have "type": "object"`)
	}
	s := strictifier{root: o, keep: keep}
	if err := s.schema(o, "#"); err != nil {
		return nil, err
	}
	return appendJSON(nil, o), nil
}

// kept are the keywords strict mode supports and Strict passes through.
var kept = map[string]bool{
	"type": true, "properties": true, "required": true, "additionalProperties": true, "items": true,
	"enum": true, "const": true, "anyOf": true, "$ref": true, "$defs": true, "definitions": true,
	"description": true, "title": true,
}

// dropped are keywords that only narrow what validates; the gateway validates the result
// against the original schema, so dropping them loses nothing but a hint to the model.
var dropped = map[string]bool{
	"$schema": true, "$id": true, "$comment": true, "default": true, "examples": true,
	"format": true, "pattern": true, "minLength": true, "maxLength": true,
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true, "multipleOf": true,
	"minItems": true, "maxItems": true, "uniqueItems": true, "minProperties": true, "maxProperties": true,
	"contentEncoding": true, "contentMediaType": true, "readOnly": true, "writeOnly": true, "deprecated": true,
}

func notStrict(path, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrNotStrict, path, fmt.Sprintf(format, args...))
}

type strictifier struct {
	root *object
	keep Bounds
}

// schema makes the schema node v strict in place; path locates it for error messages.
func (s *strictifier) schema(v any, path string) error {
	o, ok := v.(*object)
	if !ok {
		return notStrict(path, "boolean schemas are not supported")
	}
	if err := s.keywords(o, path); err != nil {
		return err
	}
	if ref, ok := o.get("$ref"); ok {
		if err := s.checkRef(ref, path); err != nil {
			return err
		}
	}
	for _, key := range [...]string{"definitions", "$defs"} {
		defs, ok := o.get(key)
		if !ok {
			continue
		}
		d, ok := defs.(*object)
		if !ok {
			return fmt.Errorf("%s/%s: not an object", path, key)
		}
		for _, m := range d.members {
			if err := s.schema(m.val, path+"/"+key+"/"+m.key); err != nil {
				return err
			}
		}
	}
	if branches, ok := o.get("anyOf"); ok {
		list, ok := branches.([]any)
		if !ok || len(list) == 0 {
			return fmt.Errorf("%s/anyOf: not a non-empty array", path)
		}
		for i, b := range list {
			if err := s.schema(b, path+"/anyOf/"+strconv.Itoa(i)); err != nil {
				return err
			}
		}
	}
	items, hasItems := o.get("items")
	if hasItems {
		if _, tuple := items.([]any); tuple {
			return notStrict(path, "tuple items are not supported")
		}
		if err := s.schema(items, path+"/items"); err != nil {
			return err
		}
	}
	switch {
	case hasType(o, "object"):
		return s.object(o, path)
	case hasType(o, "array") && !hasItems:
		return notStrict(path, "an array without items accepts anything")
	case !o.has("type") && !o.has("$ref") && !o.has("anyOf") && !o.has("enum") && !o.has("const"):
		return notStrict(path, "the schema accepts any value")
	}
	return nil
}

// keywords drops what strict mode does not need, renames oneOf and rejects the rest.
func (s *strictifier) keywords(o *object, path string) error {
	for i := 0; i < len(o.members); {
		k := o.members[i].key
		switch {
		case boundKeywords[k]&s.keep != 0:
		case dropped[k]:
			o.members = append(o.members[:i], o.members[i+1:]...)
			continue
		case k == "oneOf":
			if o.has("anyOf") {
				return notStrict(path, "both oneOf and anyOf")
			}
			o.members[i].key = "anyOf"
		case !kept[k]:
			return notStrict(path, "keyword %q is not supported", k)
		}
		i++
	}
	return nil
}

// checkRef accepts references to the root and to its definitions, which Strict keeps in place.
func (s *strictifier) checkRef(ref any, path string) error {
	r, ok := ref.(string)
	if !ok {
		return fmt.Errorf("%s/$ref: not a string", path)
	}
	if r == "#" {
		return nil
	}
	for _, key := range [...]string{"definitions", "$defs"} {
		name, ok := strings.CutPrefix(r, "#/"+key+"/")
		if !ok {
			continue
		}
		name = strings.NewReplacer("~1", "/", "~0", "~").Replace(name)
		if defs, _ := s.root.get(key); defs != nil {
			if d, ok := defs.(*object); ok && d.has(name) {
				return nil
			}
		}
		return fmt.Errorf("%s: $ref %q points to nothing", path, r)
	}
	return notStrict(path, "$ref %q is not a reference to the root's definitions", r)
}

// object makes an object schema strict: all properties required, optional ones nullable.
func (s *strictifier) object(o *object, path string) error {
	props, _ := o.get("properties")
	p, _ := props.(*object)
	if p == nil || len(p.members) == 0 {
		return notStrict(path, "a free-form object (no properties)")
	}
	if ap, ok := o.get("additionalProperties"); ok && ap != false {
		return notStrict(path, "additionalProperties other than false")
	}
	required := map[string]bool{}
	if req, ok := o.get("required"); ok {
		list, ok := req.([]any)
		if !ok {
			return fmt.Errorf("%s/required: not an array", path)
		}
		for _, r := range list {
			name, ok := r.(string)
			if !ok {
				return fmt.Errorf("%s/required: not an array of strings", path)
			}
			required[name] = true
		}
	}
	names := make([]any, len(p.members))
	for i, m := range p.members {
		ppath := path + "/properties/" + m.key
		if err := s.schema(m.val, ppath); err != nil {
			return err
		}
		if !required[m.key] {
			nullable(m.val.(*object))
		}
		names[i] = m.key
	}
	o.set("additionalProperties", false)
	o.set("required", names)
	return nil
}

// nullable lets the strict schema node o also accept null. schema has made sure o has a
// type, $ref, anyOf, enum or const.
func nullable(o *object) {
	switch {
	case o.has("$ref") || o.has("const"):
		inner := &object{}
		outer := []member{{"anyOf", []any{inner, nullSchema()}}}
		for _, m := range o.members {
			if m.key == "description" || m.key == "title" {
				outer = append(outer, m)
			} else {
				inner.members = append(inner.members, m)
			}
		}
		o.members = outer
	case o.has("anyOf"):
		branches, _ := o.get("anyOf")
		list := branches.([]any)
		for _, b := range list {
			if bo, ok := b.(*object); ok && hasType(bo, "null") {
				return
			}
		}
		o.set("anyOf", append(list, nullSchema()))
	default:
		if t, ok := o.get("type"); ok {
			switch t := t.(type) {
			case string:
				if t != "null" {
					o.set("type", []any{t, "null"})
				}
			case []any:
				if !contains(t, "null") {
					o.set("type", append(t, "null"))
				}
			}
		}
		if e, ok := o.get("enum"); ok {
			if list, ok := e.([]any); ok && !contains(list, nil) {
				o.set("enum", append(list, nil))
			}
		}
	}
}

func nullSchema() *object { return &object{members: []member{{"type", "null"}}} }

func hasType(o *object, name string) bool {
	switch t, _ := o.get("type"); t := t.(type) {
	case string:
		return t == name
	case []any:
		return contains(t, name)
	}
	return false
}

func contains(list []any, v any) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// object is a JSON object that keeps its members' order, which encoding/json's maps lose.
// Values are *object, []any, string, json.Number, bool or nil.
type object struct {
	members []member
}

type member struct {
	key string
	val any
}

func (o *object) get(key string) (any, bool) {
	for _, m := range o.members {
		if m.key == key {
			return m.val, true
		}
	}
	return nil, false
}

func (o *object) has(key string) bool {
	_, ok := o.get(key)
	return ok
}

// set replaces key's value in place, or appends the member.
func (o *object) set(key string, val any) {
	for i := range o.members {
		if o.members[i].key == key {
			o.members[i].val = val
			return
		}
	}
	o.members = append(o.members, member{key, val})
}

func parseJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := parseValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("unexpected data after the top-level value")
	}
	return v, nil
}

func parseValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		o := &object{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return nil, err
			}
			v, err := parseValue(dec)
			if err != nil {
				return nil, err
			}
			o.set(k.(string), v) // a repeated key takes the last value, as encoding/json does
		}
		_, err = dec.Token()
		return o, err
	case json.Delim('['):
		list := []any{}
		for dec.More() {
			v, err := parseValue(dec)
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
		_, err = dec.Token()
		return list, err
	}
	return tok, nil
}

func appendJSON(b []byte, v any) []byte {
	switch v := v.(type) {
	case *object:
		b = append(b, '{')
		for i, m := range v.members {
			if i > 0 {
				b = append(b, ',')
			}
			b = ndjson.AppendString(b, m.key)
			b = append(b, ':')
			b = appendJSON(b, m.val)
		}
		return append(b, '}')
	case []any:
		b = append(b, '[')
		for i, x := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSON(b, x)
		}
		return append(b, ']')
	case string:
		return ndjson.AppendString(b, v)
	case json.Number:
		return append(b, v...)
	case bool:
		return strconv.AppendBool(b, v)
	default:
		return append(b, "null"...)
	}
}
