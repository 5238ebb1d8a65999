package server

import (
	"encoding/json"
	"fmt"
)

// The consumer enums of the JetStream API. Their JSON spellings are exact
// (case-sensitive), as nats-server reads them, and each type's unmarshal
// error text is nats-server's, since clients see it inside error 10025.

// DeliverPolicy selects the first message a consumer delivers.
type DeliverPolicy int

const (
	DeliverAll DeliverPolicy = iota
	DeliverLast
	DeliverNew
	DeliverByStartSequence
	DeliverByStartTime
	DeliverLastPerSubject
)

// AckPolicy says how delivered messages are acknowledged.
type AckPolicy int

const (
	AckNone AckPolicy = iota
	AckAll
	AckExplicit
	// AckFlowControl acks by answering flow control (push consumers only).
	AckFlowControl
)

// ReplayPolicy says how fast stored messages are replayed.
type ReplayPolicy int

const (
	ReplayInstant ReplayPolicy = iota
	ReplayOriginal
)

// PriorityPolicy says how pull requests of priority groups are served.
type PriorityPolicy int

const (
	PriorityNone PriorityPolicy = iota
	PriorityOverflow
	PriorityPinnedClient
	PriorityPrioritized
)

// ConsumerAction is what a CONSUMER.CREATE request may do.
type ConsumerAction int

const (
	ActionCreateOrUpdate ConsumerAction = iota
	ActionUpdate
	ActionCreate
)

var (
	deliverPolicyNames  = []string{"all", "last", "new", "by_start_sequence", "by_start_time", "last_per_subject"}
	ackPolicyNames      = []string{"none", "all", "explicit", "flow_control"}
	replayPolicyNames   = []string{"instant", "original"}
	priorityPolicyNames = []string{"none", "overflow", "pinned_client", "prioritized"}
	consumerActionNames = []string{"", "update", "create"}
)

// enumIndex finds the quoted JSON string data among names (exact match).
func enumIndex(names []string, data []byte) (int, bool) {
	if len(data) < 2 || data[0] != '"' || data[len(data)-1] != '"' {
		return 0, false
	}
	s := string(data[1 : len(data)-1])
	for i, n := range names {
		if n == s {
			return i, true
		}
	}
	return 0, false
}

func enumName(names []string, v int) (string, bool) {
	if v < 0 || v >= len(names) {
		return "", false
	}
	return names[v], true
}

func (p DeliverPolicy) String() string {
	if n, ok := enumName(deliverPolicyNames, int(p)); ok {
		return n
	}
	return "undefined"
}

// MarshalJSON never fails: an unknown policy is "undefined", as upstream.
func (p DeliverPolicy) MarshalJSON() ([]byte, error) { return json.Marshal(p.String()) }

// UnmarshalJSON accepts "undefined" as "all", as upstream does.
func (p *DeliverPolicy) UnmarshalJSON(data []byte) error {
	if string(data) == `"undefined"` {
		*p = DeliverAll
		return nil
	}
	i, ok := enumIndex(deliverPolicyNames, data)
	if !ok {
		return fmt.Errorf("can not unmarshal %q", data)
	}
	*p = DeliverPolicy(i)
	return nil
}

func (a AckPolicy) String() string {
	if n, ok := enumName(ackPolicyNames, int(a)); ok {
		return n
	}
	return "explicit"
}

func (a AckPolicy) MarshalJSON() ([]byte, error) {
	if n, ok := enumName(ackPolicyNames, int(a)); ok {
		return json.Marshal(n)
	}
	return nil, fmt.Errorf("can not marshal %v", a)
}

func (a *AckPolicy) UnmarshalJSON(data []byte) error {
	i, ok := enumIndex(ackPolicyNames, data)
	if !ok {
		return fmt.Errorf("can not unmarshal %q", data)
	}
	*a = AckPolicy(i)
	return nil
}

func (r ReplayPolicy) String() string {
	if r == ReplayInstant {
		return "instant"
	}
	return "original"
}

func (r ReplayPolicy) MarshalJSON() ([]byte, error) {
	if n, ok := enumName(replayPolicyNames, int(r)); ok {
		return json.Marshal(n)
	}
	return nil, fmt.Errorf("can not marshal %v", r)
}

func (r *ReplayPolicy) UnmarshalJSON(data []byte) error {
	i, ok := enumIndex(replayPolicyNames, data)
	if !ok {
		return fmt.Errorf("can not unmarshal %q", data)
	}
	*r = ReplayPolicy(i)
	return nil
}

func (p PriorityPolicy) String() string {
	n, ok := enumName(priorityPolicyNames, int(p))
	if !ok {
		n = "none"
	}
	return `"` + n + `"`
}

func (p PriorityPolicy) MarshalJSON() ([]byte, error) {
	if n, ok := enumName(priorityPolicyNames, int(p)); ok {
		return json.Marshal(n)
	}
	return nil, fmt.Errorf("unknown priority policy: %v", int(p))
}

func (p *PriorityPolicy) UnmarshalJSON(data []byte) error {
	i, ok := enumIndex(priorityPolicyNames, data)
	if !ok {
		return fmt.Errorf("unknown priority policy: %v", string(data))
	}
	*p = PriorityPolicy(i)
	return nil
}

func (a ConsumerAction) String() string {
	n, ok := enumName(consumerActionNames, int(a))
	if !ok {
		n = ""
	}
	return `"` + n + `"`
}

func (a ConsumerAction) MarshalJSON() ([]byte, error) {
	if n, ok := enumName(consumerActionNames, int(a)); ok {
		return json.Marshal(n)
	}
	return nil, fmt.Errorf("can not marshal %v", int(a))
}

func (a *ConsumerAction) UnmarshalJSON(data []byte) error {
	i, ok := enumIndex(consumerActionNames, data)
	if !ok {
		return fmt.Errorf("unknown consumer action: %v", string(data))
	}
	*a = ConsumerAction(i)
	return nil
}
