package server

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nuid"
)

// STREAM.LIST in a cluster. The meta leader answers, but only a stream's
// leader knows how far each replica has come (current, active, lag), so
// the meta leader asks the leaders of the streams it does not lead for
// their stream info, as nats-server does: on $JSC.SI.<account>.<stream>
// in the system account (not the account's $JS.API subjects, where its
// subscribers would see the requests and its API counters count them).
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
	b, err := json.Marshal(si)
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

// askStreamLeaders asks for the info of sas[i], i in ask, and fills
// infos[i] with each answer that arrives within streamListWait.
func (jsa *jsAccount) askStreamLeaders(sas []*streamAssignment, ask []int, infos []*StreamInfo) {
	s := jsa.js.srv
	sys := s.SystemAccount()
	if sys == nil {
		return // no system account: listed as missing
	}
	type answer struct {
		i  int
		si *StreamInfo
	}
	answers := make(chan answer, len(ask))
	prefix := "$JSC.SL." + nuid.Next() + "."
	sub, err := sys.subscribeInternal(prefix+"*", "", func(_ *subscription, _ *client, _ *Account, subject, _ string, _, msg []byte) {
		i, err := strconv.Atoi(strings.TrimPrefix(subject, prefix))
		if err != nil || i < 0 || i >= len(infos) {
			return
		}
		si := &StreamInfo{}
		if json.Unmarshal(msg, si) != nil || si.Config.Name != sas[i].Config.Name {
			return // not an answer to this question: listed as missing
		}
		select {
		case answers <- answer{i, si}:
		default:
		}
	})
	if err != nil {
		return
	}
	defer sys.unsubscribe(sub)
	for _, i := range ask {
		s.deliver(nil, sys, streamInfoAskPrefix+jsa.acc.Name+"."+sas[i].Config.Name, prefix+strconv.Itoa(i), nil, nil)
	}
	deadline := time.NewTimer(streamListWait)
	defer deadline.Stop()
	for left := len(ask); left > 0; {
		select {
		case a := <-answers:
			if infos[a.i] == nil {
				infos[a.i] = a.si
				left--
			}
		case <-deadline.C:
			return
		case <-s.quit:
			return
		}
	}
}
