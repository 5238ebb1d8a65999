package server

import (
	"fmt"
	"strings"
)

// ApiError is a JetStream API error as clients see it.
type ApiError struct {
	Code        int    `json:"code"`
	ErrCode     uint16 `json:"err_code,omitempty"`
	Description string `json:"description,omitempty"`
}

func (e *ApiError) Error() string { return fmt.Sprintf("%s (%d)", e.Description, e.ErrCode) }

func apiErr(code int, errCode uint16, desc string) *ApiError {
	return &ApiError{Code: code, ErrCode: errCode, Description: desc}
}

// The errors Tern returns, with nats-server's codes and texts.
func errBadRequest() *ApiError { return apiErr(400, 10003, "bad request") }
func errClusterNotAvail() *ApiError {
	return apiErr(503, 10008, "JetStream system temporarily unavailable")
}
func errInvalidJSON(err error) *ApiError {
	return apiErr(400, 10025, "invalid JSON: "+err.Error())
}
func errNoMessageFound() *ApiError                { return apiErr(404, 10037, "no message found") }
func errStreamInvalidConfig(msg string) *ApiError { return apiErr(500, 10052, msg) }
func errMsgTooBig() *ApiError                     { return apiErr(400, 10054, "message size exceeds maximum allowed") }
func errStreamNameMismatch() *ApiError {
	return apiErr(400, 10056, "stream name in subject does not match request")
}
func errMsgDeleteFailed(msg string) *ApiError { return apiErr(500, 10057, msg) }
func errStreamNameExist() *ApiError {
	return apiErr(400, 10058, "stream name already in use with a different configuration")
}
func errStreamNotFound() *ApiError { return apiErr(404, 10059, "stream not found") }
func errStreamOffline() *ApiError  { return apiErr(500, 10118, "stream is offline") }
func errExpectedStream() *ApiError { return apiErr(400, 10060, "expected stream does not match") }
func errSubjectsOverlap() *ApiError {
	return apiErr(400, 10065, "subjects overlap with an existing stream")
}
func errWrongLastMsgID(id string) *ApiError { return apiErr(400, 10070, "wrong last msg ID: "+id) }
func errWrongLastSeq(seq uint64) *ApiError {
	return apiErr(400, 10071, fmt.Sprintf("wrong last sequence: %d", seq))
}
func errStoreFailed(err error) *ApiError { return apiErr(503, 10077, err.Error()) }
func errHeaderTooBig() *ApiError {
	return apiErr(400, 10097, "header size exceeds maximum allowed of 64k")
}
func errSealed() *ApiError                 { return apiErr(400, 10109, "invalid operation on sealed stream") }
func errPurgeFailed(msg string) *ApiError  { return apiErr(500, 10110, msg) }
func errRollupFailed(msg string) *ApiError { return apiErr(500, 10111, msg) }
func errSequenceNotFound(seq uint64) *ApiError {
	return apiErr(400, 10043, fmt.Sprintf("sequence %d not found", seq))
}
func errRequiredAPILevel() *ApiError {
	return apiErr(412, 10185, "JetStream minimum api level required")
}
func errMissingExpectedSeq() *ApiError {
	return apiErr(400, 10193, "missing sequence for expected last sequence per subject")
}
func errStreamCreate(err error) *ApiError  { return apiErr(500, 10049, err.Error()) }
func errStreamDelete(err error) *ApiError  { return apiErr(500, 10050, err.Error()) }
func errStreamGeneral(err error) *ApiError { return apiErr(500, 10051, err.Error()) }
func errReplicasNotSupported() *ApiError {
	return apiErr(500, 10074, "replicas > 1 not supported in non-clustered mode")
}
func errReplicasNotUpdatable() *ApiError {
	return apiErr(400, 10061, "Replicas configuration can not be updated")
}
func errMaxStreams() *ApiError { return apiErr(400, 10027, "maximum number of streams reached") }
func errInsufficientResources() *ApiError {
	return apiErr(503, 10023, "insufficient resources")
}
func errNotImplemented(what string) *ApiError {
	return apiErr(400, 10003, "bad request: "+strings.TrimSpace(what)+" is not supported by this server yet")
}
