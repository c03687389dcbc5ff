package netlab

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
)

// What every backend serves, callable from any language without generated
// code: a unary method whose request and response are raw bytes (the response
// is the backend's name), and the standard health service. Every response
// carries the header BackendHeader naming the backend. A request carrying
// the metadata RPCHeader is recorded under that name (Event.RPC): the
// harness names each RPC it sends so, and a backend's record says which
// RPC it answered even when several are in flight.
const (
	NameMethod    = "/conform.lab.Backend/Name"
	BackendHeader = "x-conform-backend"
	RPCHeader     = "x-conform-rpc"
)

// RawCodec passes []byte through untouched and encodes protobuf messages as
// protobuf. Backends use it so that the Name method takes raw bytes while the
// health service stays protobuf; clients use it to call NameMethod.
type RawCodec struct{}

// Name is "proto": raw bytes are valid content for the default codec's name,
// so clients in other languages need no special content-subtype.
func (RawCodec) Name() string { return "proto" }

// Marshal encodes []byte as itself and protobuf messages as protobuf.
func (RawCodec) Marshal(v any) ([]byte, error) {
	switch m := v.(type) {
	case []byte:
		return m, nil
	case *[]byte:
		return *m, nil
	case proto.Message:
		return proto.Marshal(m)
	}
	return nil, fmt.Errorf("netlab: RawCodec cannot marshal %T", v)
}

// Unmarshal decodes into *[]byte as a copy and into protobuf messages.
func (RawCodec) Unmarshal(data []byte, v any) error {
	switch m := v.(type) {
	case *[]byte:
		*m = append([]byte(nil), data...)
		return nil
	case proto.Message:
		return proto.Unmarshal(data, m)
	}
	return fmt.Errorf("netlab: RawCodec cannot unmarshal into %T", v)
}

// CallName calls NameMethod on conn and returns the name of the backend that
// answered, checked against the BackendHeader it sent.
func CallName(ctx context.Context, conn grpc.ClientConnInterface, opts ...grpc.CallOption) (string, error) {
	var out []byte
	var hdr metadata.MD
	opts = append(opts, grpc.ForceCodec(RawCodec{}), grpc.Header(&hdr))
	if err := conn.Invoke(ctx, NameMethod, []byte{}, &out, opts...); err != nil {
		return "", err
	}
	if h := hdr.Get(BackendHeader); len(h) != 1 || h[0] != string(out) {
		return string(out), fmt.Errorf("netlab: backend %q answered with header %s=%q", out, BackendHeader, h)
	}
	return string(out), nil
}
