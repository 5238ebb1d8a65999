package server

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nuid"

	"github.com/nats-io/nats-server/v2/internal/sublist"
)

// STREAM.LIST in a cluster. The meta leader answers, but only a stream's
// leader knows how far each replica has come (current, active, lag), so
// the meta leader asks the leaders of the streams it does not lead for
// their stream info, as nats-server does: on $JSC.SI.<account>.<stream>
// in the system account (not the account's $JS.API subjects, where its
// subscribers would see the requests and its API counters count them;
// those are still used for leaders on servers older than route protocol
// 4, during a rolling upgrade, and without a system account).
// A stream whose leader does not answer in time is listed from the
// assignment and named in "missing".

const streamInfoAskPrefix = "$JSC.SI."

// streamInfoAsked answers $JSC.SI.<account>.<stream> with the stream's
// info when this server leads it (the others stay silent).
func (jc *jsCluster) streamInfoAsked(_ *subscription, _ *client, _ *Account, subject, reply string, _, _ []byte) {
	rest := strings.TrimPrefix(subject, streamInfoAskPrefix)
	dot := strings.LastIndexByte(rest, '.')
	sys := jc.js.srv.SystemAccount()
	if reply == "" || dot <= 0 || sys == nil {
		return
	}
	jsa := jc.js.account(rest[:dot])
	if jsa == nil {
		return
	}
	mset := jsa.lookup(rest[dot+1:])
	if mset == nil || !mset.isLeader() {
		return
	}
	si, _ := mset.info("", false, 0)
	resp := &streamInfoResponse{StreamInfo: si} // as STREAM.INFO answers
	setResponseType(resp, apiTypePrefix+"stream_info_response")
	b, err := json.Marshal(resp)
	if err != nil {
		return
	}
	jc.js.srv.deliver(nil, sys, strings.Clone(reply), "", nil, b)
}

// streamListWait bounds how long the meta leader waits for stream leaders.
var streamListWait = 2 * time.Second

func (r *apiRequest) clusterStreamList() any {
	var req streamListRequest
	if e := r.unmarshal(&req); e != nil {
		return &streamListResponse{apiResponse: apiResponse{Error: e}}
	}
	jc := r.jsa.js.cluster
	var sas []*streamAssignment
	for _, sa := range jc.assignments(r.jsa.acc.Name) {
		if req.Subject == "" || anyCollides(sa.Config.Subjects, req.Subject) {
			sas = append(sas, sa)
		}
	}
	offset := min(max(req.Offset, 0), len(sas))
	paged := apiPaged{Total: len(sas), Offset: offset, Limit: jsListLimit}
	sas = sas[offset:]
	sas = sas[:min(len(sas), jsListLimit)]
	s := r.jsa.js.srv
	if s.shutdown.Load() {
		return &streamListResponse{apiResponse: apiResponse{Error: errClusterNotAvail()}}
	}
	// The answers come back through this server's read loops, which may
	// be the one running this handler: wait on a goroutine of its own.
	// The reply subject may point into the reader's buffer: copy it.
	reply := strings.Clone(r.reply)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		resp := &streamListResponse{apiPaged: paged}
		resp.Streams, resp.Missing = r.jsa.gatherStreamInfos(sas)
		setResponseType(resp, apiTypePrefix+"stream_list_response")
		b, _ := json.Marshal(resp)
		s.deliver(nil, r.jsa.acc, reply, "", nil, b)
	}()
	return nil
}

// gatherStreamInfos returns the info of each assigned stream, in order:
// from the local replica where this server leads, from the leader's
// STREAM.INFO answer otherwise; missing names the streams whose leaders
// did not answer within streamListWait.
func (jsa *jsAccount) gatherStreamInfos(sas []*streamAssignment) (infos []*StreamInfo, missing []string) {
	jc := jsa.js.cluster
	infos = make([]*StreamInfo, len(sas))
	var ask []int
	for i, sa := range sas {
		if mset := jsa.lookup(sa.Config.Name); mset != nil && mset.isLeader() {
			infos[i], _ = mset.info("", false, 0)
		} else {
			ask = append(ask, i)
		}
	}
	if len(ask) > 0 {
		jsa.askStreamLeaders(sas, ask, infos)
	}
	for i, sa := range sas {
		if infos[i] == nil {
			infos[i] = jc.streamInfoFromAssignment(sa)
			missing = append(missing, sa.Config.Name)
		}
	}
	return infos, missing
}

// infoQuestion is where the leader of sa is asked for its info:
// $JSC.SI.<account>.<stream> in the system account when its server knows
// it (route protocol 4), else STREAM.INFO in the stream's account.
func (jsa *jsAccount) infoQuestion(sa *streamAssignment) (*Account, string) {
	jc := jsa.js.cluster
	sys := jsa.js.srv.SystemAccount()
	subject := streamInfoAskPrefix + jsa.acc.Name + "." + sa.Config.Name
	if sys != nil && sublist.ValidPublishSubject(subject) &&
		jc.routeProtoOf(jc.streamLeader(jsa.acc.Name, sa.Config.Name)) >= 4 {
		return sys, subject
	}
	return jsa.acc, jsAPIPrefix + "STREAM.INFO." + sa.Config.Name
}

// askStreamLeaders asks for the info of sas[i], i in ask, and fills
// infos[i] with each answer that arrives within streamListWait.
func (jsa *jsAccount) askStreamLeaders(sas []*streamAssignment, ask []int, infos []*StreamInfo) {
	s := jsa.js.srv
	type answer struct {
		i  int
		si *StreamInfo
	}
	answers := make(chan answer, len(ask))
	prefix := "$JSC.SL." + nuid.Next() + "."
	onAnswer := func(_ *subscription, _ *client, _ *Account, subject, _ string, _, msg []byte) {
		i, err := strconv.Atoi(strings.TrimPrefix(subject, prefix))
		if err != nil || i < 0 || i >= len(infos) {
			return
		}
		var resp streamInfoResponse
		if json.Unmarshal(msg, &resp) != nil || resp.Error != nil || resp.StreamInfo == nil ||
			resp.Config.Name != sas[i].Config.Name {
			return // a leader that could not answer: listed as missing
		}
		select {
		case answers <- answer{i, resp.StreamInfo}:
		default:
		}
	}
	// The answers come back in the account the question was asked in:
	// the system account for servers that know $JSC.SI, the stream's
	// account for older ones (and when there is no system account).
	subscribed := map[*Account]bool{}
	for _, i := range ask {
		acc, subject := jsa.infoQuestion(sas[i])
		if !subscribed[acc] {
			sub, err := acc.subscribeInternal(prefix+"*", "", onAnswer)
			if err != nil {
				continue
			}
			defer acc.unsubscribe(sub)
			subscribed[acc] = true
		}
		s.deliver(nil, acc, subject, prefix+strconv.Itoa(i), nil, nil)
	}
	deadline := s.clock.NewTimer(streamListWait)
	defer deadline.Stop()
	for left := len(ask); left > 0; {
		select {
		case a := <-answers:
			if infos[a.i] == nil {
				infos[a.i] = a.si
				left--
			}
		case <-deadline.C():
			return
		case <-s.quit:
			return
		}
	}
}
