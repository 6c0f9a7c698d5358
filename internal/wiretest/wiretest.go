// Package wiretest helps tests compare API objects with their decoded wire
// form.
package wiretest

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Times truncates the metav1.Time fields of m to whole seconds, what their
// RFC 3339 wire form keeps. It reports false for a time whose year in UTC is
// outside 0000 to 9999, which metav1.Time marshals but cannot decode again
// (a property of k8s.io/apimachinery).
func Times(m *metav1.ObjectMeta) bool {
	ok := true
	fix := func(t *metav1.Time) {
		if t == nil || t.IsZero() {
			return
		}
		if y := t.UTC().Year(); y < 0 || y > 9999 {
			ok = false
		}
		t.Time = t.Truncate(time.Second)
	}
	fix(&m.CreationTimestamp)
	fix(m.DeletionTimestamp)
	for i := range m.ManagedFields {
		fix(m.ManagedFields[i].Time)
	}
	return ok
}
