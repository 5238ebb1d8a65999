package server

import "testing"

func TestParseConsumerCreateSubject(t *testing.T) {
	tests := []struct {
		subject string
		ok      bool
		want    consumerCreateSubject
	}{
		{"CONSUMER.CREATE.S", true, consumerCreateSubject{Kind: ccLegacyEphemeral, Stream: "S"}},
		{"CONSUMER.CREATE.S.c", true, consumerCreateSubject{Kind: ccNamed, Stream: "S", Consumer: "c"}},
		{"CONSUMER.CREATE.S.c.f", true, consumerCreateSubject{Kind: ccNamed, Stream: "S", Consumer: "c", Filter: "f"}},
		{"CONSUMER.CREATE.S.c.a.*.>", true, consumerCreateSubject{Kind: ccNamed, Stream: "S", Consumer: "c", Filter: "a.*.>"}},
		{"CONSUMER.DURABLE.CREATE.S.d", true, consumerCreateSubject{Kind: ccLegacyDurable, Stream: "S", Consumer: "d"}},
		{"CONSUMER.DURABLE.CREATE.S", false, consumerCreateSubject{}},
		{"CONSUMER.DURABLE.CREATE.S.d.x", false, consumerCreateSubject{}},
		{"CONSUMER.CREATE", false, consumerCreateSubject{}},
		{"STREAM.CREATE.S", false, consumerCreateSubject{}},
	}
	for _, tc := range tests {
		got, ok := parseConsumerCreateSubject(tc.subject)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("%s: got %+v %v, want %+v %v", tc.subject, got, ok, tc.want, tc.ok)
		}
	}
}

func TestCreateConsumerName(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		n := createConsumerName()
		if !ccGeneratedName.MatchString(n) || !isValidAssetName(n) {
			t.Fatalf("bad generated name %q", n)
		}
		seen[n] = true
	}
	if len(seen) < 999 {
		t.Fatalf("only %d distinct names in 1000", len(seen))
	}
	// SHA-256 bytes mod 62 onto the base-62 digits (values computed
	// independently with Python's hashlib).
	for in, want := range map[string]string{"": "fqA4S4SK", "nats-server": "ZAwbPm7a"} {
		if got := hashName(in, 8); got != want {
			t.Fatalf("hashName(%q) = %q, want %q", in, got, want)
		}
	}
}

// A generated name already taken by another consumer of the stream is
// drawn again.
func TestGeneratedNameAvoidsTaken(t *testing.T) {
	names := []string{"AAAAAAAA", "AAAAAAAA", "BBBBBBBB"}
	st := &consumerCreateState{
		Stream: &StreamConfig{Name: "L", Subjects: []string{"L.>"}, Replicas: 1},
		Others: []*ConsumerConfig{{Name: "AAAAAAAA"}},
		NewName: func() string {
			n := names[0]
			names = names[1:]
			return n
		},
	}
	_, name, err := decideConsumerCreate(st, &CreateConsumerRequest{Stream: "L"})
	if err != nil || name != "BBBBBBBB" {
		t.Fatalf("got %q %v", name, err)
	}
}
