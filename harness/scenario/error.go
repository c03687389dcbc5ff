package scenario

import "github.com/conformlab/conform/harness/scenario/internal/form"

// Error is a problem with a scenario: which field, and for a file, which
// file and line. Its Error method renders "file:line: field: msg", leaving
// out the parts not known. The xDS sub-language (harness/scenario/xds)
// reports its problems with the same type.
type Error = form.Error
