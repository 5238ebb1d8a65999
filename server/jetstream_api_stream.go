package server

import (
	"encoding/json"
	"path/filepath"
	"sort"

	"github.com/nats-io/nats-server/v2/internal/sublist"
)

type streamInfoResponse struct {
	apiResponse
	*StreamInfo
	DidCreate bool `json:"did_create,omitempty"`
	apiPaged
}

func streamErr(e *ApiError) *streamInfoResponse {
	return &streamInfoResponse{apiResponse: apiResponse{Error: e}}
}

// info builds the StreamInfo, with per-subject counts for filter and the
// deleted sequences when asked.
func (mset *stream) info(filter string, deleted bool, offset int) (*StreamInfo, apiPaged) {
	mset.mu.Lock()
	cfg := mset.cfg
	mset.mu.Unlock()
	si := &StreamInfo{Config: cfg, Created: mset.created.UTC(), TimeStamp: mset.jsa.js.srv.clock.Now().UTC(),
		Cluster: mset.clusterInfo()}
	var paged apiPaged
	if deleted {
		si.State = mset.st().State()
	} else {
		mset.st().FastState(&si.State)
	}
	si.State.Deleted = nil
	si.State.Consumers = mset.numConsumers()
	if deleted {
		si.State.Deleted = mset.st().State().Deleted
	}
	if filter != "" {
		subjects := mset.st().SubjectsState(filter)
		names := make([]string, 0, len(subjects))
		for s := range subjects {
			names = append(names, s)
		}
		sort.Strings(names)
		// As nats-server: a negative offset is 0, one past the end gives
		// no subjects, and the offset is reported as asked (but not < 0).
		offset = max(offset, 0)
		paged = apiPaged{Total: len(names), Offset: offset, Limit: jsSubjectsLimit}
		names = names[min(offset, len(names)):]
		names = names[:min(len(names), jsSubjectsLimit)]
		si.State.Subjects = make(map[string]uint64, len(names))
		for _, n := range names {
			si.State.Subjects[n] = subjects[n].Msgs
		}
	}
	return si, paged
}

func (r *apiRequest) streamCreate() any {
	name := r.streamName("STREAM.CREATE.")
	cfg, e := r.createConfig(name)
	if e != nil {
		return streamErr(e)
	}
	if cfg.Replicas > 1 {
		return streamErr(errReplicasNotSupported())
	}
	if existing := r.jsa.lookup(name); existing != nil {
		existing.mu.Lock()
		same := sameConfig(&existing.cfg, &cfg)
		existing.mu.Unlock()
		if !same {
			return streamErr(errStreamNameExist())
		}
		si, _ := existing.info("", false, 0)
		return &streamInfoResponse{StreamInfo: si}
	}
	if max := r.jsa.limits().MaxStreams; max > 0 && len(r.jsa.streamList()) >= max {
		return streamErr(errMaxStreams())
	}
	mset, e := r.jsa.addStream(&cfg, r.jsa.js.srv.clock.Now().UTC(), false)
	if e != nil {
		if e.ErrCode == 10058 { // lost a race with an identical create
			if existing := r.jsa.lookup(name); existing != nil && sameConfig(&existing.cfg, &cfg) {
				si, _ := existing.info("", false, 0)
				return &streamInfoResponse{StreamInfo: si}
			}
		}
		return streamErr(e)
	}
	si, _ := mset.info("", false, 0)
	return &streamInfoResponse{StreamInfo: si, DidCreate: true}
}

// requestConfig reads a config whose name must match the subject's.
func (r *apiRequest) requestConfig(name string) (StreamConfig, *ApiError) {
	var cfg StreamConfig
	if e := r.unmarshal(&cfg); e != nil {
		return cfg, e
	}
	if cfg.Name == "" {
		cfg.Name = name
	}
	if cfg.Name != name {
		return cfg, errStreamNameMismatch()
	}
	return cfg, nil
}

func (r *apiRequest) streamUpdate() any {
	name := r.streamName("STREAM.UPDATE.")
	cfg, e := r.requestConfig(name)
	if e != nil {
		return streamErr(e)
	}
	mset := r.jsa.lookup(name)
	if mset == nil {
		return streamErr(errStreamNotFound())
	}
	cfg.normalize()
	if e := cfg.check(); e != nil {
		return streamErr(e)
	}
	if e := r.jsa.updateStream(mset, &cfg); e != nil {
		return streamErr(e)
	}
	si, _ := mset.info("", false, 0)
	return &streamInfoResponse{StreamInfo: si}
}

// updateStream applies a new configuration to a running stream.
// The config changes under jsa.mu (other streams' subjects are checked
// against it) and the stream's mu; the subscriptions follow without them
// (subscribing takes routeTable.mu), in the stream's name claim, which
// keeps two updates (or an update and a create) of one name apart.
func (jsa *jsAccount) updateStream(mset *stream, cfg *StreamConfig) *ApiError {
	done, _ := jsa.claim(mset.name, nil, nil)
	defer func() {
		jsa.mu.Lock()
		jsa.unclaimLocked(mset.name, done)
		jsa.mu.Unlock()
	}()
	jsa.mu.Lock()
	if e := overlapsOthers(cfg.Subjects, jsa.othersSubjects(mset)); e != nil {
		jsa.mu.Unlock()
		return e
	}
	mset.mu.Lock()
	if e := checkUpdate(&mset.cfg, cfg); e != nil {
		mset.mu.Unlock()
		jsa.mu.Unlock()
		return e
	}
	meta, _ := json.Marshal(streamMeta{Config: *cfg, Created: mset.created})
	if err := jsa.js.writeFileSync(filepath.Join(jsa.dir, cfg.Name, streamMetaFile), meta); err != nil {
		mset.mu.Unlock()
		jsa.mu.Unlock()
		return errStreamGeneral(err)
	}
	oldRet := mset.cfg.Retention
	mset.cfg = *cfg
	_ = mset.st().UpdateLimits(limitsOf(cfg))
	mset.retentionChangedLocked(oldRet)
	mset.scheduleExpiryLocked()
	mset.mu.Unlock()
	jsa.mu.Unlock()
	if err := mset.subscribe(); err != nil {
		return errStreamGeneral(err)
	}
	return nil
}

// config returns a copy of the stream's configuration.
func (mset *stream) config() StreamConfig {
	mset.mu.Lock()
	defer mset.mu.Unlock()
	return mset.cfg
}

func (r *apiRequest) streamInfo() any {
	mset := r.jsa.lookup(r.streamName("STREAM.INFO."))
	if mset == nil {
		return streamErr(errStreamNotFound())
	}
	var req struct {
		DeletedDetails bool   `json:"deleted_details"`
		SubjectsFilter string `json:"subjects_filter"`
		Offset         int    `json:"offset"`
	}
	if e := r.unmarshal(&req); e != nil {
		return streamErr(e)
	}
	si, paged := mset.info(req.SubjectsFilter, req.DeletedDetails, req.Offset)
	return &streamInfoResponse{StreamInfo: si, apiPaged: paged}
}

// createConfig reads, normalises and validates a create request's config.
func (r *apiRequest) createConfig(name string) (StreamConfig, *ApiError) {
	cfg, e := r.requestConfig(name)
	if e != nil {
		return cfg, e
	}
	if cfg.Sealed { // a stream is sealed only by an update, as in nats-server
		return cfg, errStreamInvalidConfig("stream configuration for create can not be sealed")
	}
	cfg.normalize()
	return cfg, cfg.check()
}

type successResponse struct {
	apiResponse
	Success bool `json:"success,omitempty"`
}

func (r *apiRequest) streamDelete() any {
	name := r.streamName("STREAM.DELETE.")
	r.jsa.mu.Lock()
	mset := r.jsa.streams[name]
	delete(r.jsa.streams, name)
	r.jsa.mu.Unlock()
	if mset == nil {
		return &successResponse{apiResponse: apiResponse{Error: errStreamNotFound()}}
	}
	if err := mset.stop(true); err != nil {
		return &successResponse{apiResponse: apiResponse{Error: errStreamDelete(err)}}
	}
	return &successResponse{Success: true}
}

type streamNamesResponse struct {
	apiResponse
	apiPaged
	Streams []string `json:"streams"`
}

type streamListResponse struct {
	apiResponse
	apiPaged
	Streams []*StreamInfo `json:"streams"`
	Missing []string      `json:"missing,omitempty"`
}

type streamListRequest struct {
	Offset  int    `json:"offset"`
	Subject string `json:"subject"`
}

// matchingStreams applies the list filter and paging.
func (r *apiRequest) matchingStreams(limit int) ([]*stream, apiPaged, *ApiError) {
	var req streamListRequest
	if e := r.unmarshal(&req); e != nil {
		return nil, apiPaged{}, e
	}
	var out []*stream
	for _, mset := range r.jsa.streamList() {
		if req.Subject != "" && !anyCollides(mset.config().Subjects, req.Subject) {
			continue
		}
		out = append(out, mset)
	}
	// As nats-server: an offset past the end is reported clamped to the total.
	offset := min(max(req.Offset, 0), len(out))
	paged := apiPaged{Total: len(out), Offset: offset, Limit: limit}
	out = out[offset:]
	return out[:min(len(out), limit)], paged, nil
}

func anyCollides(subjects []string, filter string) bool {
	for _, s := range subjects {
		if sublist.SubjectsCollide(s, filter) {
			return true
		}
	}
	return false
}

func (r *apiRequest) streamNames() any {
	list, paged, e := r.matchingStreams(jsNamesLimit)
	if e != nil {
		return &streamNamesResponse{apiResponse: apiResponse{Error: e}}
	}
	resp := &streamNamesResponse{apiPaged: paged}
	for _, mset := range list {
		resp.Streams = append(resp.Streams, mset.name)
	}
	return resp
}

func (r *apiRequest) streamList() any {
	list, paged, e := r.matchingStreams(jsListLimit)
	if e != nil {
		return &streamListResponse{apiResponse: apiResponse{Error: e}}
	}
	resp := &streamListResponse{apiPaged: paged, Streams: []*StreamInfo{}}
	for _, mset := range list {
		si, _ := mset.info("", false, 0)
		resp.Streams = append(resp.Streams, si)
	}
	return resp
}
