package xdsres

import (
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/netlab/xdsserver"
)

// TraceEvent is the trace event of a management server's event: an
// xds-request from the control plane. Responses the server sent have none
// (ok is false): the harness records the xds step that caused them.
func TraceEvent(e xdsserver.Event) (ev trace.Event, ok bool) {
	if e.Response {
		return trace.Event{}, false
	}
	ev = trace.Event{
		T:       e.T,
		Source:  trace.SourceControlPlane,
		Kind:    trace.KindXDSRequest,
		Node:    e.Node,
		TypeURL: e.TypeURL,
		Version: e.Version,
		Nonce:   e.Nonce,
		Names:   append([]string(nil), e.Names...),
	}
	switch e.Kind {
	case xdsserver.ACK:
		ev.XDS = trace.XDSACK
	case xdsserver.NACK:
		ev.XDS = trace.XDSNACK
		ev.Err = e.ErrorDetail
		ev.Code = codeName(e.ErrorCode)
		if e.RespondedVersion != "" {
			ev.Detail = "rejected " + e.RespondedVersion
		}
	default:
		ev.XDS = trace.XDSSubscribe
	}
	return ev, true
}

// codeName is a google.rpc.Code's name as traces spell status codes
// (scenario.Codes lists them in numeric order); "" for OK, which a NACK
// may carry when the client sets no code.
func codeName(c int32) string {
	codes := scenario.Codes()
	if c <= 0 || int(c) >= len(codes) {
		return ""
	}
	return codes[c]
}
