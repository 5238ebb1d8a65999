package server

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/nats-io/nuid"
)

// The three forms of a consumer create subject.
type consumerCreateKind uint8

const (
	// CONSUMER.CREATE.<stream>: the name (if any) is in the body.
	ccLegacyEphemeral consumerCreateKind = iota
	// CONSUMER.DURABLE.CREATE.<stream>.<durable>
	ccLegacyDurable
	// CONSUMER.CREATE.<stream>.<name>[.<filter subject>]
	ccNamed
)

// consumerCreateSubject is what a create subject says.
type consumerCreateSubject struct {
	Kind     consumerCreateKind
	Stream   string
	Consumer string // from the subject; "" for the legacy ephemeral form
	Filter   string // the named form's optional filter subject
}

// parseConsumerCreateSubject reads a create subject, given without the
// "$JS.API." prefix. ok is false for subjects nats-server does not answer.
func parseConsumerCreateSubject(subject string) (cs consumerCreateSubject, ok bool) {
	tokens := strings.Split(subject, ".")
	// As in the full subject "$JS.API.CONSUMER.…", which has two more tokens.
	if len(tokens)+2 < 5 || tokens[0] != "CONSUMER" {
		return cs, false
	}
	switch {
	case len(tokens) == 3:
		cs.Kind, cs.Stream = ccLegacyEphemeral, tokens[2]
	case tokens[1] == "DURABLE":
		if len(tokens) != 5 {
			return cs, false
		}
		cs.Kind, cs.Stream, cs.Consumer = ccLegacyDurable, tokens[3], tokens[4]
	default:
		cs.Kind, cs.Stream, cs.Consumer = ccNamed, tokens[2], tokens[3]
		if len(tokens) > 4 {
			cs.Filter = strings.Join(tokens[4:], ".")
		}
	}
	return cs, true
}

// reconcile checks the request body against the subject, in nats-server's
// order, and sets the consumer name the subject gives.
func (cs consumerCreateSubject) reconcile(req *CreateConsumerRequest) *ApiError {
	if cs.Stream != req.Stream {
		return errStreamNameMismatch()
	}
	name := cs.Consumer
	if cs.Kind == ccLegacyEphemeral {
		name = req.Config.Name
	}
	if strings.ContainsAny(name, `\/`) {
		return errConsumerNamePathSeparators()
	}
	cfg := &req.Config
	switch cs.Kind {
	case ccLegacyDurable:
		if cfg.Durable == "" {
			return errConsumerDurableNameNotSet()
		}
		if cs.Consumer != cfg.Durable {
			return errConsumerDurableNameMismatch()
		}
		cfg.Name = cs.Consumer
	case ccNamed:
		if cfg.Durable != "" && cs.Consumer != cfg.Durable {
			return errConsumerDurableNameMismatch()
		}
		cfg.Name = cs.Consumer
	case ccLegacyEphemeral:
		if cfg.Durable != "" {
			return errConsumerEphemeralWithDurable()
		}
	}
	if cs.Filter != "" && len(cfg.FilterSubjects) != 0 {
		return errConsumerMultipleFiltersNotAllowed()
	}
	if cs.Filter != "" && cfg.FilterSubject != cs.Filter {
		return errConsumerFilterSubjectMismatch()
	}
	return nil
}

// decodeJSRequest decodes an API request body as nats-server does: every
// JSON value in the body in turn into v, unknown fields refused when
// strict (the default) and ignored otherwise. Memory is bounded by the
// body, which the client protocol bounds by max_payload.
func decodeJSRequest(body []byte, v any, strict bool) *ApiError {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	for {
		err := dec.Decode(v)
		if err == io.EOF {
			return nil
		}
		if err == nil {
			continue
		}
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			err = fmt.Errorf("%w at offset %d", err, syntax.Offset)
		}
		if strict {
			return errInvalidJSON(err)
		}
		if err := json.Unmarshal(body, v); err != nil {
			return errInvalidJSON(err)
		}
		return nil
	}
}

// decodeConsumerCreate reads a CONSUMER.CREATE or DURABLE.CREATE request:
// the body, then the subject's checks. ok is false when nats-server would
// not answer at all.
func decodeConsumerCreate(subject string, body []byte, strict bool) (req *CreateConsumerRequest, ok bool, err *ApiError) {
	req = &CreateConsumerRequest{}
	if err := decodeJSRequest(body, req, strict); err != nil {
		return nil, true, err
	}
	cs, ok := parseConsumerCreateSubject(subject)
	if !ok {
		return nil, false, nil
	}
	if err := cs.reconcile(req); err != nil {
		return nil, true, err
	}
	return req, true, nil
}

const hashDigits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// hashName is nats-server's short hash: the first n bytes of the name's
// SHA-256, each mapped onto the 62 base-62 digits.
func hashName(name string, n int) string {
	sum := sha256.Sum256([]byte(name))
	out := make([]byte, n)
	for i := range out {
		out[i] = hashDigits[int(sum[i]%62)]
	}
	return string(out)
}

// createConsumerName names an ephemeral consumer: 8 base-62 characters.
func createConsumerName() string { return hashName(nuid.Next(), 8) }
