package protocol

import (
	"reflect"

	"google.golang.org/grpc/balancer"
)

// takesRequestHashHeader reports whether this grpc-go's ring_hash keeps a
// requestHashHeader from its config (gRFC A76): its parsed config has a
// string field RequestHashHeader holding the value given. False where
// ring_hash is not registered, where the field does not exist (before
// A76), and where A76's switch, GRPC_EXPERIMENTAL_RING_HASH_SET_REQUEST_HASH_KEY,
// has grpc-go drop it: the probe asks grpc-go itself, after it read its
// environment.
func takesRequestHashHeader() bool {
	p, ok := balancer.Get("ring_hash_experimental").(balancer.ConfigParser)
	if !ok {
		return false
	}
	cfg, err := p.ParseConfig([]byte(`{"requestHashHeader":"x-conform-probe"}`))
	if err != nil || cfg == nil {
		return false
	}
	v := reflect.ValueOf(cfg)
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return false
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return false
	}
	f := v.FieldByName("RequestHashHeader")
	return f.IsValid() && f.Kind() == reflect.String && f.String() == "x-conform-probe"
}
