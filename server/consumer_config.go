package server

import (
	"maps"
	"slices"
	"time"
)

// ConsumerConfig is a consumer's configuration with nats-server's JSON
// names and omitempty rules: the normalised config is echoed in every
// CONSUMER.CREATE and CONSUMER.INFO response, and clients compare it.
type ConsumerConfig struct {
	Durable         string          `json:"durable_name,omitempty"`
	Name            string          `json:"name,omitempty"`
	Description     string          `json:"description,omitempty"`
	DeliverPolicy   DeliverPolicy   `json:"deliver_policy"`
	OptStartSeq     uint64          `json:"opt_start_seq,omitempty"`
	OptStartTime    *time.Time      `json:"opt_start_time,omitempty"`
	AckPolicy       AckPolicy       `json:"ack_policy"`
	AckWait         time.Duration   `json:"ack_wait,omitempty"`
	MaxDeliver      int             `json:"max_deliver,omitempty"`
	BackOff         []time.Duration `json:"backoff,omitempty"`
	FilterSubject   string          `json:"filter_subject,omitempty"`
	FilterSubjects  []string        `json:"filter_subjects,omitempty"`
	ReplayPolicy    ReplayPolicy    `json:"replay_policy"`
	RateLimit       uint64          `json:"rate_limit_bps,omitempty"` // bits per second
	SampleFrequency string          `json:"sample_freq,omitempty"`
	MaxWaiting      int             `json:"max_waiting,omitempty"`
	MaxAckPending   int             `json:"max_ack_pending,omitempty"`
	FlowControl     bool            `json:"flow_control,omitempty"`
	HeadersOnly     bool            `json:"headers_only,omitempty"`

	// Pull consumers: limits on each request.
	MaxRequestBatch    int           `json:"max_batch,omitempty"`
	MaxRequestExpires  time.Duration `json:"max_expires,omitempty"`
	MaxRequestMaxBytes int           `json:"max_bytes,omitempty"`

	// Push consumers.
	DeliverSubject string        `json:"deliver_subject,omitempty"`
	DeliverGroup   string        `json:"deliver_group,omitempty"`
	Heartbeat      time.Duration `json:"idle_heartbeat,omitempty"`

	// InactiveThreshold deletes the consumer after this long without interest.
	InactiveThreshold time.Duration `json:"inactive_threshold,omitempty"`

	// Replicas 0 means the stream's; echoed as given.
	Replicas      int  `json:"num_replicas"`
	MemoryStorage bool `json:"mem_storage,omitempty"`

	// Direct and Sourcing mark nats-server's internal mirror/source consumers.
	Direct   bool `json:"direct,omitempty"`
	Sourcing bool `json:"sourcing,omitempty"`

	Metadata   map[string]string `json:"metadata,omitempty"`
	PauseUntil *time.Time        `json:"pause_until,omitempty"`

	PriorityGroups []string       `json:"priority_groups,omitempty"`
	PriorityPolicy PriorityPolicy `json:"priority_policy,omitempty"`
	PinnedTTL      time.Duration  `json:"priority_timeout,omitempty"`
}

// Consumer defaults and limits, nats-server's values.
const (
	JsAckWaitDefault        = 30 * time.Second
	JsDeleteWaitTimeDefault = 5 * time.Second // ephemeral inactive_threshold
	JsDefaultMaxAckPending  = 1000
	JsDefaultPinnedTTL      = 2 * time.Minute
	JSWaitQueueDefaultMax   = 512 // pull max_waiting
	JSMaxDescriptionLen     = 4 * 1024
	JSMaxMetadataLen        = 128 * 1024
	JSMaxNameLen            = 255
	// ackFlowControlHeartbeat is the heartbeat an AckFlowControl consumer must use.
	ackFlowControlHeartbeat = time.Second
)

// clone is a deep copy.
func (cfg *ConsumerConfig) clone() *ConsumerConfig {
	c := *cfg
	c.BackOff = slices.Clone(cfg.BackOff)
	c.FilterSubjects = slices.Clone(cfg.FilterSubjects)
	c.Metadata = maps.Clone(cfg.Metadata)
	c.PriorityGroups = slices.Clone(cfg.PriorityGroups)
	if cfg.OptStartTime != nil {
		t := *cfg.OptStartTime
		c.OptStartTime = &t
	}
	if cfg.PauseUntil != nil {
		t := *cfg.PauseUntil
		c.PauseUntil = &t
	}
	return &c
}

// isDurableConsumer reports whether cfg names a durable consumer.
func isDurableConsumer(cfg *ConsumerConfig) bool { return cfg != nil && cfg.Durable != "" }

// isPush reports whether the consumer pushes to a deliver subject.
func (cfg *ConsumerConfig) isPush() bool { return cfg.DeliverSubject != "" }

// filters is the consumer's filter subjects, one list for both fields.
func (cfg *ConsumerConfig) filters() []string {
	return gatherSubjectFilters(cfg.FilterSubject, cfg.FilterSubjects)
}

func gatherSubjectFilters(filter string, filters []string) []string {
	if filter != "" {
		return append(slices.Clone(filters), filter)
	}
	return filters
}

// replicas is the consumer's effective replica count on a stream: 0 or
// more than the stream's means the stream's, except that an ephemeral
// that asked for none runs on one replica of a limits stream.
func (cfg *ConsumerConfig) replicas(scfg *StreamConfig) int {
	if cfg.Replicas != 0 && cfg.Replicas <= scfg.Replicas {
		return cfg.Replicas
	}
	if !isDurableConsumer(cfg) && scfg.Retention == LimitsPolicy && cfg.Replicas == 0 {
		return 1
	}
	return scfg.Replicas
}
