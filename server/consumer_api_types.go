package server

import "time"

// The JSON of the $JS.API.CONSUMER.* requests and responses, with
// nats-server's names, omitempty rules and response types.

// SequenceInfo is a consumer and stream sequence pair with the last activity.
type SequenceInfo struct {
	Consumer uint64     `json:"consumer_seq"`
	Stream   uint64     `json:"stream_seq"`
	Last     *time.Time `json:"last_active,omitempty"`
}

// PriorityGroupState is one priority group's pin in ConsumerInfo.
type PriorityGroupState struct {
	Group          string    `json:"group"`
	PinnedClientID string    `json:"pinned_client_id,omitempty"`
	PinnedTS       time.Time `json:"pinned_ts,omitempty"`
}

// ConsumerInfo is what CONSUMER.CREATE, INFO and LIST report of a consumer.
type ConsumerInfo struct {
	Stream         string               `json:"stream_name"`
	Name           string               `json:"name"`
	Created        time.Time            `json:"created"`
	Config         *ConsumerConfig      `json:"config,omitempty"`
	Delivered      SequenceInfo         `json:"delivered"`
	AckFloor       SequenceInfo         `json:"ack_floor"`
	NumAckPending  int                  `json:"num_ack_pending"`
	NumRedelivered int                  `json:"num_redelivered"`
	NumWaiting     int                  `json:"num_waiting"`
	NumPending     uint64               `json:"num_pending"`
	Cluster        *ClusterInfo         `json:"cluster,omitempty"`
	PushBound      bool                 `json:"push_bound,omitempty"`
	Paused         bool                 `json:"paused,omitempty"`
	PauseRemaining time.Duration        `json:"pause_remaining,omitempty"`
	TimeStamp      time.Time            `json:"ts"`
	PriorityGroups []PriorityGroupState `json:"priority_groups,omitempty"`
}

// CreateConsumerRequest is the body of CONSUMER.CREATE and DURABLE.CREATE.
type CreateConsumerRequest struct {
	Stream   string         `json:"stream_name"`
	Config   ConsumerConfig `json:"config"`
	Action   ConsumerAction `json:"action"`
	Pedantic bool           `json:"pedantic,omitempty"`
}

// PriorityGroup is the priority part of a pull request.
type PriorityGroup struct {
	Group         string `json:"group,omitempty"`
	MinPending    int64  `json:"min_pending,omitempty"`
	MinAckPending int64  `json:"min_ack_pending,omitempty"`
	Id            string `json:"id,omitempty"`
	Priority      int    `json:"priority,omitempty"`
}

// JSApiConsumerGetNextRequest is a pull request (CONSUMER.MSG.NEXT body).
type JSApiConsumerGetNextRequest struct {
	Expires   time.Duration `json:"expires,omitempty"`
	Batch     int           `json:"batch,omitempty"`
	MaxBytes  int           `json:"max_bytes,omitempty"`
	NoWait    bool          `json:"no_wait,omitempty"`
	Heartbeat time.Duration `json:"idle_heartbeat,omitempty"`
	PriorityGroup
}

// JSApiConsumersRequest pages CONSUMER.NAMES and CONSUMER.LIST.
type JSApiConsumersRequest struct {
	Offset int `json:"offset"`
}

// JSApiConsumerPauseRequest is the CONSUMER.PAUSE body; a zero time resumes.
type JSApiConsumerPauseRequest struct {
	PauseUntil time.Time `json:"pause_until,omitempty"`
}

// JSApiConsumerUnpinRequest is the CONSUMER.UNPIN body.
type JSApiConsumerUnpinRequest struct {
	Group string `json:"group"`
}

// The response types' names after apiTypePrefix.
const (
	consumerCreateResponseType   = "consumer_create_response"
	consumerInfoResponseType     = "consumer_info_response"
	consumerDeleteResponseType   = "consumer_delete_response"
	consumerNamesResponseType    = "consumer_names_response"
	consumerListResponseType     = "consumer_list_response"
	consumerPauseResponseType    = "consumer_pause_response"
	consumerUnpinResponseType    = "consumer_unpin_response"
	consumerStepdownResponseType = "consumer_leader_stepdown_response"
)

// JSApiConsumerCreateResponse answers CONSUMER.CREATE (and INFO has the same shape).
type JSApiConsumerCreateResponse struct {
	apiResponse
	*ConsumerInfo
}

// JSApiConsumerInfoResponse answers CONSUMER.INFO.
type JSApiConsumerInfoResponse struct {
	apiResponse
	*ConsumerInfo
}

// JSApiConsumerDeleteResponse answers CONSUMER.DELETE.
type JSApiConsumerDeleteResponse struct {
	apiResponse
	Success bool `json:"success,omitempty"`
}

// JSApiConsumerNamesResponse answers CONSUMER.NAMES (paged).
type JSApiConsumerNamesResponse struct {
	apiResponse
	apiPaged
	Consumers []string `json:"consumers"`
}

// JSApiConsumerListResponse answers CONSUMER.LIST (paged).
type JSApiConsumerListResponse struct {
	apiResponse
	apiPaged
	Consumers []*ConsumerInfo   `json:"consumers"`
	Missing   []string          `json:"missing,omitempty"`
	Offline   map[string]string `json:"offline,omitempty"`
}

// JSApiConsumerPauseResponse answers CONSUMER.PAUSE.
type JSApiConsumerPauseResponse struct {
	apiResponse
	Paused         bool          `json:"paused"`
	PauseUntil     time.Time     `json:"pause_until"`
	PauseRemaining time.Duration `json:"pause_remaining,omitempty"`
}

// JSApiConsumerUnpinResponse answers CONSUMER.UNPIN.
type JSApiConsumerUnpinResponse struct {
	apiResponse
}

// JSApiConsumerLeaderStepDownResponse answers CONSUMER.LEADER.STEPDOWN.
type JSApiConsumerLeaderStepDownResponse struct {
	apiResponse
	Success bool `json:"success,omitempty"`
}
