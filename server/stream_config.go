package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/internal/sublist"
)

// RetentionPolicy decides when messages are removed.
type RetentionPolicy int

const (
	LimitsPolicy RetentionPolicy = iota
	InterestPolicy
	WorkQueuePolicy
)

// DiscardPolicy decides what a full stream does with a new message.
type DiscardPolicy int

const (
	DiscardOld DiscardPolicy = iota
	DiscardNew
)

// StoreCompression selects block compression in the file store.
type StoreCompression uint8

const (
	NoCompression StoreCompression = iota
	S2Compression
)

var (
	retentionNames   = []string{"limits", "interest", "workqueue"}
	discardNames     = []string{"old", "new"}
	compressionNames = []string{"none", "s2"}
)

func marshalEnum(names []string, v int) ([]byte, error) {
	if v < 0 || v >= len(names) {
		return nil, fmt.Errorf("can not marshal %d", v)
	}
	return json.Marshal(names[v])
}

func unmarshalEnum(names []string, data []byte, what string) (int, error) {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return 0, err
	}
	for i, n := range names {
		if strings.EqualFold(n, s) {
			return i, nil
		}
	}
	if what == "compression" && s == "" {
		return 0, nil
	}
	return 0, fmt.Errorf("can not unmarshal %q", s)
}

func (r RetentionPolicy) MarshalJSON() ([]byte, error) { return marshalEnum(retentionNames, int(r)) }
func (r *RetentionPolicy) UnmarshalJSON(b []byte) error {
	v, err := unmarshalEnum(retentionNames, b, "retention")
	*r = RetentionPolicy(v)
	return err
}
func (d DiscardPolicy) MarshalJSON() ([]byte, error) { return marshalEnum(discardNames, int(d)) }
func (d *DiscardPolicy) UnmarshalJSON(b []byte) error {
	v, err := unmarshalEnum(discardNames, b, "discard")
	*d = DiscardPolicy(v)
	return err
}
func (c StoreCompression) MarshalJSON() ([]byte, error) { return marshalEnum(compressionNames, int(c)) }
func (c *StoreCompression) UnmarshalJSON(b []byte) error {
	v, err := unmarshalEnum(compressionNames, b, "compression")
	*c = StoreCompression(v)
	return err
}

// Placement asks for servers by cluster and tags.
type Placement struct {
	Cluster   string   `json:"cluster,omitempty"`
	Tags      []string `json:"tags,omitempty"`
	Preferred string   `json:"preferred,omitempty"`
}

// StreamSource is a mirror or source definition.
type StreamSource struct {
	Name          string     `json:"name"`
	OptStartSeq   uint64     `json:"opt_start_seq,omitempty"`
	OptStartTime  *time.Time `json:"opt_start_time,omitempty"`
	FilterSubject string     `json:"filter_subject,omitempty"`
}

// SubjectTransformConfig maps subjects.
type SubjectTransformConfig struct {
	Source      string `json:"src"`
	Destination string `json:"dest"`
}

// RePublish republishes stored messages.
type RePublish struct {
	Source      string `json:"src,omitempty"`
	Destination string `json:"dest"`
	HeadersOnly bool   `json:"headers_only,omitempty"`
}

// StreamConsumerLimits are defaults for consumers of the stream.
type StreamConsumerLimits struct {
	InactiveThreshold time.Duration `json:"inactive_threshold,omitempty"`
	MaxAckPending     int           `json:"max_ack_pending,omitempty"`
}

// StreamConfig is a stream's configuration, with nats-server's JSON names.
type StreamConfig struct {
	Name             string                  `json:"name"`
	Description      string                  `json:"description,omitempty"`
	Subjects         []string                `json:"subjects,omitempty"`
	Retention        RetentionPolicy         `json:"retention"`
	MaxConsumers     int                     `json:"max_consumers"`
	MaxMsgs          int64                   `json:"max_msgs"`
	MaxBytes         int64                   `json:"max_bytes"`
	MaxAge           time.Duration           `json:"max_age"`
	MaxMsgsPer       int64                   `json:"max_msgs_per_subject"`
	MaxMsgSize       int32                   `json:"max_msg_size,omitempty"`
	Discard          DiscardPolicy           `json:"discard"`
	Storage          StorageType             `json:"storage"`
	Replicas         int                     `json:"num_replicas"`
	NoAck            bool                    `json:"no_ack,omitempty"`
	Duplicates       time.Duration           `json:"duplicate_window,omitempty"`
	Placement        *Placement              `json:"placement,omitempty"`
	Mirror           *StreamSource           `json:"mirror,omitempty"`
	Sources          []*StreamSource         `json:"sources,omitempty"`
	Compression      StoreCompression        `json:"compression"`
	FirstSeq         uint64                  `json:"first_seq,omitempty"`
	SubjectTransform *SubjectTransformConfig `json:"subject_transform,omitempty"`
	RePublish        *RePublish              `json:"republish,omitempty"`
	AllowDirect      bool                    `json:"allow_direct"`
	MirrorDirect     bool                    `json:"mirror_direct"`
	DiscardNewPer    bool                    `json:"discard_new_per_subject,omitempty"`
	Sealed           bool                    `json:"sealed"`
	DenyDelete       bool                    `json:"deny_delete"`
	DenyPurge        bool                    `json:"deny_purge"`
	AllowRollup      bool                    `json:"allow_rollup_hdrs"`
	ConsumerLimits   StreamConsumerLimits    `json:"consumer_limits"`
	Metadata         map[string]string       `json:"metadata,omitempty"`
	AllowMsgTTL      bool                    `json:"allow_msg_ttl"`
}

const (
	defaultDuplicateWindow = 2 * time.Minute
	maxStreamNameLen       = 255
	streamMaxReplicas      = 5
)

// validStreamName reports whether name can name a stream.
func validStreamName(name string) bool {
	if name == "" || len(name) > maxStreamNameLen {
		return false
	}
	return !strings.ContainsAny(name, ".*> \t\r\n\f/\\")
}

// normalize applies nats-server's defaults so the echoed config is what a
// client comparing configs expects.
func (cfg *StreamConfig) normalize() {
	for _, p := range []*int64{&cfg.MaxMsgs, &cfg.MaxBytes, &cfg.MaxMsgsPer} {
		if *p == 0 {
			*p = -1
		}
	}
	if cfg.MaxConsumers == 0 {
		cfg.MaxConsumers = -1
	}
	if cfg.MaxMsgSize == 0 {
		cfg.MaxMsgSize = -1
	}
	if cfg.Replicas == 0 {
		cfg.Replicas = 1
	}
	if cfg.Duplicates == 0 && cfg.Mirror == nil {
		cfg.Duplicates = defaultDuplicateWindow
		if cfg.MaxAge > 0 && cfg.MaxAge < cfg.Duplicates {
			cfg.Duplicates = cfg.MaxAge
		}
	}
	if len(cfg.Subjects) == 0 && cfg.Mirror == nil && len(cfg.Sources) == 0 {
		cfg.Subjects = []string{cfg.Name}
	}
}

// check validates a normalized config.
func (cfg *StreamConfig) check() *ApiError {
	bad := func(format string, a ...any) *ApiError { return errStreamInvalidConfig(fmt.Sprintf(format, a...)) }
	switch {
	case !validStreamName(cfg.Name):
		return bad("invalid stream name - stream name can not contain '.', '*', '>' or whitespace")
	case cfg.Replicas < 1 || cfg.Replicas > streamMaxReplicas:
		return bad("replicas > %d not supported", streamMaxReplicas)
	case cfg.MaxAge < 0:
		return bad("max age needs to be >= 0")
	case cfg.Duplicates < 0:
		return bad("duplicates window can not be negative")
	case cfg.MaxAge > 0 && cfg.Duplicates > cfg.MaxAge:
		return bad("duplicates window can not be larger then max age")
	case cfg.MaxMsgs < -1 || cfg.MaxBytes < -1 || cfg.MaxMsgsPer < -1 || cfg.MaxMsgSize < -1:
		return bad("stream limits can not be less than -1")
	case cfg.DiscardNewPer && (cfg.Discard != DiscardNew || cfg.MaxMsgsPer <= 0):
		return bad("discard new per subject requires discard new policy and max msgs per subject to be set")
	case cfg.Mirror != nil || len(cfg.Sources) > 0:
		return errNotImplemented("mirrors and sources")
	case cfg.SubjectTransform != nil || cfg.RePublish != nil:
		return errNotImplemented("subject transforms and republish")
	case cfg.AllowMsgTTL:
		return errNotImplemented("per-message TTL")
	}
	if !cfg.NoAck {
		for _, s := range cfg.Subjects {
			if sublist.SubjectsCollide(s, "$JS.API.>") {
				return bad("subjects that overlap with jetstream api require no-ack to be true")
			}
		}
	}
	return checkSubjects(cfg.Subjects)
}

// sameConfig compares configs the way idempotent create needs.
func sameConfig(a, b *StreamConfig) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// checkUpdate validates changing old into nw.
func checkUpdate(old, nw *StreamConfig) *ApiError {
	switch {
	case old.Storage != nw.Storage:
		return errStreamInvalidConfig("stream configuration update can not change storage type")
	case old.Replicas != nw.Replicas:
		return errReplicasNotUpdatable()
	case old.Retention != nw.Retention && (old.Retention == WorkQueuePolicy || nw.Retention == WorkQueuePolicy):
		return errStreamInvalidConfig("stream configuration update can not change retention policy to/from workqueue")
	case old.Sealed && !nw.Sealed:
		return errStreamInvalidConfig("stream configuration update can not unseal a sealed stream")
	case old.DenyDelete && !nw.DenyDelete:
		return errStreamInvalidConfig("stream configuration update can not cancel deny message deletes")
	case old.DenyPurge && !nw.DenyPurge:
		return errStreamInvalidConfig("stream configuration update can not cancel deny purge")
	case old.FirstSeq != nw.FirstSeq && nw.FirstSeq != 0:
		return errStreamInvalidConfig("stream configuration update can not change first sequence")
	}
	return nil
}
