package server

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/internal/sublist"
)

var validGroupName = regexp.MustCompile(`^[a-zA-Z0-9/_=-]{1,16}$`)

// isValidAssetName reports whether name can name a stream or consumer.
func isValidAssetName(name string) bool {
	return name != "" && !strings.ContainsAny(name, " \t\r\n\f.*>\\/")
}

// jsValidSubject is nats-server's subject check for consumer subjects.
func jsValidSubject(s string) bool {
	return sublist.ValidSubject(s) && !strings.ContainsRune(s, '\f')
}

// jsSubsetMatch reports whether every subject that subject matches is
// matched by test, token by token as nats-server decides it for filters
// and deliver subjects. It does not validate either subject, so a ">"
// inside test matches whatever follows (nats-server reports ["a.b",
// "a.>.c"] as overlapping filters, not as an invalid one).
func jsSubsetMatch(subject, test string) bool {
	st, tt := strings.Split(subject, "."), strings.Split(test, ".")
	for i, t := range tt {
		if i >= len(st) || t == "" {
			return false
		}
		if t == ">" {
			return true
		}
		s := st[i]
		switch {
		case s == "" || s == ">":
			return false
		case s == "*":
			if t != "*" {
				return false
			}
		case t != "*" && s != t:
			return false
		}
	}
	return len(st) == len(tt)
}

// checkConsumerConfig validates a normalised config against its stream and
// limits, in nats-server's order (the first failing check is the answer).
func checkConsumerConfig(cfg *ConsumerConfig, scfg *StreamConfig, lim *consumerLimits) *ApiError {
	checks := []func(*ConsumerConfig, *StreamConfig, *consumerLimits) *ApiError{
		checkConsumerNamesReplicas,
		checkConsumerAcks,
		checkConsumerPushPull,
		checkConsumerLimits,
		checkConsumerFilters,
		checkConsumerDeliverPolicy,
		checkConsumerMisc,
		checkConsumerPriority,
	}
	for _, check := range checks {
		if err := check(cfg, scfg, lim); err != nil {
			return err
		}
	}
	return nil
}

func checkConsumerNamesReplicas(cfg *ConsumerConfig, scfg *StreamConfig, _ *consumerLimits) *ApiError {
	if cfg.Name != "" && !isValidAssetName(cfg.Name) {
		return errStreamInvalidConfig("consumer name can not contain '.', '*', '>', '\\', '/'")
	}
	if cfg.Durable != "" && !isValidAssetName(cfg.Durable) {
		return errStreamInvalidConfig("consumer durable name can not contain '.', '*', '>', '\\', '/'")
	}
	if cfg.Replicas > 0 && cfg.Replicas > scfg.Replicas {
		return errConsumerReplicasExceedsStream()
	}
	if cfg.Replicas < 0 {
		return errReplicasNegative()
	}
	if scfg.Retention != LimitsPolicy && cfg.Replicas != 0 && cfg.Replicas != scfg.Replicas {
		return errConsumerReplicasMatchStream()
	}
	return nil
}

func checkConsumerAcks(cfg *ConsumerConfig, _ *StreamConfig, _ *consumerLimits) *ApiError {
	if _, err := cfg.AckPolicy.MarshalJSON(); err != nil {
		return errConsumerAckPolicyInvalid()
	}
	if _, err := cfg.ReplayPolicy.MarshalJSON(); err != nil {
		return errConsumerReplayPolicyInvalid()
	}
	for _, b := range cfg.BackOff {
		if b < 0 {
			return errConsumerBackOffNegative()
		}
	}
	if cfg.AckWait < 0 {
		return errConsumerAckWaitNegative()
	}
	if cfg.AckPolicy == AckFlowControl {
		if err := checkAckFlowControl(cfg); err != nil {
			return err
		}
	}
	if n := len(cfg.BackOff); n > 0 && cfg.MaxDeliver != -1 && n > cfg.MaxDeliver {
		return errConsumerMaxDeliverBackoff()
	}
	if len(cfg.Description) > JSMaxDescriptionLen {
		return errConsumerDescriptionTooLong(JSMaxDescriptionLen)
	}
	return nil
}

func checkAckFlowControl(cfg *ConsumerConfig) *ApiError {
	switch {
	case !cfg.isPush():
		return errConsumerAckFCRequiresPush()
	case !cfg.FlowControl:
		return errConsumerAckFCRequiresFC()
	case cfg.Heartbeat != ackFlowControlHeartbeat:
		return errStreamInvalidConfig("flow control ack policy heartbeat needs to be 1s")
	case cfg.MaxAckPending <= 0:
		return errConsumerAckFCRequiresMaxAckPending()
	case cfg.AckWait != 0 || len(cfg.BackOff) > 0:
		return errConsumerAckFCRequiresNoAckWait()
	case cfg.MaxDeliver > 0:
		return errConsumerAckFCRequiresNoMaxDeliver()
	}
	return nil
}

func checkConsumerPushPull(cfg *ConsumerConfig, scfg *StreamConfig, lim *consumerLimits) *ApiError {
	if cfg.isPush() {
		return checkConsumerPush(cfg, scfg)
	}
	switch {
	case cfg.AckPolicy == AckNone && scfg.Retention == WorkQueuePolicy:
		return errConsumerPullRequiresAck()
	case cfg.RateLimit > 0:
		return errConsumerPullWithRateLimit()
	case cfg.MaxWaiting < 0:
		return errConsumerMaxWaitingNegative()
	case cfg.Heartbeat > 0:
		return errConsumerHBRequiresPush()
	case cfg.FlowControl:
		return errConsumerFCRequiresPush()
	case cfg.MaxRequestBatch < 0:
		return errConsumerMaxRequestBatchNegative()
	case cfg.MaxRequestExpires != 0 && cfg.MaxRequestExpires < time.Millisecond:
		return errConsumerMaxRequestExpiresTooSmall()
	case lim.Server.MaxRequestBatch > 0 && cfg.MaxRequestBatch > lim.Server.MaxRequestBatch:
		return errConsumerMaxRequestBatchExceeded(lim.Server.MaxRequestBatch)
	}
	return nil
}

func checkConsumerPush(cfg *ConsumerConfig, scfg *StreamConfig) *ApiError {
	ds := cfg.DeliverSubject
	switch {
	case sublist.SubjectHasWildcard(ds):
		return errConsumerDeliverToWildcards()
	case !jsValidSubject(ds):
		return errConsumerInvalidDeliverSubject()
	case deliveryFormsCycle(scfg, ds):
		return errConsumerDeliverCycle()
	case cfg.MaxWaiting != 0:
		return errConsumerPushMaxWaiting()
	case cfg.MaxAckPending > 0 && cfg.AckPolicy == AckNone:
		return errConsumerMaxPendingAckPolicy()
	case cfg.Heartbeat > 0 && cfg.Heartbeat < 100*time.Millisecond:
		return errConsumerSmallHeartbeat()
	}
	return nil
}

// deliveryFormsCycle: delivering to a subject the stream stores would
// store every delivery again.
func deliveryFormsCycle(scfg *StreamConfig, deliver string) bool {
	for _, s := range scfg.Subjects {
		if jsSubsetMatch(deliver, s) {
			return true
		}
	}
	return false
}

func checkConsumerLimits(cfg *ConsumerConfig, scfg *StreamConfig, lim *consumerLimits) *ApiError {
	cl := scfg.ConsumerLimits
	switch {
	case lim.Server.MaxAckPending > 0 && cfg.MaxAckPending > lim.Server.MaxAckPending:
		return errConsumerMaxPendingAckExcess(lim.Server.MaxAckPending)
	case lim.Account.MaxAckPending > 0 && cfg.MaxAckPending > lim.Account.MaxAckPending:
		return errConsumerMaxPendingAckExcess(lim.Account.MaxAckPending)
	case cl.MaxAckPending > 0 && cfg.MaxAckPending > cl.MaxAckPending:
		return errConsumerMaxPendingAckExcess(cl.MaxAckPending)
	case cl.InactiveThreshold > 0 && cfg.InactiveThreshold > cl.InactiveThreshold:
		return errConsumerInactiveThresholdExcess(cl.InactiveThreshold)
	}
	if cfg.Direct {
		if !cfg.isPush() {
			return errConsumerDirectRequiresPush()
		}
		if isDurableConsumer(cfg) {
			return errConsumerDirectRequiresEphemeral()
		}
	}
	return nil
}

func checkConsumerFilters(cfg *ConsumerConfig, _ *StreamConfig, _ *consumerLimits) *ApiError {
	if cfg.FilterSubject != "" && len(cfg.FilterSubjects) > 0 {
		return errConsumerDuplicateFilterSubjects()
	}
	if cfg.FilterSubject != "" && !jsValidSubject(cfg.FilterSubject) {
		return errStreamInvalidConfig("invalid subject")
	}
	for _, f := range cfg.FilterSubjects {
		if f == "" {
			return errConsumerEmptyFilter()
		}
	}
	filters := cfg.filters()
	for i, f := range filters {
		if !jsValidSubject(f) {
			return errStreamInvalidConfig("invalid subject")
		}
		for j, g := range filters {
			if i != j && jsSubsetMatch(f, g) {
				return errConsumerOverlappingFilters()
			}
		}
	}
	return nil
}

func checkConsumerDeliverPolicy(cfg *ConsumerConfig, _ *StreamConfig, _ *consumerLimits) *ApiError {
	badStart := func(dp, start string) *ApiError {
		return errConsumerInvalidPolicy(fmt.Sprintf("consumer delivery policy is deliver %s, but optional start %s is also set", dp, start))
	}
	notSet := func(dp, what string) *ApiError {
		return errConsumerInvalidPolicy(fmt.Sprintf("consumer delivery policy is deliver %s, but optional %s is not set", dp, what))
	}
	hasSeq, hasTime := cfg.OptStartSeq > 0, cfg.OptStartTime != nil
	switch cfg.DeliverPolicy {
	case DeliverAll, DeliverLast, DeliverNew, DeliverLastPerSubject:
		dp := map[DeliverPolicy]string{DeliverAll: "all", DeliverLast: "last", DeliverNew: "new",
			DeliverLastPerSubject: "last per subject"}[cfg.DeliverPolicy]
		if hasSeq {
			return badStart(dp, "sequence")
		}
		if hasTime {
			return badStart(dp, "time")
		}
		if cfg.DeliverPolicy == DeliverLastPerSubject && len(cfg.filters()) == 0 {
			return notSet(dp, "filter subject")
		}
	case DeliverByStartSequence:
		if !hasSeq {
			return notSet("by start sequence", "start sequence")
		}
		if hasTime {
			return badStart("by start sequence", "time")
		}
	case DeliverByStartTime:
		if !hasTime {
			return notSet("by start time", "start time")
		}
		if cfg.OptStartSeq != 0 {
			return badStart("by start time", "start sequence")
		}
	}
	return nil
}

func checkConsumerMisc(cfg *ConsumerConfig, _ *StreamConfig, _ *consumerLimits) *ApiError {
	if cfg.SampleFrequency != "" {
		s := strings.TrimSuffix(cfg.SampleFrequency, "%")
		if f, err := strconv.Atoi(s); err != nil || f < 0 {
			return errConsumerInvalidSampling(err)
		}
	}
	if cfg.FlowControl && cfg.Heartbeat == 0 {
		return errConsumerFCNeedsHeartbeats()
	}
	if cfg.Durable != "" && cfg.Name != "" && cfg.Name != cfg.Durable {
		return errConsumerDurableAndNameMismatch()
	}
	n := 0
	for k, v := range cfg.Metadata {
		n += len(k) + len(v)
	}
	if n > JSMaxMetadataLen {
		return errConsumerMetadataLength(fmt.Sprintf("%dKB", JSMaxMetadataLen/1024))
	}
	return nil
}

func checkConsumerPriority(cfg *ConsumerConfig, scfg *StreamConfig, _ *consumerLimits) *ApiError {
	if cfg.PriorityPolicy != PriorityNone {
		if cfg.isPush() {
			return errConsumerPushWithPriorityGroup()
		}
		if len(cfg.PriorityGroups) == 0 {
			return errConsumerPriorityPolicyWithoutGroup()
		}
		for _, g := range cfg.PriorityGroups {
			if g == "" {
				return errConsumerEmptyGroupName()
			}
			if !validGroupName.MatchString(g) {
				return errConsumerInvalidGroupName()
			}
		}
	} else {
		if len(cfg.PriorityGroups) > 0 {
			return errConsumerPriorityGroupWithPolicyNone()
		}
		if cfg.PinnedTTL > 0 {
			return errConsumerPinnedTTLWithoutPriorityPolicy()
		}
	}
	if scfg.Placement != nil && scfg.Placement.Preferred != "" {
		return errStreamInvalidConfig("preferred server not permitted in placement")
	}
	return nil
}
