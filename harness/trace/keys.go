package trace

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// eventFields and headerFields are the JSON keys of Event and Header, from
// their struct tags: the only keys the strict reader accepts.
var (
	eventFields  = jsonKeys(reflect.TypeFor[Event]())
	headerFields = jsonKeys(reflect.TypeFor[Header]())
)

func jsonKeys(t reflect.Type) []string {
	var keys []string
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		keys = append(keys, name)
	}
	return keys
}

// checkKeys verifies that the top-level keys of the JSON object obj (already
// known to be well-formed) are all in allowed, each at most once, spelled
// exactly: encoding/json alone would accept "Kind" for "kind" and a key
// given twice.
func checkKeys(obj []byte, allowed []string) error {
	var seen [32]string
	n := 0
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return fmt.Errorf("not a JSON object")
	}
	i++
	for {
		i = skipSpace(obj, i)
		if i < len(obj) && obj[i] == '}' {
			return nil
		}
		if i < len(obj) && obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
		end := skipString(obj, i)
		key, err := unquote(obj[i:end])
		if err != nil {
			return err
		}
		if !contains(allowed, key) {
			return fmt.Errorf("unknown field %q", key)
		}
		for _, s := range seen[:n] {
			if s == key {
				return fmt.Errorf("field %q given twice", key)
			}
		}
		if n < len(seen) {
			seen[n] = key
			n++
		}
		i = skipSpace(obj, end)
		i = skipValue(obj, skipSpace(obj, i+1)) // past ':' and the value
	}
}

func unquote(s []byte) (string, error) {
	if !containsByte(s[1:len(s)-1], '\\') {
		return string(s[1 : len(s)-1]), nil
	}
	var out string
	err := json.Unmarshal(s, &out)
	return out, err
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the JSON string starting at b[i].
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// skipValue returns the index after the JSON value starting at b[i].
func skipValue(b []byte, i int) int {
	depth := 0
	for i < len(b) {
		switch c := b[i]; {
		case c == '"':
			i = skipString(b, i)
			if depth == 0 {
				return i
			}
			continue
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			if depth == 0 {
				return i
			}
			depth--
			if depth == 0 {
				return i + 1
			}
		case depth == 0 && (c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			return i
		}
		i++
	}
	return i
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func containsByte(b []byte, c byte) bool {
	for _, x := range b {
		if x == c {
			return true
		}
	}
	return false
}
