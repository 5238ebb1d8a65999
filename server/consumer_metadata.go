package server

import (
	"maps"
	"strconv"
)

// nats-server 2.11+ versions each consumer config through its metadata:
// the create path stores the API level the config needs ("_nats.req.level",
// static, kept across updates) and every response adds the answering
// server's version and API level ("_nats.ver", "_nats.level", dynamic,
// never stored).
const (
	metaRequiredLevel = "_nats.req.level"
	metaServerVersion = "_nats.ver"
	metaServerLevel   = "_nats.level"
)

// consumerRequiredLevel is the API level a config's features need.
func consumerRequiredLevel(cfg *ConsumerConfig) int {
	level := 0
	if cfg.PauseUntil != nil && !cfg.PauseUntil.IsZero() {
		level = 1
	}
	if cfg.PriorityPolicy != PriorityNone || cfg.PinnedTTL != 0 || len(cfg.PriorityGroups) > 0 {
		level = 1
	}
	if cfg.AckPolicy == AckFlowControl {
		level = 4
	}
	return level
}

// setStaticConsumerMetadata drops client-sent dynamic keys and stamps the
// required level.
func setStaticConsumerMetadata(cfg *ConsumerConfig) {
	if cfg.Metadata == nil {
		cfg.Metadata = make(map[string]string)
	} else {
		delete(cfg.Metadata, metaServerVersion)
		delete(cfg.Metadata, metaServerLevel)
	}
	cfg.Metadata[metaRequiredLevel] = strconv.Itoa(consumerRequiredLevel(cfg))
}

// keepConsumerRequiredLevel drops dynamic keys and carries the required
// level over from prev (or removes it), for comparing with an existing
// config.
func keepConsumerRequiredLevel(cfg, prev *ConsumerConfig) {
	if cfg.Metadata != nil {
		delete(cfg.Metadata, metaServerVersion)
		delete(cfg.Metadata, metaServerLevel)
	}
	if prev != nil {
		if v, ok := prev.Metadata[metaRequiredLevel]; ok {
			if cfg.Metadata == nil {
				cfg.Metadata = make(map[string]string)
			}
			cfg.Metadata[metaRequiredLevel] = v
			return
		}
	}
	delete(cfg.Metadata, metaRequiredLevel)
	if len(cfg.Metadata) == 0 {
		cfg.Metadata = nil
	}
}

// withServerMetadata returns a shallow copy of cfg whose metadata also
// names the answering server's version and API level, for responses.
func withServerMetadata(cfg *ConsumerConfig, version string, level int) *ConsumerConfig {
	var c ConsumerConfig
	if cfg != nil {
		c = *cfg
	}
	c.Metadata = maps.Clone(c.Metadata)
	if c.Metadata == nil {
		c.Metadata = make(map[string]string, 2)
	}
	c.Metadata[metaServerVersion] = version
	c.Metadata[metaServerLevel] = strconv.Itoa(level)
	return &c
}
