package server

import (
	"fmt"
	"time"
)

// The consumer API's errors, with nats-server's status, code and text.

func errConsumerCreate(msg string) *ApiError { return apiErr(500, 10012, msg) }
func errConsumerNameExist() *ApiError        { return apiErr(400, 10013, "consumer name already in use") }
func errConsumerNotFound() *ApiError         { return apiErr(404, 10014, "consumer not found") }
func errConsumerDurableNotInSubject() *ApiError {
	return apiErr(400, 10016, "consumer expected to be durable but no durable name set in subject")
}
func errConsumerDurableNameMismatch() *ApiError {
	return apiErr(400, 10017, "consumer name in subject does not match durable name in request")
}
func errConsumerDurableNameNotSet() *ApiError {
	return apiErr(400, 10018, "consumer expected to be durable but a durable name was not set")
}
func errConsumerEphemeralWithDurable() *ApiError {
	return apiErr(400, 10020, "consumer expected to be ephemeral but a durable name was set in request")
}
func errMaxConsumers() *ApiError { return apiErr(400, 10026, "maximum consumers limit reached") }
func errConsumerConfigRequired() *ApiError {
	return apiErr(400, 10078, "consumer config required")
}
func errConsumerDeliverToWildcards() *ApiError {
	return apiErr(400, 10079, "consumer deliver subject has wildcards")
}
func errConsumerPushMaxWaiting() *ApiError {
	return apiErr(400, 10080, "consumer in push mode can not set max waiting")
}
func errConsumerDeliverCycle() *ApiError {
	return apiErr(400, 10081, "consumer deliver subject forms a cycle")
}
func errConsumerMaxPendingAckPolicy() *ApiError {
	return apiErr(400, 10082, "consumer requires ack policy for max ack pending")
}
func errConsumerSmallHeartbeat() *ApiError {
	return apiErr(400, 10083, "consumer idle heartbeat needs to be >= 100ms")
}
func errConsumerPullRequiresAck() *ApiError {
	return apiErr(400, 10084, "consumer in pull mode requires explicit ack policy on workqueue stream")
}
func errConsumerPullWithRateLimit() *ApiError {
	return apiErr(400, 10086, "consumer in pull mode can not have rate limit set")
}
func errConsumerMaxWaitingNegative() *ApiError {
	return apiErr(400, 10087, "consumer max waiting needs to be positive")
}
func errConsumerHBRequiresPush() *ApiError {
	return apiErr(400, 10088, "consumer idle heartbeat requires a push based consumer")
}
func errConsumerFCRequiresPush() *ApiError {
	return apiErr(400, 10089, "consumer flow control requires a push based consumer")
}
func errConsumerDirectRequiresPush() *ApiError {
	return apiErr(400, 10090, "consumer direct requires a push based consumer")
}
func errConsumerDirectRequiresEphemeral() *ApiError {
	return apiErr(400, 10091, "consumer direct requires an ephemeral consumer")
}
func errConsumerInvalidPolicy(msg string) *ApiError { return apiErr(400, 10094, msg) }
func errConsumerInvalidSampling(err error) *ApiError {
	return apiErr(400, 10095, "failed to parse consumer sampling configuration: "+fmt.Sprint(err))
}
func errConsumerWQRequiresExplicitAck() *ApiError {
	return apiErr(400, 10098, "workqueue stream requires explicit ack")
}
func errConsumerWQMultipleUnfiltered() *ApiError {
	return apiErr(400, 10099, "multiple non-filtered consumers not allowed on workqueue stream")
}
func errConsumerWQNotUnique() *ApiError {
	return apiErr(400, 10100, "filtered consumer not unique on workqueue stream")
}
func errConsumerWQNotDeliverAll() *ApiError {
	return apiErr(400, 10101, "consumer must be deliver all on workqueue stream")
}
func errConsumerNameTooLong(max int) *ApiError {
	return apiErr(400, 10102, fmt.Sprintf("consumer name is too long, maximum allowed is %d", max))
}
func errConsumerBadDurableName() *ApiError {
	return apiErr(400, 10103, "durable name can not contain '.', '*', '>'")
}
func errConsumerExistingActive() *ApiError {
	return apiErr(400, 10105, "consumer already exists and is still active")
}
func errConsumerDescriptionTooLong(max int) *ApiError {
	return apiErr(400, 10107, fmt.Sprintf("consumer description is too long, maximum allowed is %d", max))
}
func errConsumerFCNeedsHeartbeats() *ApiError {
	return apiErr(400, 10108, "consumer with flow control also needs heartbeats")
}
func errConsumerInvalidDeliverSubject() *ApiError {
	return apiErr(400, 10112, "invalid push consumer deliver subject")
}
func errConsumerMaxRequestBatchNegative() *ApiError {
	return apiErr(400, 10114, "consumer max request batch needs to be > 0")
}
func errConsumerMaxRequestExpiresTooSmall() *ApiError {
	return apiErr(400, 10115, "consumer max request expires needs to be >= 1ms")
}
func errConsumerMaxDeliverBackoff() *ApiError {
	return apiErr(400, 10116, "max deliver is required to be > length of backoff values")
}
func errConsumerMaxPendingAckExcess(limit int) *ApiError {
	return apiErr(400, 10121, fmt.Sprintf("consumer max ack pending exceeds system limit of %d", limit))
}
func errConsumerMaxRequestBatchExceeded(limit int) *ApiError {
	return apiErr(400, 10125, fmt.Sprintf("consumer max request batch exceeds server limit of %d", limit))
}
func errConsumerReplicasExceedsStream() *ApiError {
	return apiErr(400, 10126, "consumer config replica count exceeds parent stream")
}
func errConsumerNamePathSeparators() *ApiError {
	return apiErr(400, 10127, "Consumer name can not contain path separators")
}
func errConsumerFilterSubjectMismatch() *ApiError {
	return apiErr(400, 10131, "Consumer create request did not match filtered subject from create subject")
}
func errConsumerDurableAndNameMismatch() *ApiError {
	return apiErr(400, 10132, "Consumer Durable and Name have to be equal if both are provided")
}
func errReplicasNegative() *ApiError { return apiErr(400, 10133, "replicas count cannot be negative") }
func errConsumerReplicasMatchStream() *ApiError {
	return apiErr(400, 10134, "consumer config replicas must match interest retention stream's replicas")
}
func errConsumerMetadataLength(limit string) *ApiError {
	return apiErr(400, 10135, "consumer metadata exceeds maximum size of "+limit)
}
func errConsumerDuplicateFilterSubjects() *ApiError {
	return apiErr(400, 10136, "consumer cannot have both FilterSubject and FilterSubjects specified")
}
func errConsumerMultipleFiltersNotAllowed() *ApiError {
	return apiErr(400, 10137, "consumer with multiple subject filters cannot use subject based API")
}
func errConsumerOverlappingFilters() *ApiError {
	return apiErr(400, 10138, "consumer subject filters cannot overlap")
}
func errConsumerEmptyFilter() *ApiError {
	return apiErr(400, 10139, "consumer filter in FilterSubjects cannot be empty")
}
func errConsumerAlreadyExists() *ApiError { return apiErr(400, 10148, "consumer already exists") }
func errConsumerDoesNotExist() *ApiError  { return apiErr(400, 10149, "consumer does not exist") }
func errConsumerInactiveThresholdExcess(limit time.Duration) *ApiError {
	return apiErr(400, 10153, fmt.Sprintf("consumer inactive threshold exceeds system limit of %s", limit))
}
func errConsumerPriorityPolicyWithoutGroup() *ApiError {
	return apiErr(400, 10159, "Setting PriorityPolicy requires at least one PriorityGroup to be set")
}
func errConsumerInvalidPriorityGroup() *ApiError {
	return apiErr(400, 10160, "Provided priority group does not exist for this consumer")
}
func errConsumerEmptyGroupName() *ApiError {
	return apiErr(400, 10161, "Group name cannot be an empty string")
}
func errConsumerInvalidGroupName() *ApiError {
	return apiErr(400, 10162, "Valid priority group name must match A-Z, a-z, 0-9, -_/=)+ and may not exceed 16 characters")
}
func errConsumerPushWithPriorityGroup() *ApiError {
	return apiErr(400, 10178, "priority groups can not be used with push consumers")
}
func errConsumerAckPolicyInvalid() *ApiError {
	return apiErr(400, 10181, "consumer ack policy invalid")
}
func errConsumerReplayPolicyInvalid() *ApiError {
	return apiErr(400, 10182, "consumer replay policy invalid")
}
func errConsumerAckWaitNegative() *ApiError {
	return apiErr(400, 10183, "consumer ack wait needs to be positive")
}
func errConsumerBackOffNegative() *ApiError {
	return apiErr(400, 10184, "consumer backoff needs to be positive")
}
func errConsumerPriorityGroupWithPolicyNone() *ApiError {
	return apiErr(400, 10196, "consumer can not have priority groups when policy is none")
}
func errConsumerPinnedTTLWithoutPriorityPolicy() *ApiError {
	return apiErr(400, 10197, "PinnedTTL cannot be set when PriorityPolicy is none")
}
func errConsumerAckFCRequiresPush() *ApiError {
	return apiErr(400, 10218, "flow control ack policy requires a push based consumer")
}
func errConsumerAckFCRequiresFC() *ApiError {
	return apiErr(400, 10219, "flow control ack policy requires flow control")
}
func errConsumerAckFCRequiresMaxAckPending() *ApiError {
	return apiErr(400, 10220, "flow control ack policy requires max ack pending")
}
func errConsumerAckFCRequiresNoAckWait() *ApiError {
	return apiErr(400, 10221, "flow control ack policy requires unset ack wait")
}
func errConsumerAckFCRequiresNoMaxDeliver() *ApiError {
	return apiErr(400, 10222, "flow control ack policy requires unset max deliver")
}
func errClusteringRequired() *ApiError {
	return apiErr(503, 10010, "JetStream clustering support required")
}

func errConsumerStoreFailed(err error) *ApiError {
	return apiErr(500, 10104, "error creating store for consumer: "+err.Error())
}
