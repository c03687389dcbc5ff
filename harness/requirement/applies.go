package requirement

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// The languages the documents scope rules by ("Java and Go only", "In
// C-core"), as the catalogue's impls field names them.
const (
	CCore = "c-core"
	Go    = "go"
	Java  = "java"
	Node  = "node"
)

// Languages lists the languages impls may name.
var Languages = []string{CCore, Go, Java, Node}

// Reference is the reference implementation's name in traces (reference.Impl,
// driver.Reference). It implements every rule: no scope leaves it out.
const Reference = "reference"

// implLanguages maps the implementations conform runs, by the name their
// traces give (trace.Header.Impl) or a user gives (driver.Release), to their
// language: grpcio is C-core behind Python.
var implLanguages = map[string]string{
	"grpc-go":   Go,
	"grpc-java": Java,
	"grpc-js":   Node,
	"grpcio":    CCore,
}

// LanguageOf is the language of an implementation named as traces and
// releases name it ("grpc-go", "grpc-go@v1.85.0", "grpc-go@v1.86.0
// (linked)"), or "" when conform does not know it. A user's own Go
// balancer ("go:example.com/acme@v1.2.3", driver.GoBalancer) runs in
// grpc-go: Go.
func LanguageOf(impl string) string {
	if strings.HasPrefix(impl, "go:") {
		return Go
	}
	name, _, _ := strings.Cut(impl, "@")
	name, _, _ = strings.Cut(name, " ")
	return implLanguages[name]
}

// Applies is where a document scopes a rule: to implementations in some
// languages, to those that have a feature, or to runs with an environment
// switch set. The zero Applies scopes nothing: the rule is for every
// implementation in every run.
type Applies struct {
	// Langs are the languages named by impls; Except says the rule is
	// for every language but those ("not go, node"), else only for them.
	Langs  []string
	Except bool
	// UnlessCan is a driver capability that brings an implementation
	// Langs leaves out back into scope: the feature the document makes
	// the precondition ("if/when" Go supports session affinity).
	UnlessCan string
	// Can is a driver capability the rule needs ("shuffle": only clients
	// that support shuffleAddressList shuffle), or, with CanNot, one it
	// is for the lack of.
	Can    string
	CanNot bool
	// Env, EnvValue and EnvNot: the rule holds in runs whose client has
	// the switch Env set to EnvValue (with EnvNot, set otherwise or not
	// at all).
	Env      string
	EnvValue string
	EnvNot   bool
	// Because says so in the document's words, citing its section.
	Because string
}

// Scoped reports whether a scopes anything.
func (a Applies) Scoped() bool {
	return len(a.Langs) > 0 || a.Can != "" || a.Env != ""
}

// Run is what a trace shows of the run a requirement is judged on: who
// ran it (trace.Header.Impl), what its driver said it can do, and the
// client's environment switches.
type Run struct {
	Impl string
	Can  []string
	Env  map[string]string
}

// OutOfScope says why the rule does not apply to run, or "" when it does.
// The reference is never out of scope; an implementation whose language
// conform does not know is in the scope of every language clause, since
// nothing shows it is not.
func (a Applies) OutOfScope(run Run) string {
	if !a.Scoped() || run.Impl == Reference {
		return ""
	}
	if lang := LanguageOf(run.Impl); lang != "" && len(a.Langs) > 0 && slices.Contains(a.Langs, lang) == a.Except {
		if a.UnlessCan == "" || !slices.Contains(run.Can, a.UnlessCan) {
			who := "for " + strings.Join(a.Langs, ", ") + " only"
			if a.Except {
				who = "not for " + strings.Join(a.Langs, ", ")
			}
			if a.UnlessCan != "" {
				who += fmt.Sprintf(" unless the driver declares %s, which %s's does not", a.UnlessCan, run.Impl)
			}
			return fmt.Sprintf("out of the rule's scope: %s is %s, and the rule is %s (%s)", run.Impl, lang, who, a.Because)
		}
	}
	if a.Can != "" && slices.Contains(run.Can, a.Can) == a.CanNot {
		if a.CanNot {
			return fmt.Sprintf("out of the rule's scope: it is for implementations without %s, and %s's driver declares it (%s)", a.Can, run.Impl, a.Because)
		}
		return fmt.Sprintf("out of the rule's scope: it is for implementations with %s, and %s's driver does not declare it (%s)", a.Can, run.Impl, a.Because)
	}
	if a.Env != "" && (run.Env[a.Env] == a.EnvValue) == a.EnvNot {
		if a.EnvNot {
			return fmt.Sprintf("out of the rule's scope: it holds unless %s=%s, and this run set it (%s)", a.Env, a.EnvValue, a.Because)
		}
		return fmt.Sprintf("out of the rule's scope: it holds with %s=%s, which this run did not set (%s)", a.Env, a.EnvValue, a.Because)
	}
	return ""
}

// String renders a as the catalogue's fields say it, in one line:
// "not go, java, node unless can session_metadata; env X!=true".
func (a Applies) String() string {
	var parts []string
	if len(a.Langs) > 0 {
		s := strings.Join(a.Langs, ", ")
		if a.Except {
			s = "not " + s
		}
		if a.UnlessCan != "" {
			s += " unless can " + a.UnlessCan
		}
		parts = append(parts, "impls "+s)
	}
	if a.Can != "" {
		s := "can " + a.Can
		if a.CanNot {
			s = "cannot " + a.Can
		}
		parts = append(parts, s)
	}
	if a.Env != "" {
		op := "="
		if a.EnvNot {
			op = "!="
		}
		parts = append(parts, "env "+a.Env+op+a.EnvValue)
	}
	return strings.Join(parts, "; ")
}

var (
	capabilityPattern = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	envPattern        = regexp.MustCompile(`^(GRPC_[A-Z0-9_]+)(!?=)([a-z0-9]+)$`)
	citePattern       = regexp.MustCompile(`\b[AL][0-9]+\b`)
)

// parseApplies reads an entry's scope fields into e.Applies, reporting
// each problem at its field's line.
func (p *parser) parseApplies(e *entry, values map[string]string) {
	id := e.ID
	a := &e.Applies
	if v := values["impls"]; v != "" {
		if rest, ok := strings.CutPrefix(v, "not "); ok {
			a.Except, v = true, rest
		}
		for _, l := range strings.Split(v, ",") {
			l = strings.TrimSpace(l)
			switch {
			case !slices.Contains(Languages, l):
				p.addf(e.lineOf("impls"), id, "impls: unknown language %q (known: %s; \"not\" first for all but those)", l, strings.Join(Languages, ", "))
			case slices.Contains(a.Langs, l):
				p.addf(e.lineOf("impls"), id, "impls: %s given twice", l)
			default:
				a.Langs = append(a.Langs, l)
			}
		}
	}
	if v := values["unless_can"]; v != "" {
		switch {
		case len(a.Langs) == 0:
			p.addf(e.lineOf("unless_can"), id, "unless_can brings back implementations impls leaves out: it needs impls")
		case !capabilityPattern.MatchString(v):
			p.addf(e.lineOf("unless_can"), id, "unless_can %q is not a driver capability (lower_snake_case, as in hello's can)", v)
		default:
			a.UnlessCan = v
		}
	}
	if v := values["can"]; v != "" {
		if rest, ok := strings.CutPrefix(v, "not "); ok {
			a.CanNot, v = true, rest
		}
		if capabilityPattern.MatchString(v) {
			a.Can = v
		} else {
			p.addf(e.lineOf("can"), id, "can %q is not a driver capability (lower_snake_case, \"not\" first for its lack)", v)
		}
	}
	if v := values["env"]; v != "" {
		if m := envPattern.FindStringSubmatch(v); m != nil {
			a.Env, a.EnvNot, a.EnvValue = m[1], m[2] == "!=", m[3]
		} else {
			p.addf(e.lineOf("env"), id, "env %q: want GRPC_NAME=value or GRPC_NAME!=value", v)
		}
	}
	a.Because = values["applies_because"]
	scoped := values["impls"] != "" || values["can"] != "" || values["env"] != ""
	switch {
	case !scoped && a.Because != "":
		p.addf(e.lineOf("applies_because"), id, "applies_because without impls, can or env: nothing is scoped")
	case !scoped:
	case a.Because == "":
		p.addf(e.Line, id, "a scoped entry needs applies_because: the document's words, citing it and its section")
	case strings.ContainsAny(a.Because, "\r\n"):
		p.addf(e.lineOf("applies_because"), id, "applies_because must be one line")
	case len([]rune(a.Because)) > MaxReasonLen:
		p.addf(e.lineOf("applies_because"), id, "applies_because is %d characters; say it in at most %d", len([]rune(a.Because)), MaxReasonLen)
	case !citePattern.MatchString(a.Because):
		p.addf(e.lineOf("applies_because"), id, "applies_because must cite the document (\"A75, Implementation: ...\")")
	}
}
