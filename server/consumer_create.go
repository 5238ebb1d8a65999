package server

import (
	"reflect"
	"time"

	"github.com/nats-io/nats-server/v2/internal/sublist"
)

// consumerCreateState is everything a CONSUMER.CREATE is decided against.
// It is a value the caller assembles; deciding touches no server state.
type consumerCreateState struct {
	// Stream is the stream's config; nil when the stream does not exist.
	Stream *StreamConfig
	Limits consumerLimits
	// Existing is the config of the consumer the request names, nil if none.
	Existing *ConsumerConfig
	// ExistingBound: the existing push consumer's deliver subject has interest.
	ExistingBound bool
	// Others are the stream's other consumers.
	Others []*ConsumerConfig
	// Clustered: JetStream runs clustered (R>1 consumers are possible).
	Clustered bool
	// NewName names an ephemeral that has no name (createConsumerName if nil);
	// the caller retries when the name is taken.
	NewName func() string
}

// decideConsumerCreate normalises and validates req.Config (already
// reconciled with the request subject, see decodeConsumerCreate) as
// nats-server does when it creates or updates a consumer. It returns the
// config to store and echo, and the consumer's name, or the error the
// client gets. A generated ephemeral name is not written into the config:
// nats-server's echo leaves it out.
func decideConsumerCreate(st *consumerCreateState, req *CreateConsumerRequest) (*ConsumerConfig, string, *ApiError) {
	cfg, err := decideConsumerConfig(st, req)
	if err != nil {
		return nil, "", err
	}
	name := consumerNameOf(cfg)
	if name == "" {
		gen := st.NewName
		if gen == nil {
			gen = createConsumerName
		}
		name = gen()
		for taken(st, name) {
			name = gen()
		}
	}
	return cfg, name, nil
}

// taken reports whether one of the stream's consumers has the name.
func taken(st *consumerCreateState, name string) bool {
	for _, o := range st.Others {
		if consumerNameOf(o) == name {
			return true
		}
	}
	return false
}

func decideConsumerConfig(st *consumerCreateState, req *CreateConsumerRequest) (*ConsumerConfig, *ApiError) {
	if !st.Clustered && req.Config.Replicas > 1 {
		return nil, errReplicasNotSupported()
	}
	if st.Stream == nil {
		return nil, errStreamNotFound()
	}
	cfg := req.Config.clone()
	if st.Existing != nil {
		// An update never changes pause_until; CONSUMER.PAUSE does.
		cfg.PauseUntil = st.Existing.clone().PauseUntil
	}
	setStaticConsumerMetadata(cfg)
	if err := setConsumerDefaults(cfg, st.Stream, &st.Limits, req.Pedantic); err != nil {
		return nil, err
	}
	if err := checkConsumerConfig(cfg, st.Stream, &st.Limits); err != nil {
		return nil, err
	}
	if st.Existing != nil {
		return decideConsumerUpdate(st, req.Action, cfg)
	}
	if req.Action == ActionUpdate {
		return nil, errConsumerDoesNotExist()
	}
	return decideNewConsumer(st, cfg)
}

// decideConsumerUpdate decides a create or update of an existing consumer.
func decideConsumerUpdate(st *consumerCreateState, action ConsumerAction, cfg *ConsumerConfig) (*ConsumerConfig, *ApiError) {
	name := consumerNameOf(cfg)
	if action == ActionCreate {
		keepConsumerRequiredLevel(cfg, st.Existing)
		if !reflect.DeepEqual(cfg, st.Existing) {
			return nil, errConsumerAlreadyExists()
		}
	}
	if st.Stream.Retention == WorkQueuePolicy && !partitionUnique(name, cfg.filters(), st.Others) {
		return nil, errConsumerWQNotUnique()
	}
	if err := checkConsumerUpdate(st.Existing, cfg, st.ExistingBound); err != nil {
		return nil, err
	}
	if cfg.PauseUntil != nil {
		utc := cfg.PauseUntil.UTC()
		cfg.PauseUntil = &utc
	}
	stampEphemeralThreshold(cfg)
	return cfg, nil
}

// decideNewConsumer decides the creation of a consumer that does not exist.
func decideNewConsumer(st *consumerCreateState, cfg *ConsumerConfig) (*ConsumerConfig, *ApiError) {
	limitable := 0
	for _, o := range st.Others {
		if !o.Sourcing {
			limitable++
		}
	}
	if !cfg.Direct && !cfg.Sourcing {
		if maxc := maxConsumersFor(st); maxc > 0 && limitable >= maxc {
			return nil, errMaxConsumers()
		}
	}
	if st.Stream.Retention == WorkQueuePolicy && !cfg.Direct && !cfg.Sourcing {
		if err := checkWorkQueueConsumer(cfg, limitable, st.Others); err != nil {
			return nil, err
		}
	}
	if isDurableConsumer(cfg) && len(cfg.Durable) > JSMaxNameLen {
		return nil, errConsumerNameTooLong(JSMaxNameLen)
	}
	if n := consumerNameOf(cfg); n != "" && !isValidAssetName(n) {
		return nil, errConsumerBadDurableName()
	}
	stampEphemeralThreshold(cfg)
	return cfg, nil
}

// JSDefaultMaxConsumersPerStream is the consumers a stream may have when
// neither it nor its account sets a limit and the server's
// default_max_consumers is 0 (nats-server's default; -1 lifts it).
const JSDefaultMaxConsumersPerStream = 1_000

// maxConsumersFor is the stream's consumer limit: the stream's, or the
// account's when that is lower or the stream has none, or the server's
// default when neither has one.
func maxConsumersFor(st *consumerCreateState) int {
	maxc := st.Stream.MaxConsumers
	acc := st.Limits.Account.MaxConsumers
	if maxc <= 0 || (acc > 0 && acc < maxc) {
		maxc = acc
	}
	def := st.Limits.Server.DefaultMaxConsumers
	if def == 0 {
		def = JSDefaultMaxConsumersPerStream
	}
	if def > 0 && maxc <= 0 {
		maxc = def
	}
	return maxc
}

// checkWorkQueueConsumer: a work-queue stream's consumers ack explicitly,
// start at the beginning and split the subjects without overlap.
func checkWorkQueueConsumer(cfg *ConsumerConfig, limitable int, others []*ConsumerConfig) *ApiError {
	if cfg.AckPolicy != AckExplicit && cfg.AckPolicy != AckFlowControl {
		return errConsumerWQRequiresExplicitAck()
	}
	if cfg.DeliverPolicy != DeliverAll {
		return errConsumerWQNotDeliverAll()
	}
	if limitable == 0 {
		return nil
	}
	filters := cfg.filters()
	if len(filters) == 0 {
		return errConsumerWQMultipleUnfiltered()
	}
	if !partitionUnique(consumerNameOf(cfg), filters, others) {
		return errConsumerWQNotUnique()
	}
	return nil
}

// partitionUnique reports whether no other consumer (internal ones aside)
// could take a message matching one of filters; an unfiltered consumer
// takes them all.
func partitionUnique(name string, filters []string, others []*ConsumerConfig) bool {
	for _, f := range filters {
		for _, o := range others {
			if consumerNameOf(o) == name || o.Direct || o.Sourcing {
				continue
			}
			ofs := o.filters()
			if len(ofs) == 0 {
				return false
			}
			for _, of := range ofs {
				if sublist.SubjectsCollide(f, of) {
					return false
				}
			}
		}
	}
	return true
}

// consumerNameOf is the name a config gives its consumer.
func consumerNameOf(cfg *ConsumerConfig) string {
	if cfg.Durable != "" {
		return cfg.Durable
	}
	return cfg.Name
}

// stampEphemeralThreshold: an ephemeral without inactive_threshold is
// deleted 5s after losing interest, and its config says so.
func stampEphemeralThreshold(cfg *ConsumerConfig) {
	if !isDurableConsumer(cfg) && cfg.InactiveThreshold <= 0 {
		cfg.InactiveThreshold = JsDeleteWaitTimeDefault
	}
}

// newConsumerInfo is the ConsumerInfo of a consumer that has delivered
// nothing yet: what CONSUMER.CREATE answers before any state exists.
// startSeq is the first stream sequence it will deliver (delivered and ack
// floor report the one before it); now decides the pause fields.
func newConsumerInfo(stream, name string, cfg *ConsumerConfig, startSeq uint64, created, now time.Time) *ConsumerInfo {
	ci := &ConsumerInfo{
		Stream:    stream,
		Name:      name,
		Created:   created.UTC(),
		Config:    cfg,
		TimeStamp: now.UTC(),
	}
	if startSeq > 0 {
		ci.Delivered.Stream, ci.AckFloor.Stream = startSeq-1, startSeq-1
	}
	if cfg.PauseUntil != nil && now.Before(*cfg.PauseUntil) {
		ci.Paused, ci.PauseRemaining = true, cfg.PauseUntil.Sub(now)
	}
	// nats-server reports the first group only (one pin for all groups).
	if len(cfg.PriorityGroups) > 0 {
		ci.PriorityGroups = []PriorityGroupState{{Group: cfg.PriorityGroups[0]}}
	}
	return ci
}
