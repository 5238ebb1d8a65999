package server

import (
	"fmt"
	"strings"
)

// The CONSUMER.CREATE table recorded against nats-server v2.15.2 (see
// consumer_golden_gen_test.go) and replayed through Tern's pure create
// path (consumer_golden_test.go).

// ccReq is one raw API request: subject after "$JS.API." and body.
type ccReq struct {
	Subject string `json:"subject"`
	Body    string `json:"body"`
}

type ccGoldenCase struct {
	Name   string
	Server string // "" the default server, "limits" the one with jetstream limits
	Stream string // the stream created fresh for the case
	Pre    []ccReq
	Req    ccReq
}

// The streams a case can use (as sent to STREAM.CREATE).
var ccStreams = map[string]string{
	"L":  `{"name":"L","subjects":["L.>"],"retention":"limits","storage":"memory","num_replicas":1}`,
	"I":  `{"name":"I","subjects":["I.>"],"retention":"interest","storage":"memory","num_replicas":1}`,
	"W":  `{"name":"W","subjects":["W.>"],"retention":"workqueue","storage":"memory","num_replicas":1}`,
	"CL": `{"name":"CL","subjects":["CL.>"],"storage":"memory","num_replicas":1,"consumer_limits":{"inactive_threshold":10000000000,"max_ack_pending":50}}`,
	"MC": `{"name":"MC","subjects":["MC.>"],"storage":"memory","num_replicas":1,"max_consumers":1}`,
}

// The "limits" server's jetstream limits (config file and Tern's input).
const ccLimitsMaxAckPending, ccLimitsMaxRequestBatch = 300, 100

// ccBody is a create request body for stream s with config cfg (JSON
// object text) and extra top-level members.
func ccBody(s, cfg, extra string) string {
	b := fmt.Sprintf(`{"stream_name":%q,"config":%s`, s, cfg)
	if extra != "" {
		b += "," + extra
	}
	return b + "}"
}

// named is a request on CONSUMER.CREATE.<s>.<name>.
func named(s, name, cfg, extra string) ccReq {
	return ccReq{"CONSUMER.CREATE." + s + "." + name, ccBody(s, cfg, extra)}
}

func durable(s, name, cfg string) ccReq {
	return ccReq{"CONSUMER.DURABLE.CREATE." + s + "." + name, ccBody(s, cfg, "")}
}

func legacy(s, cfg, extra string) ccReq {
	return ccReq{"CONSUMER.CREATE." + s, ccBody(s, cfg, extra)}
}

// pullD is a durable explicit-ack pull consumer config with more fields.
func pullD(name, more string) string {
	if more != "" {
		more = "," + more
	}
	return fmt.Sprintf(`{"durable_name":%q,"ack_policy":"explicit"%s}`, name, more)
}

func pushD(name, more string) string {
	if more != "" {
		more = "," + more
	}
	return fmt.Sprintf(`{"durable_name":%q,"deliver_subject":"dlv.%s"%s}`, name, name, more)
}

func ccCases() []ccGoldenCase {
	var cs []ccGoldenCase
	add := func(name, stream string, req ccReq, pre ...ccReq) {
		cs = append(cs, ccGoldenCase{Name: name, Stream: stream, Req: req, Pre: pre})
	}
	addLim := func(name, stream string, req ccReq) {
		cs = append(cs, ccGoldenCase{Name: name, Server: "limits", Stream: stream, Req: req})
	}
	ccSubjectCases(add)
	ccDefaultsCases(add)
	ccPushPullCases(add)
	ccFilterPolicyCases(add)
	ccPriorityCases(add)
	ccRetentionCases(add)
	ccUpdateCases(add)
	addLim("limits_defaults_pull", "L", named("L", "d", pullD("d", ""), ""))
	addLim("limits_ack_pending_excess", "L", named("L", "d", pullD("d", `"max_ack_pending":500`), ""))
	addLim("limits_batch_excess", "L", named("L", "d", pullD("d", `"max_batch":200`), ""))
	addLim("limits_batch_pedantic", "L", named("L", "d", pullD("d", ""), `"pedantic":true`))
	addLim("limits_push_ack_none", "L", named("L", "d", pushD("d", ""), ""))
	addLim("limits_stream_limit_lower", "CL", named("CL", "d", pullD("d", ""), ""))
	return cs
}

type ccAdd func(name, stream string, req ccReq, pre ...ccReq)

func ccSubjectCases(add ccAdd) {
	add("pull_durable_defaults", "L", named("L", "d1", pullD("d1", ""), ""))
	add("pull_named_ephemeral", "L", named("L", "e1", `{"name":"e1","ack_policy":"explicit"}`, ""))
	add("named_subject_only", "L", named("L", "e2", `{"ack_policy":"none"}`, ""))
	add("legacy_ephemeral_generated", "L", legacy("L", `{"ack_policy":"none"}`, ""))
	add("legacy_ephemeral_named", "L", legacy("L", `{"name":"e3","ack_policy":"none"}`, ""))
	add("legacy_durable", "L", durable("L", "d2", pullD("d2", "")))
	add("subject_filter", "L", named("L", "d3.L.a", pullD("d3", `"filter_subject":"L.a"`), ""))
	add("subject_filter_wild", "L", named("L", "d3.L.*.x", pullD("d3", `"filter_subject":"L.*.x"`), ""))
	add("subject_filter_mismatch", "L", named("L", "d3.L.a", pullD("d3", `"filter_subject":"L.b"`), ""))
	add("subject_filter_missing", "L", named("L", "d3.L.a", pullD("d3", ""), ""))
	add("subject_filter_with_filters", "L", named("L", "d3.L.a", pullD("d3", `"filter_subjects":["L.a"]`), ""))
	add("durable_subject_mismatch", "L", named("L", "x", pullD("d4", ""), ""))
	add("legacy_durable_unset", "L", durable("L", "d5", `{"ack_policy":"explicit"}`))
	add("legacy_durable_mismatch", "L", durable("L", "d5", pullD("d6", "")))
	add("legacy_ephemeral_durable", "L", legacy("L", pullD("d7", ""), ""))
	add("stream_mismatch", "L", ccReq{"CONSUMER.CREATE.L.x", ccBody("OTHER", `{}`, "")})
	add("empty_body", "L", ccReq{"CONSUMER.CREATE.L.x", ""})
	add("stream_not_found", "L", ccReq{"CONSUMER.CREATE.NOPE.x", ccBody("NOPE", `{}`, "")})
	add("name_path_separator", "L", legacy("L", `{"name":"a\\b"}`, ""))
	add("name_with_dot", "L", legacy("L", `{"name":"a.b"}`, ""))
	add("durable_with_star", "L", named("L", "a*", pullD("a*", ""), ""))
	add("durable_too_long", "L", named("L", strings.Repeat("n", 256), pullD(strings.Repeat("n", 256), ""), ""))
	add("json_syntax", "L", ccReq{"CONSUMER.CREATE.L.x", `{"stream_name":"L",`})
	add("json_trailing", "L", ccReq{"CONSUMER.CREATE.L.x", ccBody("L", `{}`, "") + "x"})
	add("json_two_values", "L", ccReq{"CONSUMER.CREATE.L.x", `{"stream_name":"L"} {"config":{"ack_policy":"none"}}`})
	add("json_unknown_field", "L", named("L", "x", `{"bogus":1}`, ""))
	add("json_unknown_top", "L", named("L", "x", `{}`, `"bogus":true`))
	add("json_bad_deliver_policy", "L", named("L", "x", `{"deliver_policy":"nope"}`, ""))
	add("json_bad_ack_policy", "L", named("L", "x", `{"ack_policy":"Explicit"}`, ""))
	add("json_bad_replay_policy", "L", named("L", "x", `{"replay_policy":1}`, ""))
	add("json_bad_priority_policy", "L", named("L", "x", `{"priority_policy":"first"}`, ""))
	add("json_bad_action", "L", named("L", "x", `{}`, `"action":"upsert"`))
	add("json_wrong_type", "L", named("L", "x", `{"max_deliver":"5"}`, ""))
	add("json_undefined_deliver", "L", named("L", "x", `{"deliver_policy":"undefined"}`, ""))
	add("replicas_3", "L", named("L", "x", `{"num_replicas":3}`, ""))
	add("replicas_negative", "L", named("L", "x", `{"num_replicas":-1}`, ""))
	add("replicas_1", "L", named("L", "d", pullD("d", `"num_replicas":1`), ""))
	add("mem_storage", "L", named("L", "d", pullD("d", `"mem_storage":true`), ""))
}

func ccDefaultsCases(add ccAdd) {
	add("ack_none_pull", "L", named("L", "d", `{"durable_name":"d","ack_policy":"none"}`, ""))
	add("ack_all_pull", "L", named("L", "d", `{"durable_name":"d","ack_policy":"all"}`, ""))
	add("ack_none_ack_wait", "L", named("L", "d", `{"durable_name":"d","ack_policy":"none","ack_wait":5000000000}`, ""))
	add("negatives_clamped", "L", named("L", "d", pullD("d", `"max_deliver":-5,"max_waiting":-1,"max_ack_pending":-5,"max_batch":-1,"max_expires":-1,"max_bytes":-1,"inactive_threshold":-1,"priority_timeout":-1`), ""))
	add("max_ack_pending_unlimited", "L", named("L", "d", pullD("d", `"max_ack_pending":-1`), ""))
	add("pedantic_max_deliver", "L", named("L", "d", pullD("d", `"max_deliver":-5`), `"pedantic":true`))
	add("pedantic_max_waiting", "L", named("L", "d", pullD("d", `"max_waiting":-1`), `"pedantic":true`))
	add("pedantic_ok", "L", named("L", "d", pullD("d", ""), `"pedantic":true`))
	add("pedantic_backoff", "L", named("L", "d", pullD("d", `"backoff":[1000000000,2000000000],"max_deliver":5`), `"pedantic":true`))
	add("pedantic_heartbeat", "L", named("L", "d", pushD("d", `"idle_heartbeat":-1`), `"pedantic":true`))
	add("backoff", "L", named("L", "d", pullD("d", `"backoff":[1000000000,2000000000],"max_deliver":5`), ""))
	add("backoff_too_long", "L", named("L", "d", pullD("d", `"backoff":[1000000000,2000000000],"max_deliver":1`), ""))
	add("backoff_negative", "L", named("L", "d", pullD("d", `"backoff":[-1,2000000000]`), ""))
	add("backoff_empty", "L", named("L", "d", pullD("d", `"backoff":[]`), ""))
	add("ack_wait_negative", "L", named("L", "d", pullD("d", `"ack_wait":-1`), ""))
	add("description_ok", "L", named("L", "d", pullD("d", `"description":"hello"`), ""))
	add("description_too_long", "L", named("L", "d", pullD("d", `"description":"`+strings.Repeat("x", 4097)+`"`), ""))
	add("sample_freq_ok", "L", named("L", "d", pullD("d", `"sample_freq":"50%"`), ""))
	add("sample_freq_bad", "L", named("L", "d", pullD("d", `"sample_freq":"abc"`), ""))
	add("sample_freq_negative", "L", named("L", "d", pullD("d", `"sample_freq":"-1"`), ""))
	add("metadata", "L", named("L", "d", pullD("d", `"metadata":{"k":"v","_nats.ver":"9.9.9","_nats.req.level":"7"}`), ""))
	add("metadata_too_big", "L", named("L", "d", pullD("d", `"metadata":{"k":"`+strings.Repeat("v", 128*1024)+`"}`), ""))
	add("pause_until", "L", named("L", "d", pullD("d", `"pause_until":"2099-01-02T03:04:05+02:00"`), ""))
	add("pause_until_past", "L", named("L", "d", pullD("d", `"pause_until":"2001-01-02T03:04:05Z"`), ""))
	add("ephemeral_threshold", "L", named("L", "e", `{"ack_policy":"explicit","inactive_threshold":60000000000}`, ""))
	add("durable_threshold", "L", named("L", "d", pullD("d", `"inactive_threshold":60000000000`), ""))
	add("everything_pull", "L", named("L", "d", pullD("d", `"description":"all","deliver_policy":"by_start_sequence","opt_start_seq":7,"ack_wait":10000000000,"max_deliver":9,"filter_subjects":["L.a","L.b.>"],"replay_policy":"original","sample_freq":"10","max_waiting":20,"max_ack_pending":30,"headers_only":true,"max_batch":40,"max_expires":50000000000,"max_bytes":60,"inactive_threshold":70000000000,"num_replicas":1,"mem_storage":true,"metadata":{"a":"b"}`), ""))
}

func ccPushPullCases(add ccAdd) {
	add("push_durable", "L", named("L", "d", pushD("d", ""), ""))
	add("push_explicit", "L", named("L", "d", pushD("d", `"ack_policy":"explicit"`), ""))
	add("push_ephemeral", "L", legacy("L", `{"deliver_subject":"dlv.e"}`, ""))
	add("push_group", "L", named("L", "d", pushD("d", `"deliver_group":"q","ack_policy":"explicit"`), ""))
	add("push_hb_fc", "L", named("L", "d", pushD("d", `"idle_heartbeat":1000000000,"flow_control":true,"rate_limit_bps":1024,"headers_only":true`), ""))
	add("push_wildcard", "L", named("L", "d", `{"durable_name":"d","deliver_subject":"dlv.*"}`, ""))
	add("push_invalid_subject", "L", named("L", "d", `{"durable_name":"d","deliver_subject":"dlv..x"}`, ""))
	add("push_cycle", "L", named("L", "d", `{"durable_name":"d","deliver_subject":"L.x"}`, ""))
	add("push_max_waiting", "L", named("L", "d", pushD("d", `"max_waiting":5`), ""))
	add("push_ack_none_pending", "L", named("L", "d", pushD("d", `"max_ack_pending":10`), ""))
	add("push_small_hb", "L", named("L", "d", pushD("d", `"idle_heartbeat":50000000`), ""))
	add("push_fc_no_hb", "L", named("L", "d", pushD("d", `"flow_control":true`), ""))
	add("push_replay_original", "L", named("L", "d", pushD("d", `"replay_policy":"original","ack_policy":"explicit"`), ""))
	add("push_ack_all", "L", named("L", "d", pushD("d", `"ack_policy":"all","ack_wait":1000000000,"max_deliver":3,"max_ack_pending":7`), ""))
	add("push_rate_limit", "L", named("L", "d", pushD("d", `"rate_limit_bps":8000,"ack_policy":"none"`), ""))
	add("push_lps_filtered", "L", named("L", "d", pushD("d", `"deliver_policy":"last_per_subject","filter_subjects":["L.a","L.b"]`), ""))
	add("push_headers_only_group", "L", named("L", "d", pushD("d", `"headers_only":true,"deliver_group":"g","ack_policy":"explicit","idle_heartbeat":2000000000`), ""))
	add("push_ordered_like", "L", legacy("L", `{"name":"ord1","deliver_subject":"dlv.o","deliver_policy":"last_per_subject","filter_subject":"L.>","ack_policy":"none","max_deliver":1,"ack_wait":79200000000000,"flow_control":true,"idle_heartbeat":5000000000,"num_replicas":1,"mem_storage":true,"headers_only":true}`, ""))
	add("pull_rate_limit", "L", named("L", "d", pullD("d", `"rate_limit_bps":1000`), ""))
	add("pull_heartbeat", "L", named("L", "d", pullD("d", `"idle_heartbeat":1000000000`), ""))
	add("pull_flow_control", "L", named("L", "d", pullD("d", `"flow_control":true`), ""))
	add("pull_max_expires_small", "L", named("L", "d", pullD("d", `"max_expires":500000`), ""))
	add("pull_deliver_group", "L", named("L", "d", pullD("d", `"deliver_group":"q"`), ""))
	add("direct_pull", "L", named("L", "x", `{"direct":true}`, ""))
	add("direct_durable", "L", named("L", "d", pushD("d", `"direct":true`), ""))
	add("ack_fc_push", "L", named("L", "d", pushD("d", `"ack_policy":"flow_control"`), ""))
	add("ack_fc_pull", "L", named("L", "d", `{"durable_name":"d","ack_policy":"flow_control"}`, ""))
	add("ack_fc_pedantic", "L", named("L", "d", pushD("d", `"ack_policy":"flow_control"`), `"pedantic":true`))
}

func ccFilterPolicyCases(add ccAdd) {
	add("filter_both", "L", named("L", "d", pullD("d", `"filter_subject":"L.a","filter_subjects":["L.b"]`), ""))
	add("filter_invalid", "L", named("L", "d", pullD("d", `"filter_subject":"L..a"`), ""))
	add("filters_invalid", "L", named("L", "d", pullD("d", `"filter_subjects":["L.a","L.>.b"]`), ""))
	add("filters_empty_entry", "L", named("L", "d", pullD("d", `"filter_subjects":["L.a",""]`), ""))
	add("filters_overlap", "L", named("L", "d", pullD("d", `"filter_subjects":["L.a","L.>"]`), ""))
	add("filters_same", "L", named("L", "d", pullD("d", `"filter_subjects":["L.a","L.a"]`), ""))
	add("filters_partial_overlap", "L", named("L", "d", pullD("d", `"filter_subjects":["L.*.x","L.y.*"]`), ""))
	add("filters_ok", "L", named("L", "d", pullD("d", `"filter_subjects":["L.a","L.b"]`), ""))
	add("filter_outside_stream", "L", named("L", "d", pullD("d", `"filter_subject":"X.a"`), ""))
	add("deliver_last", "L", named("L", "d", pullD("d", `"deliver_policy":"last"`), ""))
	add("deliver_new", "L", named("L", "d", pullD("d", `"deliver_policy":"new"`), ""))
	add("deliver_lps_no_filter", "L", named("L", "d", pullD("d", `"deliver_policy":"last_per_subject"`), ""))
	add("deliver_lps", "L", named("L", "d", pullD("d", `"deliver_policy":"last_per_subject","filter_subject":"L.>"`), ""))
	add("deliver_seq", "L", named("L", "d", pullD("d", `"deliver_policy":"by_start_sequence","opt_start_seq":5`), ""))
	add("deliver_seq_missing", "L", named("L", "d", pullD("d", `"deliver_policy":"by_start_sequence"`), ""))
	add("deliver_seq_with_time", "L", named("L", "d", pullD("d", `"deliver_policy":"by_start_sequence","opt_start_seq":5,"opt_start_time":"2020-01-01T00:00:00Z"`), ""))
	add("deliver_time", "L", named("L", "d", pullD("d", `"deliver_policy":"by_start_time","opt_start_time":"2020-01-01T01:00:00+01:00"`), ""))
	add("deliver_time_missing", "L", named("L", "d", pullD("d", `"deliver_policy":"by_start_time"`), ""))
	add("deliver_time_with_seq", "L", named("L", "d", pullD("d", `"deliver_policy":"by_start_time","opt_start_seq":5,"opt_start_time":"2020-01-01T00:00:00Z"`), ""))
	add("deliver_all_with_seq", "L", named("L", "d", pullD("d", `"opt_start_seq":5`), ""))
	add("deliver_new_with_time", "L", named("L", "d", pullD("d", `"deliver_policy":"new","opt_start_time":"2020-01-01T00:00:00Z"`), ""))
	add("deliver_last_with_seq", "L", named("L", "d", pullD("d", `"deliver_policy":"last","opt_start_seq":1`), ""))
	add("deliver_lps_with_time", "L", named("L", "d", pullD("d", `"deliver_policy":"last_per_subject","filter_subject":"L.>","opt_start_time":"2020-01-01T00:00:00Z"`), ""))
}

func ccPriorityCases(add ccAdd) {
	add("prio_overflow", "L", named("L", "d", pullD("d", `"priority_policy":"overflow","priority_groups":["A"]`), ""))
	add("prio_pinned", "L", named("L", "d", pullD("d", `"priority_policy":"pinned_client","priority_groups":["A","b-1"]`), ""))
	add("prio_pinned_ttl", "L", named("L", "d", pullD("d", `"priority_policy":"pinned_client","priority_groups":["A"],"priority_timeout":5000000000`), ""))
	add("prio_prioritized", "L", named("L", "d", pullD("d", `"priority_policy":"prioritized","priority_groups":["A"]`), ""))
	add("prio_none_explicit", "L", named("L", "d", pullD("d", `"priority_policy":"none"`), ""))
	add("prio_no_group", "L", named("L", "d", pullD("d", `"priority_policy":"overflow"`), ""))
	add("prio_bad_group", "L", named("L", "d", pullD("d", `"priority_policy":"overflow","priority_groups":["a.b"]`), ""))
	add("prio_long_group", "L", named("L", "d", pullD("d", `"priority_policy":"overflow","priority_groups":["abcdefghijklmnopq"]`), ""))
	add("prio_empty_group", "L", named("L", "d", pullD("d", `"priority_policy":"overflow","priority_groups":[""]`), ""))
	add("prio_push", "L", named("L", "d", pushD("d", `"priority_policy":"overflow","priority_groups":["A"]`), ""))
	add("prio_groups_no_policy", "L", named("L", "d", pullD("d", `"priority_groups":["A"]`), ""))
	add("prio_ttl_no_policy", "L", named("L", "d", pullD("d", `"priority_timeout":1000000000`), ""))
}

func ccRetentionCases(add ccAdd) {
	wq := func(name, filter string) ccReq {
		f := ""
		if filter != "" {
			f = `"filter_subject":"` + filter + `"`
		}
		return named("W", name, pullD(name, f), "")
	}
	add("wq_explicit", "W", wq("a", ""))
	add("wq_ack_none_pull", "W", named("W", "a", `{"durable_name":"a","ack_policy":"none"}`, ""))
	add("wq_ack_all_push", "W", named("W", "a", pushD("a", `"ack_policy":"all"`), ""))
	add("wq_ack_none_push", "W", named("W", "a", pushD("a", ""), ""))
	add("wq_deliver_last", "W", named("W", "a", pullD("a", `"deliver_policy":"last"`), ""))
	add("wq_second_unfiltered", "W", wq("b", ""), wq("a", ""))
	add("wq_second_unfiltered_after_filtered", "W", wq("b", ""), wq("a", "W.a"))
	add("wq_filtered_after_unfiltered", "W", wq("b", "W.b"), wq("a", ""))
	add("wq_overlap", "W", wq("b", "W.>"), wq("a", "W.a"))
	add("wq_distinct", "W", wq("b", "W.b"), wq("a", "W.a"))
	add("wq_update_self", "W", named("W", "a", pullD("a", `"filter_subject":"W.a","description":"x"`), ""), wq("a", "W.a"))
	add("wq_update_into_overlap", "W", wq("b", "W.>"), wq("a", "W.a"), wq("b", "W.b"))
	add("wq_replicas_1", "W", named("W", "a", pullD("a", `"num_replicas":1`), ""))
	add("interest_pull", "I", named("I", "a", pullD("a", ""), ""))
	add("interest_ack_none", "I", named("I", "a", `{"durable_name":"a","ack_policy":"none"}`, ""))
	add("interest_ephemeral", "I", legacy("I", `{"ack_policy":"explicit"}`, ""))
	add("cl_defaults", "CL", named("CL", "d", pullD("d", ""), ""))
	add("cl_ephemeral", "CL", named("CL", "e", `{"ack_policy":"none"}`, ""))
	add("cl_pending_excess", "CL", named("CL", "d", pullD("d", `"max_ack_pending":51`), ""))
	add("cl_threshold_excess", "CL", named("CL", "d", pullD("d", `"inactive_threshold":20000000000`), ""))
	add("cl_pedantic", "CL", named("CL", "d", pullD("d", ""), `"pedantic":true`))
	add("cl_ack_none", "CL", named("CL", "d", `{"durable_name":"d","ack_policy":"none"}`, ""))
	add("max_consumers", "MC", named("MC", "b", pullD("b", ""), ""), named("MC", "a", pullD("a", ""), ""))
	add("max_consumers_update", "MC", named("MC", "a", pullD("a", `"description":"x"`), ""), named("MC", "a", pullD("a", ""), ""))
}

func ccUpdateCases(add ccAdd) {
	base := named("L", "d", pullD("d", ""), "")
	upd := func(name, more, extra string) {
		add("update_"+name, "L", named("L", "d", pullD("d", more), extra), base)
	}
	upd("same_default_action", "", "")
	upd("same_create", "", `"action":"create"`)
	upd("same_update", "", `"action":"update"`)
	upd("description_create", `"description":"x"`, `"action":"create"`)
	upd("description", `"description":"x"`, "")
	upd("description_update", `"description":"x"`, `"action":"update"`)
	upd("deliver_policy", `"deliver_policy":"new"`, "")
	add("update_ack_none", "L", named("L", "d", `{"durable_name":"d","ack_policy":"none"}`, ""), base)
	upd("ack_all", `"ack_policy":"all"`, "")
	upd("max_waiting", `"max_waiting":10`, "")
	upd("to_push", `"deliver_subject":"dlv.d"`, "")
	upd("replay", `"replay_policy":"original"`, "")
	upd("mem_storage", `"mem_storage":true`, "")
	upd("opt_start_seq", `"deliver_policy":"by_start_sequence","opt_start_seq":3`, "")
	upd("mutable", `"ack_wait":5000000000,"max_deliver":5,"max_ack_pending":7,"backoff":[5000000000],"filter_subject":"L.z","sample_freq":"5%","headers_only":true,"max_batch":3,"max_expires":4000000000,"max_bytes":1024,"inactive_threshold":9000000000,"metadata":{"x":"y"}`, "")
	upd("backoff_too_long", `"backoff":[1000000000,2000000000],"max_deliver":1`, "")
	upd("pause_ignored", `"pause_until":"2099-01-02T03:04:05Z"`, "")
	upd("priority", `"priority_policy":"overflow","priority_groups":["A"]`, "")
	upd("replicas", `"num_replicas":1`, "")
	add("update_missing", "L", named("L", "d", pullD("d", ""), `"action":"update"`))
	add("update_missing_create_action", "L", named("L", "d", pullD("d", ""), `"action":"create"`))
	pushBase := named("L", "p", pushD("p", `"idle_heartbeat":1000000000`), "")
	add("update_push_subject", "L", named("L", "p", `{"durable_name":"p","deliver_subject":"dlv.new","idle_heartbeat":1000000000}`, ""), pushBase)
	add("update_push_heartbeat", "L", named("L", "p", pushD("p", `"idle_heartbeat":2000000000`), ""), pushBase)
	add("update_push_to_pull", "L", named("L", "p", `{"durable_name":"p","idle_heartbeat":1000000000}`, ""), pushBase)
	add("update_push_fc", "L", named("L", "p", pushD("p", `"idle_heartbeat":1000000000,"flow_control":true`), ""), pushBase)
	eph := named("L", "e", `{"ack_policy":"explicit"}`, "")
	add("update_ephemeral_create_same", "L", named("L", "e", `{"ack_policy":"explicit"}`, `"action":"create"`), eph)
	add("update_ephemeral_same", "L", named("L", "e", `{"ack_policy":"explicit"}`, ""), eph)
	add("update_ephemeral_threshold", "L", named("L", "e", `{"ack_policy":"explicit","inactive_threshold":1000000000}`, ""), eph)
	paused := named("L", "d", pullD("d", `"pause_until":"2099-01-02T03:04:05+02:00"`), "")
	add("update_paused_keeps", "L", named("L", "d", pullD("d", `"description":"x"`), ""), paused)
	add("update_paused_create_same", "L", named("L", "d", pullD("d", `"pause_until":"2099-01-02T03:04:05+02:00"`), `"action":"create"`), paused)
	add("update_durable_legacy", "L", durable("L", "d", pullD("d", `"description":"y"`)), base)
}
