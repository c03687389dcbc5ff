// Package form is what the scenario language (harness/scenario) and its
// xDS sub-language (harness/scenario/xds) share: the symbolic address, the
// error that names a field (and, for a file, its line), and the strict YAML
// reader and writer both forms are read and written with. The reader keeps
// the line of every field path it reads, so that a problem found later, by
// validation, is placed on its line too.
//
// harness/scenario gives Addr, Family and Error their public names
// (scenario.Addr, scenario.Family, scenario.Error); nothing outside
// harness/scenario imports this package.
package form
