package lockorder

import "testing"

// Every class has a name and its place in the list as its rank.
func TestClassTable(t *testing.T) {
	for c := cNone + 1; c < numClasses; c++ {
		if classes[c].name == "" || classes[c].rank != int(c) {
			t.Errorf("class %d: %+v", c, classes[c])
		}
	}
}
