package drill

import (
	"encoding/xml"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/stampede-dev/stampede/internal/redact"
	"github.com/stampede-dev/stampede/results/folder"
	"github.com/stampede-dev/stampede/results/summary"
	"github.com/stampede-dev/stampede/spec"
)

// JUnit XML as common CI systems read it (Jenkins, GitLab, GitHub
// actions' reporters): one <testsuite> with one <testcase> per SLO
// (classname "stampede.drill.slo") and per check (classname
// "stampede.drill.check": the deploy command, the outage), and a
// <failure> in each that did not hold. An incomplete or interrupted run
// adds a failing testcase "run".

// JUnitSuites is the document's root.
type JUnitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Time     float64      `xml:"time,attr"`
	Suites   []JUnitSuite `xml:"testsuite"`
}

// JUnitSuite is the drill's suite.
type JUnitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Time       float64         `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Properties []JUnitProperty `xml:"properties>property,omitempty"`
	Cases      []JUnitCase     `xml:"testcase"`
}

// JUnitProperty is a name and value of the suite.
type JUnitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

// JUnitCase is one gate.
type JUnitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Time      float64       `xml:"time,attr"`
	Failure   *JUnitFailure `xml:"failure,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

// JUnitFailure marks a gate that did not hold.
type JUnitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// JUnitOf builds the JUnit document of a drill's summary; target is the
// URL, already redacted.
func JUnitOf(s *summary.Summary, target string, at time.Time) JUnitSuites {
	suite := JUnitSuite{Name: "stampede drill", Time: s.DurationS,
		Properties: []JUnitProperty{{"run_id", s.RunID}, {"target", target}, {"clients", fmt.Sprint(s.Clients)}}}
	if !at.IsZero() {
		suite.Timestamp = at.UTC().Format("2006-01-02T15:04:05")
	}
	add := func(c JUnitCase, fail bool, msg, typ string) {
		if fail {
			c.Failure = &JUnitFailure{Message: msg, Type: typ, Text: msg}
			suite.Failures++
		}
		suite.Cases = append(suite.Cases, c)
		suite.Tests++
	}
	for _, r := range s.SLO {
		add(JUnitCase{Name: "slo " + r.Expr, ClassName: "stampede.drill.slo", SystemOut: r.Line()}, !r.Pass, r.Line(), "slo")
	}
	for _, c := range s.Checks {
		add(JUnitCase{Name: c.Name, ClassName: "stampede.drill.check", SystemOut: c.Line()}, !c.Pass, c.Line(), "check")
	}
	if !s.Complete || s.Interrupted {
		msg := "the run is incomplete: a process crashed or an agent was lost"
		if s.Interrupted {
			msg = fmt.Sprintf("the run was interrupted after %.3fs", s.DurationS)
		}
		add(JUnitCase{Name: "run", ClassName: "stampede.drill.run"}, true, msg, "run")
	}
	return JUnitSuites{Name: "stampede drill", Tests: suite.Tests, Failures: suite.Failures, Time: suite.Time, Suites: []JUnitSuite{suite}}
}

// Redacted returns doc with the secrets p names hidden in every text of
// it (redact.Policy.String): a check's line may quote what a deploy
// command printed, an SLO's what the target said.
func (doc JUnitSuites) Redacted(p redact.Policy) JUnitSuites {
	suites := make([]JUnitSuite, len(doc.Suites))
	for i, s := range doc.Suites {
		s.Properties = slices.Clone(s.Properties)
		for j := range s.Properties {
			s.Properties[j].Value = p.String(s.Properties[j].Value)
		}
		s.Cases = slices.Clone(s.Cases)
		for j := range s.Cases {
			c := &s.Cases[j]
			c.Name, c.SystemOut = p.String(c.Name), p.String(c.SystemOut)
			if c.Failure != nil {
				f := *c.Failure
				f.Message, f.Text = p.String(f.Message), p.String(f.Text)
				c.Failure = &f
			}
		}
		suites[i] = s
	}
	doc.Suites = suites
	return doc
}

// WriteJUnit writes doc as an XML file at path, as a results folder's
// files are written (folder.WriteFile).
func WriteJUnit(path string, doc JUnitSuites) error {
	if err := folder.WriteFile(path, func(w io.Writer) error { return EncodeJUnit(w, doc) }); err != nil {
		return spec.Errorf("Drill.JUnit", "%w", err)
	}
	return nil
}

// EncodeJUnit writes doc as indented XML with its header.
func EncodeJUnit(w io.Writer, doc JUnitSuites) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
