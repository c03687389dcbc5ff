package form

import (
	"fmt"
	"strings"
)

// Error is a problem with a scenario: which field, and for a file, which
// file and line.
type Error struct {
	File  string // empty for a scenario built in Go
	Line  int    // 1-based; zero when unknown
	Field string // path of the field in the YAML form: "steps[2].fault.addr"
	Msg   string
}

// Error renders "file:line: field: msg", leaving out the parts not known.
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(":")
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, "%d:", e.Line)
	}
	if b.Len() > 0 {
		b.WriteString(" ")
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// FieldErr is a problem with the field at path field (no file or line yet).
func FieldErr(field, format string, args ...any) *Error {
	return &Error{Field: field, Msg: fmt.Sprintf(format, args...)}
}
