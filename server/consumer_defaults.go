package server

// consumerLimits are the limits outside the stream that a consumer config
// is normalised and checked against.
type consumerLimits struct {
	// Server is the server's jetstream { limits {} } block.
	Server JSLimitOpts
	// Account is the account's limits for the consumer's replica tier.
	Account JetStreamAccountLimits
}

func errPedantic(msg string) *ApiError { return apiErr(400, 10157, "pedantic mode: "+msg) }

// clampNegatives sets fields a client sent negative to their neutral value
// (or refuses them in pedantic mode), nats-server's first normalisation.
func clampNegatives(cfg *ConsumerConfig, pedantic bool) *ApiError {
	if cfg.MaxDeliver == 0 || cfg.MaxDeliver < -1 {
		if pedantic && cfg.MaxDeliver < -1 {
			return errPedantic("max_deliver must be set to -1")
		}
		cfg.MaxDeliver = -1
	}
	ints := []struct {
		v   *int
		to  int
		msg string
		min int
	}{
		{&cfg.MaxWaiting, 0, "max_waiting must not be negative", 0},
		{&cfg.MaxAckPending, -1, "max_ack_pending must be set to -1", -1},
		{&cfg.MaxRequestBatch, 0, "max_batch must not be negative", 0},
	}
	for _, f := range ints {
		if *f.v < f.min {
			if pedantic {
				return errPedantic(f.msg)
			}
			*f.v = f.to
		}
	}
	return clampNegativeDurations(cfg, pedantic)
}

func clampNegativeDurations(cfg *ConsumerConfig, pedantic bool) *ApiError {
	if cfg.MaxRequestExpires < 0 {
		if pedantic {
			return errPedantic("max_expires must not be negative")
		}
		cfg.MaxRequestExpires = 0
	}
	if cfg.MaxRequestMaxBytes < 0 {
		if pedantic {
			return errPedantic("max_bytes must not be negative")
		}
		cfg.MaxRequestMaxBytes = 0
	}
	durs := []struct {
		v   *int64
		msg string
	}{
		{(*int64)(&cfg.Heartbeat), "idle_heartbeat must not be negative"},
		{(*int64)(&cfg.InactiveThreshold), "inactive_threshold must not be negative"},
		{(*int64)(&cfg.PinnedTTL), "priority_timeout must not be negative"},
	}
	for _, d := range durs {
		if *d.v < 0 {
			if pedantic {
				return errPedantic(d.msg)
			}
			*d.v = 0
		}
	}
	return nil
}

// setConsumerDefaults fills in what the client left out, from the stream's
// consumer_limits, the server and account limits and nats-server's
// defaults. In pedantic mode a default that would change what the client
// asked for is an error instead.
func setConsumerDefaults(cfg *ConsumerConfig, scfg *StreamConfig, lim *consumerLimits, pedantic bool) *ApiError {
	if err := clampNegatives(cfg, pedantic); err != nil {
		return err
	}
	if !cfg.isPush() && cfg.MaxWaiting == 0 {
		cfg.MaxWaiting = JSWaitQueueDefaultMax
	}
	if cfg.AckWait == 0 && (cfg.AckPolicy == AckExplicit || cfg.AckPolicy == AckAll) {
		cfg.AckWait = JsAckWaitDefault
	}
	if len(cfg.BackOff) > 0 {
		if pedantic && cfg.AckWait != cfg.BackOff[0] {
			return errPedantic("first backoff value has to equal batch AckWait")
		}
		cfg.AckWait = cfg.BackOff[0]
	}
	if err := setConsumerLimitDefaults(cfg, scfg, lim, pedantic); err != nil {
		return err
	}
	if cfg.PriorityPolicy == PriorityPinnedClient && cfg.PinnedTTL == 0 {
		cfg.PinnedTTL = JsDefaultPinnedTTL
	}
	if cfg.AckPolicy == AckFlowControl && !pedantic {
		cfg.FlowControl = true
		cfg.Heartbeat = ackFlowControlHeartbeat
	}
	return nil
}

// setConsumerLimitDefaults: max_ack_pending and inactive_threshold from the
// stream's consumer_limits, then max_ack_pending from the smallest of 1000
// and the server and account limits, and the server's max_request_batch.
func setConsumerLimitDefaults(cfg *ConsumerConfig, scfg *StreamConfig, lim *consumerLimits, pedantic bool) *ApiError {
	cl := scfg.ConsumerLimits
	if cfg.MaxAckPending == 0 {
		if pedantic && cl.MaxAckPending > 0 {
			return errPedantic("max_ack_pending must be set if it's configured in stream limits")
		}
		cfg.MaxAckPending = cl.MaxAckPending
	}
	if cfg.InactiveThreshold == 0 {
		if pedantic && cl.InactiveThreshold > 0 {
			return errPedantic("inactive_threshold must be set if it's configured in stream limits")
		}
		cfg.InactiveThreshold = cl.InactiveThreshold
	}
	if cfg.MaxAckPending == 0 && cfg.AckPolicy != AckNone {
		mp := JsDefaultMaxAckPending
		if l := lim.Server.MaxAckPending; l > 0 && l < mp {
			mp = l
		}
		if l := lim.Account.MaxAckPending; l > 0 && l < mp {
			mp = l
		}
		cfg.MaxAckPending = mp
	}
	if !cfg.isPush() && cfg.MaxRequestBatch == 0 && lim.Server.MaxRequestBatch > 0 {
		if pedantic {
			return errPedantic("max_request_batch must be set if it's JetStream limits are set")
		}
		cfg.MaxRequestBatch = lim.Server.MaxRequestBatch
	}
	return nil
}
