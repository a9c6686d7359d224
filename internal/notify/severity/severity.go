// Package severity is the severity of an incident (notify.Severity) and its
// parser, Parse: the one list of severities, used by notify and its
// notifiers and by config to validate `severity:` maps. It is a leaf: it
// imports no other internal package.
package severity

import "fmt"

// Severity of an incident, highest first. OpsGenie maps it to P1..P5.
type Severity string

// Severities.
const (
	Critical Severity = "critical"
	High     Severity = "high"
	Moderate Severity = "moderate"
	Low      Severity = "low"
	Info     Severity = "info"
)

// Parse validates s.
func Parse(s string) (Severity, error) {
	switch v := Severity(s); v {
	case Critical, High, Moderate, Low, Info:
		return v, nil
	}
	return "", fmt.Errorf("unknown severity %q (use critical, high, moderate, low or info)", s)
}

// order is every severity, lowest first.
var order = []Severity{Info, Low, Moderate, High, Critical}

// Rank orders severities: info 0, low 1, moderate 2, high 3, critical 4;
// an unknown severity is -1.
func (s Severity) Rank() int {
	for i, o := range order {
		if o == s {
			return i
		}
	}
	return -1
}

// AtLeast reports whether s is floor or higher; every severity is at least
// the empty one.
func (s Severity) AtLeast(floor Severity) bool {
	return floor == "" || s.Rank() >= floor.Rank()
}
