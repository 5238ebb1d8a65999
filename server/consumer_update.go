package server

import (
	"reflect"
	"time"
)

// checkConsumerUpdate says whether an existing consumer's config may
// become ncfg: what defines the consumer's position in the stream and its
// delivery mode is fixed. bound reports whether the old deliver subject
// still has interest (a bound push consumer keeps its subject).
func checkConsumerUpdate(old, ncfg *ConsumerConfig, bound bool) *ApiError {
	if reflect.DeepEqual(old, ncfg) {
		return nil
	}
	if msg := fixedConsumerField(old, ncfg); msg != "" {
		return errConsumerCreate(msg)
	}
	if old.DeliverSubject != ncfg.DeliverSubject {
		switch {
		case old.DeliverSubject == "":
			return errConsumerCreate("can not update pull consumer to push based")
		case ncfg.DeliverSubject == "":
			return errConsumerCreate("can not update push consumer to pull based")
		case bound:
			return errConsumerNameExist()
		}
	}
	if old.MaxWaiting != ncfg.MaxWaiting {
		return errConsumerCreate("max waiting can not be updated")
	}
	if n := len(ncfg.BackOff); n > 0 && ncfg.MaxDeliver != -1 && n > ncfg.MaxDeliver {
		return errConsumerMaxDeliverBackoff()
	}
	return nil
}

// fixedConsumerField names the first field that may not change and did.
func fixedConsumerField(old, ncfg *ConsumerConfig) string {
	switch {
	case old.DeliverPolicy != ncfg.DeliverPolicy:
		return "deliver policy can not be updated"
	case old.MemoryStorage != ncfg.MemoryStorage:
		return "storage type can not be updated"
	case old.Direct != ncfg.Direct:
		return "direct can not be updated"
	case old.Sourcing != ncfg.Sourcing:
		return "sourcing can not be updated"
	case old.OptStartSeq != ncfg.OptStartSeq:
		return "start sequence can not be updated"
	case !sameOptionalTime(old.OptStartTime, ncfg.OptStartTime):
		return "start time can not be updated"
	case old.AckPolicy != ncfg.AckPolicy:
		return "ack policy can not be updated"
	case old.ReplayPolicy != ncfg.ReplayPolicy:
		return "replay policy can not be updated"
	case old.Heartbeat != ncfg.Heartbeat:
		return "heart beats can not be updated"
	case old.FlowControl != ncfg.FlowControl:
		return "flow control can not be updated"
	}
	return ""
}

// sameOptionalTime: both unset, or both set to the same instant.
func sameOptionalTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Equal(*b)
}
